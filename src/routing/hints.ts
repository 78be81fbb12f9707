// Routing hints a client or an upstream endpoint picker sends (PROTOCOLS.md section 4): the
// headers x-worker-instance-id, x-prefill-instance-id, x-dp-rank and x-prefill-dp-rank, the same
// hints in the body's `nvext` object (Dynamo's extension), when session affinity is on, the
// session id header, and the scheduling hints of scheduling-hints.ts (priority, priority jump,
// expected output length, session control). A malformed hint is the client's mistake:
// InvalidRoutingHintError (a RangeError, so frontends answer 400) says which and why.

import { isShortVisibleAscii } from '../util/validate.js';
import { InvalidRoutingHintError } from './errors.js';
import { parseSchedulingHints, SCHEDULING_HINT_HEADERS, type SchedulingHints } from './scheduling-hints.js';

export { InvalidRoutingHintError };
export type { SchedulingHints };

export interface RoutingHints extends SchedulingHints {
  /** Pin the decode (or aggregated) worker. */
  workerId?: number;
  /** Pin the prefill worker. */
  prefillWorkerId?: number;
  dpRank?: number;
  prefillDpRank?: number;
  /** Session affinity: requests of one session go where its earlier requests went. */
  sessionId?: string;
}

export interface HintOptions {
  /** The session id header (lower case); absent: session affinity is off. */
  sessionHeader?: string;
}

export type HeaderBag = Record<string, string | string[] | undefined> | { get(name: string): string | null };

const WORKER_MAX = Number.MAX_SAFE_INTEGER;
const RANK_MAX = 0xffff;

interface HintSpec {
  key: 'workerId' | 'prefillWorkerId' | 'dpRank' | 'prefillDpRank';
  header: string;
  /** nvext field names, first present wins (Dynamo's aliases). */
  nvext: readonly string[];
  max: number;
}

const SPECS: readonly HintSpec[] = [
  { key: 'workerId', header: 'x-worker-instance-id', nvext: ['backend_instance_id', 'decode_worker_id', 'worker_id'], max: WORKER_MAX },
  { key: 'prefillWorkerId', header: 'x-prefill-instance-id', nvext: ['prefill_worker_id'], max: WORKER_MAX },
  { key: 'dpRank', header: 'x-dp-rank', nvext: ['dp_rank'], max: RANK_MAX },
  { key: 'prefillDpRank', header: 'x-prefill-dp-rank', nvext: ['prefill_dp_rank'], max: RANK_MAX },
];

export const HINT_HEADERS: readonly string[] = [...SPECS.map((s) => s.header), ...SCHEDULING_HINT_HEADERS];

/**
 * Hints from request headers (names matched case-insensitively) and the body's `nvext`. A hint
 * given both ways must agree. Empty headers count as absent.
 */
export function parseRoutingHints(bag: HeaderBag | undefined, nvext?: unknown, opts: HintOptions = {}): RoutingHints {
  const headers = caseFolded(bag);
  const hints: RoutingHints = {};
  if (opts.sessionHeader !== undefined) {
    const id = headerText(headers, opts.sessionHeader);
    if (id !== undefined) hints.sessionId = checkSessionId(id, opts.sessionHeader);
  }
  const ext = nvextObject(nvext);
  for (const spec of SPECS) {
    const fromHeader = headerValue(headers, spec);
    const fromBody = ext ? nvextValue(ext, spec) : undefined;
    if (fromHeader !== undefined && fromBody !== undefined && fromHeader !== fromBody) {
      throw new InvalidRoutingHintError(`header ${spec.header} (${fromHeader}) disagrees with nvext.${nvextName(ext!, spec)} (${fromBody})`);
    }
    const v = fromHeader ?? fromBody;
    if (v !== undefined) hints[spec.key] = v;
  }
  parseSchedulingHints((name) => headerText(headers, name), ext, hints);
  return hints;
}

function nvextObject(nvext: unknown): Record<string, unknown> | undefined {
  if (nvext === undefined || nvext === null) return undefined;
  if (typeof nvext !== 'object' || Array.isArray(nvext)) {
    throw new InvalidRoutingHintError(`'nvext' must be an object, got ${Array.isArray(nvext) ? 'an array' : typeof nvext}`);
  }
  return nvext as Record<string, unknown>;
}

function headerValue(headers: HeaderBag | undefined, spec: HintSpec): number | undefined {
  const text = headerText(headers, spec.header);
  if (text === undefined) return undefined;
  if (!/^\d{1,16}$/.test(text) || Number(text) > spec.max) {
    throw new InvalidRoutingHintError(`header ${spec.header} must be an integer in [0, ${spec.max}], got '${text.slice(0, 64)}'`);
  }
  return Number(text);
}

/** A header's trimmed value (undefined when absent or empty); repeated, its copies must agree. */
function headerText(headers: HeaderBag | undefined, name: string): string | undefined {
  if (!headers) return undefined;
  let raw: string | string[] | null | undefined;
  if (typeof (headers as { get?: unknown }).get === 'function') raw = (headers as { get(n: string): string | null }).get(name);
  else raw = lookup(headers as Record<string, string | string[] | undefined>, name);
  if (Array.isArray(raw)) {
    const distinct = [...new Set(raw.map((r) => r.trim()))];
    if (distinct.length > 1) throw new InvalidRoutingHintError(`header ${name} was sent ${raw.length} times with different values`);
    raw = distinct[0];
  }
  if (raw === undefined || raw === null) return undefined;
  const text = raw.trim();
  return text === '' ? undefined : text;
}

/** A session id: 1 to 256 visible ASCII characters (it is a map key, and echoed in errors). */
export function checkSessionId(id: string, where = 'session id'): string {
  if (!isShortVisibleAscii(id)) throw new InvalidRoutingHintError(`${where} must be 1 to 256 visible ASCII characters`);
  return id;
}

/** After caseFolded: every name a hint looks up is a key as it is. */
function lookup(headers: Record<string, string | string[] | undefined>, name: string): string | string[] | undefined {
  return Object.hasOwn(headers, name) ? headers[name] : undefined;
}

/** A header name `toLowerCase()` might change: an ASCII capital, or anything outside ASCII. */
const MAY_FOLD = /[A-Z\u0080-\uffff]/;

/**
 * The headers with names matched case-insensitively by plain lookups. Frontends give lower-case
 * names, returned as they are (no scan of every name for each hint looked up); otherwise a copy
 * where a name's value is its exact-case entry's when that one is set, else that of the first
 * name (in key order) that lower-cases to it.
 */
function caseFolded(headers: HeaderBag | undefined): HeaderBag | undefined {
  if (!headers || typeof (headers as { get?: unknown }).get === 'function') return headers;
  const plain = headers as Record<string, string | string[] | undefined>;
  let folds = false;
  for (const key in plain) {
    if (Object.hasOwn(plain, key) && MAY_FOLD.test(key)) {
      folds = true;
      break;
    }
  }
  if (!folds) return headers;
  const folded: Record<string, string | string[] | undefined> = Object.create(null) as Record<string, string | string[] | undefined>;
  const keys = Object.keys(plain);
  for (const key of keys) {
    const lower = key.toLowerCase();
    if (!Object.hasOwn(folded, lower)) folded[lower] = plain[key];
  }
  for (const key of keys) if (plain[key] !== undefined) folded[key] = plain[key];
  return folded;
}

function nvextName(ext: Record<string, unknown>, spec: HintSpec): string {
  return spec.nvext.find((n) => ext[n] !== undefined && ext[n] !== null) ?? spec.nvext[0];
}

function nvextValue(ext: Record<string, unknown>, spec: HintSpec): number | undefined {
  const name = spec.nvext.find((n) => ext[n] !== undefined && ext[n] !== null);
  if (name === undefined) return undefined;
  const v = ext[name];
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= spec.max) return v;
  if (typeof v === 'string' && /^\d{1,16}$/.test(v) && Number(v) <= spec.max) return Number(v);
  throw new InvalidRoutingHintError(`nvext.${name} must be an integer in [0, ${spec.max}], got ${JSON.stringify(v)?.slice(0, 64) ?? typeof v}`);
}
