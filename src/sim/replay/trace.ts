// Mooncake-format workload traces (traces/README.md): one JSON object per line with
// timestamp (ms), input_length, output_length and hash_ids (one id per 512-token block), and
// optionally kvroute's own `priority` (the request's class in the router queue).
import { readFile } from 'node:fs/promises';

export interface TraceRequest {
  /** Arrival time in ms from the start of the trace. */
  timestamp: number;
  inputLength: number;
  outputLength: number;
  hashIds: number[];
  /** The request's priority class in the router queue (optional `priority` field; higher goes first). */
  priority?: number;
}

/** Tokens each hash id stands for in the Mooncake traces. */
export const TRACE_BLOCK_TOKENS = 512;

export class TraceFormatError extends Error {
  constructor(
    message: string,
    readonly line: number,
  ) {
    super(`line ${line}: ${message}`);
    this.name = 'TraceFormatError';
  }
}

/** Parses a whole trace; every malformed line is reported with its number. */
export function parseTrace(text: string, blockTokens = TRACE_BLOCK_TOKENS): TraceRequest[] {
  const out: TraceRequest[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (line.length === 0) continue;
    out.push(parseTraceLine(line, i + 1, blockTokens));
  }
  if (out.length === 0) throw new TraceFormatError('the trace has no requests', 0);
  // Arrivals must be replayed in order; a trace written out of order is sorted (stable).
  out.sort((a, b) => a.timestamp - b.timestamp);
  return out;
}

export async function loadTrace(path: string, blockTokens = TRACE_BLOCK_TOKENS): Promise<TraceRequest[]> {
  return parseTrace(await readFile(path, 'utf8'), blockTokens);
}

function parseTraceLine(line: string, lineNo: number, blockTokens: number): TraceRequest {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch {
    throw new TraceFormatError('not valid JSON', lineNo);
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new TraceFormatError('expected a JSON object', lineNo);
  const r = raw as Record<string, unknown>;
  const timestamp = nonNegativeNumber(r.timestamp, 'timestamp', lineNo);
  const inputLength = positiveInteger(r.input_length, 'input_length', lineNo);
  const outputLength = positiveInteger(r.output_length, 'output_length', lineNo);
  if (!Array.isArray(r.hash_ids)) throw new TraceFormatError('hash_ids must be an array', lineNo);
  const hashIds = r.hash_ids.map((id, k) => {
    if (!Number.isSafeInteger(id) || (id as number) < 0) {
      throw new TraceFormatError(`hash_ids[${k}] must be a non-negative integer`, lineNo);
    }
    return id as number;
  });
  const expectedBlocks = Math.ceil(inputLength / blockTokens);
  if (hashIds.length !== expectedBlocks) {
    throw new TraceFormatError(
      `hash_ids has ${hashIds.length} ids but input_length ${inputLength} needs ceil(${inputLength}/${blockTokens}) = ${expectedBlocks}`,
      lineNo,
    );
  }
  const out: TraceRequest = { timestamp, inputLength, outputLength, hashIds };
  if (r.priority !== undefined) {
    if (!Number.isSafeInteger(r.priority) || Math.abs(r.priority as number) > 100)
      throw new TraceFormatError('priority must be an integer in [-100, 100]', lineNo);
    out.priority = r.priority as number;
  }
  return out;
}

function nonNegativeNumber(v: unknown, name: string, line: number): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new TraceFormatError(`${name} must be a non-negative number`, line);
  return v;
}

function positiveInteger(v: unknown, name: string, line: number): number {
  if (!Number.isSafeInteger(v) || (v as number) < 1) throw new TraceFormatError(`${name} must be a positive integer`, line);
  return v as number;
}
