// Server-sent events from an engine's byte stream, as the WHATWG EventSource parser reads them:
// lines end with \n, \r\n or \r (possibly split across chunks); `data:` lines accumulate (joined
// by \n) until a blank line dispatches the event; comments (":") and other fields are skipped.
// The payload is kept verbatim in `data` so the relay never re-frames what the engine wrote.
import { StringDecoder } from 'node:string_decoder';
import { chunkShape, SHAPE_ERROR, SHAPE_TOKEN, SHAPE_USAGE, UNKNOWN_SHAPE } from './chunk-shape.js';
import { SSE_DONE, type SseEvent } from './types.js';

/** Refuse an event larger than this instead of buffering without bound. */
export const DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024;

export class SseParseError extends Error {
  override name = 'SseParseError';
}

export class SseParser {
  /**
   * Made only once a chunk ends inside a multi-byte character: most streams never need one, and
   * creating a TextDecoder cost about 0.8 us per response (an ICU converter, freed by the GC).
   */
  private decoder: StringDecoder | undefined;
  /** Pieces of a line whose end has not arrived yet (kept apart: no quadratic re-scan). */
  private partial: string[] = [];
  private partialChars = 0;
  /** The last text ended with \r: a \n starting the next one belongs to the same line end. */
  private sawCR = false;
  /** The event's data lines so far: most events have one, which needs no array. */
  private data: string | string[] | undefined;
  private dataChars = 0;
  private ended = false;

  constructor(private readonly maxEventChars = DEFAULT_MAX_EVENT_BYTES) {}

  /** Feeds bytes; returns the events they complete, in order. */
  push(chunk: Uint8Array): SseEvent[] {
    if (this.ended) throw new SseParseError('push() after end()');
    return this.feed(this.decode(chunk));
  }

  /**
   * The stream ended. An event whose data lines were complete but not yet followed by the blank
   * line is dispatched (engines that close right after their last line lose nothing); a final
   * line without its line end is dropped, as it may be truncated.
   */
  end(): SseEvent[] {
    if (this.ended) return [];
    this.ended = true;
    const events = this.feed(this.decoder?.end() ?? '');
    this.dispatch(events);
    this.partial = [];
    this.partialChars = 0;
    return events;
  }

  private decode(chunk: Uint8Array): string {
    // A chunk ending in ASCII ends on a character boundary (UTF-8 continuation bytes are >= 0x80).
    if (this.decoder === undefined && (chunk.length === 0 || chunk[chunk.length - 1] < 0x80)) {
      return (chunk instanceof Buffer ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)).toString('utf8');
    }
    this.decoder ??= new StringDecoder('utf8');
    return this.decoder.write(chunk);
  }

  private feed(text: string): SseEvent[] {
    const events: SseEvent[] = [];
    const n = text.length;
    let start = 0;
    if (this.sawCR && n > 0) {
      this.sawCR = false;
      if (text.charCodeAt(0) === 10) start = 1;
    }
    let nextLF = text.indexOf('\n', start);
    let nextCR = text.indexOf('\r', start);
    while (nextLF >= 0 || nextCR >= 0) {
      const isCR = nextCR >= 0 && (nextLF < 0 || nextCR < nextLF);
      const i = isCR ? nextCR : nextLF;
      if (this.partial.length > 0) {
        this.partial.push(text.slice(start, i));
        const line = this.partial.join('');
        this.partial = [];
        this.partialChars = 0;
        this.line(line, 0, line.length, events);
      } else {
        this.line(text, start, i, events);
      }
      start = i + 1;
      if (isCR) {
        if (start === n) this.sawCR = true;
        else if (text.charCodeAt(start) === 10) start++;
      }
      if (nextLF >= 0 && nextLF < start) nextLF = text.indexOf('\n', start);
      if (nextCR >= 0 && nextCR < start) nextCR = text.indexOf('\r', start);
    }
    if (start < n) {
      this.partial.push(start === 0 ? text : text.slice(start));
      this.partialChars += n - start;
    }
    if (this.partialChars + this.dataChars > this.maxEventChars) {
      throw new SseParseError(`an engine event exceeded ${this.maxEventChars} characters`);
    }
    return events;
  }

  /** One line, text[start, end): a data line adds to the event, a blank line dispatches it. */
  private line(text: string, start: number, end: number, events: SseEvent[]): void {
    if (start === end) {
      this.dispatch(events);
      return;
    }
    // Only `data` matters (event, id, retry and ":" comments are skipped): the field is the line
    // up to its first colon, or the whole line.
    const len = end - start;
    if (len < 4 || !text.startsWith('data', start) || (len > 4 && text.charCodeAt(start + 4) !== 58) /* : */) return;
    let from = start + 5;
    if (from < end && text.charCodeAt(from) === 32) from++;
    const value = from >= end ? '' : text.slice(from, end);
    if (this.data === undefined) this.data = value;
    else if (typeof this.data === 'string') this.data = [this.data, value];
    else this.data.push(value);
    this.dataChars += value.length;
  }

  private dispatch(events: SseEvent[]): void {
    if (this.data === undefined) return;
    events.push(makeEvent(typeof this.data === 'string' ? this.data : this.data.join('\n')));
    this.data = undefined;
    this.dataChars = 0;
  }
}

/** An engine event; `json` (when the payload is a JSON object or array) is parsed on first use. */
export function makeEvent(data: string): SseEvent {
  return new EngineEvent(data);
}

const UNREAD = Symbol('unread');
const UNSCANNED = UNKNOWN_SHAPE - 1;

/**
 * Most relayed chunks are never looked into beyond their shape (chunk-shape.ts), so neither the
 * parse nor the shape scan runs until someone asks, and each runs at most once.
 */
class EngineEvent implements SseEvent {
  private parsed: unknown = UNREAD;
  private scanned = UNSCANNED;

  constructor(readonly data: string) {}

  get json(): unknown {
    if (this.parsed === UNREAD) this.parsed = parsePayload(this.data);
    return this.parsed;
  }

  get shape(): number {
    if (this.scanned === UNSCANNED) this.scanned = chunkShape(this.data);
    return this.scanned;
  }
}

function parsePayload(data: string): unknown {
  const first = data.charCodeAt(0);
  if (first !== 123 /* { */ && (first !== 91 /* [ */ || data === SSE_DONE)) return undefined;
  try {
    return JSON.parse(data) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * SHAPE_* flags of an event (see chunk-shape.ts): TOKEN is exact, USAGE and ERROR say the field
 * is there and not null (read the parsed chunk for its value).
 */
export function shapeOf(ev: SseEvent): number {
  const shape = ev instanceof EngineEvent ? ev.shape : chunkShape(ev.data);
  return shape !== UNKNOWN_SHAPE ? shape : shapeOfParsed(ev.json);
}

function shapeOfParsed(json: unknown): number {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return 0;
  const { choices, usage, error } = json as { choices?: unknown; usage?: unknown; error?: unknown };
  return (
    (Array.isArray(choices) && choices.length > 0 ? SHAPE_TOKEN : 0) |
    (usage !== undefined && usage !== null ? SHAPE_USAGE : 0) |
    (error !== undefined && error !== null ? SHAPE_ERROR : 0)
  );
}

/** The event carries output: its chunk's top-level `choices` is a non-empty array. */
export function carriesToken(ev: SseEvent): boolean {
  return (shapeOf(ev) & SHAPE_TOKEN) !== 0;
}

/** An event whose payload is `value` serialised (for chunks the router writes itself). */
export function jsonEvent(value: unknown): SseEvent {
  return { data: JSON.stringify(value), json: value };
}

export const DONE_EVENT: SseEvent = Object.freeze({ data: SSE_DONE }) as SseEvent;

export function isDone(ev: SseEvent): boolean {
  return ev.data === SSE_DONE;
}

/** Parses a whole SSE text (tests, and engines that answered a stream request in one piece). */
export function parseSseText(text: string): SseEvent[] {
  const p = new SseParser();
  const events = p.push(new TextEncoder().encode(text));
  return events.concat(p.end());
}
