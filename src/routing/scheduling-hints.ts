// The scheduling hints of a request, beside the worker pins of hints.ts: its priority class and
// priority jump in the router queue, its expected output length, and Dynamo 1.1.0's session
// control. Each comes from a header or from the body's `nvext` (Dynamo's places first, kvroute's
// own aliases after); given both ways they must agree. A malformed one is the client's mistake:
// InvalidRoutingHintError (a RangeError: frontends answer 400) says which and why.
//
//   priority                x-kvroute-priority                nvext.agent_hints.priority
//   priorityJump            x-kvroute-priority-jump           nvext.agent_hints.priority_jump, .latency_sensitivity, nvext.priority_jump
//   expectedOutputTokens    x-kvroute-expected-output-tokens  nvext.agent_hints.osl, nvext.expected_output_tokens
//   sessionControl          x-kvroute-session-id, -action,    nvext.session_control { session_id, action, timeout }
//                           -timeout
import { isShortVisibleAscii } from '../util/validate.js';
import { InvalidRoutingHintError } from './errors.js';

export const PRIORITY_MIN = -100;
export const PRIORITY_MAX = 100;
/** A jump of a day is already "first"; more is a mistake. */
export const PRIORITY_JUMP_MAX = 86_400;
const OUTPUT_TOKENS_MAX = 2 ** 32 - 1;
const SESSION_TIMEOUT_MAX = 86_400;

export type SessionAction = 'open' | 'close';

/** Dynamo's `nvext.session_control`: open a session on the worker a request goes to, or close it after the request. */
export interface SessionControlHint {
  sessionId: string;
  /** Absent: a turn inside the session (it goes to the session's worker). */
  action?: SessionAction;
  /** Idle seconds before the session expires (open only). */
  timeoutS?: number;
}

export interface SchedulingHints {
  /** Strict class in the router queue: higher leaves first. */
  priority?: number;
  /** Seconds earlier the request counts in an fcfs queue (later in lcfs); its extra weight under wspt. */
  priorityJump?: number;
  /** How many tokens the request is expected to generate (output block tracking). */
  expectedOutputTokens?: number;
  sessionControl?: SessionControlHint;
}

export const SCHEDULING_HINT_HEADERS = [
  'x-kvroute-priority',
  'x-kvroute-priority-jump',
  'x-kvroute-expected-output-tokens',
  'x-kvroute-session-id',
  'x-kvroute-session-action',
  'x-kvroute-session-timeout',
] as const;

/** Reads a header (trimmed, undefined when absent or empty). */
export type HeaderReader = (name: string) => string | undefined;

/** The scheduling hints of a request, into `out`. */
export function parseSchedulingHints(header: HeaderReader, ext: Record<string, unknown> | undefined, out: SchedulingHints): void {
  const agent = ext === undefined ? undefined : objectField(ext, 'agent_hints');
  const fromBody = (places: Array<[Record<string, unknown> | undefined, string, string]>) => {
    for (const [obj, key, name] of places) {
      const v = obj?.[key];
      if (v !== undefined && v !== null) return { v, name };
    }
    return undefined;
  };

  const priority = agreed('x-kvroute-priority', header('x-kvroute-priority'), fromBody([[agent, 'priority', 'nvext.agent_hints.priority']]), (v, where) =>
    integer(v, where, PRIORITY_MIN, PRIORITY_MAX),
  );
  if (priority !== undefined) out.priority = priority;

  const jump = agreed(
    'x-kvroute-priority-jump',
    header('x-kvroute-priority-jump'),
    fromBody([
      [agent, 'priority_jump', 'nvext.agent_hints.priority_jump'],
      [agent, 'latency_sensitivity', 'nvext.agent_hints.latency_sensitivity'],
      [ext, 'priority_jump', 'nvext.priority_jump'],
    ]),
    (v, where) => number(v, where, 0, PRIORITY_JUMP_MAX),
  );
  if (jump !== undefined) out.priorityJump = jump;

  const expected = agreed(
    'x-kvroute-expected-output-tokens',
    header('x-kvroute-expected-output-tokens'),
    fromBody([
      [agent, 'osl', 'nvext.agent_hints.osl'],
      [ext, 'expected_output_tokens', 'nvext.expected_output_tokens'],
    ]),
    (v, where) => integer(v, where, 1, OUTPUT_TOKENS_MAX),
  );
  if (expected !== undefined) out.expectedOutputTokens = expected;

  const session = sessionControl(header, ext);
  if (session) out.sessionControl = session;
}

function sessionControl(header: HeaderReader, ext: Record<string, unknown> | undefined): SessionControlHint | undefined {
  const fromHeaders: Partial<SessionControlHint> = {};
  const id = header('x-kvroute-session-id');
  if (id !== undefined) fromHeaders.sessionId = sessionId(id, 'header x-kvroute-session-id');
  const action = header('x-kvroute-session-action');
  if (action !== undefined) fromHeaders.action = sessionAction(action, 'header x-kvroute-session-action');
  const timeout = header('x-kvroute-session-timeout');
  if (timeout !== undefined) fromHeaders.timeoutS = integer(timeout, 'header x-kvroute-session-timeout', 1, SESSION_TIMEOUT_MAX);

  const raw = ext === undefined ? undefined : objectField(ext, 'session_control');
  let fromBody: Partial<SessionControlHint> | undefined;
  if (raw !== undefined) {
    for (const key of Object.keys(raw)) {
      if (key !== 'session_id' && key !== 'action' && key !== 'timeout')
        throw new InvalidRoutingHintError(`nvext.session_control has an unknown field '${key.slice(0, 64)}' (session_id, action, timeout)`);
    }
    fromBody = {};
    if (raw.session_id === undefined || raw.session_id === null) throw new InvalidRoutingHintError('nvext.session_control.session_id is required');
    fromBody.sessionId = sessionId(raw.session_id, 'nvext.session_control.session_id');
    if (raw.action !== undefined && raw.action !== null) fromBody.action = sessionAction(raw.action, 'nvext.session_control.action');
    if (raw.timeout !== undefined && raw.timeout !== null) fromBody.timeoutS = integer(raw.timeout, 'nvext.session_control.timeout', 1, SESSION_TIMEOUT_MAX);
  }
  const headerGiven = Object.keys(fromHeaders).length > 0;
  if (!headerGiven && !fromBody) return undefined;
  if (headerGiven && fromBody) {
    for (const [k, h] of [
      ['sessionId', 'x-kvroute-session-id'],
      ['action', 'x-kvroute-session-action'],
      ['timeoutS', 'x-kvroute-session-timeout'],
    ] as const) {
      const a = fromHeaders[k];
      const b = fromBody[k];
      if (a !== undefined && b !== undefined && a !== b) throw new InvalidRoutingHintError(`header ${h} (${String(a)}) disagrees with nvext.session_control`);
    }
  }
  const merged: Partial<SessionControlHint> = Object.assign({}, fromBody, fromHeaders);
  if (merged.sessionId === undefined)
    throw new InvalidRoutingHintError('session control needs a session id: header x-kvroute-session-id or nvext.session_control.session_id');
  if (merged.timeoutS !== undefined && merged.action !== 'open') throw new InvalidRoutingHintError("a session timeout goes with action 'open'");
  return merged as SessionControlHint;
}

/** A value given as a header and in the body: parsed both ways, and they must agree. */
function agreed<T>(
  headerName: string,
  fromHeader: string | undefined,
  fromBody: { v: unknown; name: string } | undefined,
  parse: (v: unknown, where: string) => T,
): T | undefined {
  const h = fromHeader === undefined ? undefined : parse(fromHeader, `header ${headerName}`);
  const b = fromBody === undefined ? undefined : parse(fromBody.v, fromBody.name);
  if (h !== undefined && b !== undefined && h !== b)
    throw new InvalidRoutingHintError(`header ${headerName} (${String(h)}) disagrees with ${fromBody!.name} (${String(b)})`);
  return h ?? b;
}

function objectField(ext: Record<string, unknown>, key: string): Record<string, unknown> | undefined {
  const v = ext[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object' || Array.isArray(v))
    throw new InvalidRoutingHintError(`nvext.${key} must be an object, got ${Array.isArray(v) ? 'an array' : typeof v}`);
  return v as Record<string, unknown>;
}

function shown(v: unknown): string {
  return (JSON.stringify(v) ?? typeof v).slice(0, 64);
}

function integer(v: unknown, where: string, min: number, max: number): number {
  const n = typeof v === 'string' && /^-?\d{1,16}$/.test(v.trim()) ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max)
    throw new InvalidRoutingHintError(`${where} must be an integer in [${min}, ${max}], got ${shown(v)}`);
  return n;
}

function number(v: unknown, where: string, min: number, max: number): number {
  const n = typeof v === 'string' && /^\d{1,16}(\.\d{1,16})?$/.test(v.trim()) ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isFinite(n) || n < min || n > max)
    throw new InvalidRoutingHintError(`${where} must be a number in [${min}, ${max}], got ${shown(v)}`);
  return n;
}

function sessionId(v: unknown, where: string): string {
  if (typeof v !== 'string' || !isShortVisibleAscii(v)) throw new InvalidRoutingHintError(`${where} must be 1 to 256 visible ASCII characters`);
  return v;
}

function sessionAction(v: unknown, where: string): SessionAction {
  if (v !== 'open' && v !== 'close') throw new InvalidRoutingHintError(`${where} must be 'open' or 'close', got ${shown(v)}`);
  return v;
}
