// SGLang's session API on the simulated worker: POST /open_session ({ capacity_of_str_len,
// session_id?, timeout? } -> the session id) and POST /close_session ({ session_id }). The worker
// keeps the open sessions (an idle one expires after its timeout) so tests can see that a router
// never leaves one open; the engine model itself does not change with a session.
import { OpenAiError } from './errors.js';

interface Session {
  timeoutMs: number | undefined;
  usedAt: number;
}

const MAX_SESSIONS = 100_000;

export class EngineSessions {
  private readonly open = new Map<string, Session>();
  private counter = 0;

  constructor(private readonly clock: () => number) {}

  /** The open sessions' ids (expired ones dropped first). */
  ids(): string[] {
    this.expire();
    return [...this.open.keys()];
  }

  /** POST /open_session. */
  openFrom(body: Record<string, unknown>): string {
    const capacity = body.capacity_of_str_len;
    if (!Number.isSafeInteger(capacity) || (capacity as number) < 1) throw badRequest('capacity_of_str_len must be a positive integer');
    const given = body.session_id;
    if (given !== undefined && given !== null && (typeof given !== 'string' || given.length === 0 || given.length > 256))
      throw badRequest('session_id must be a string of 1 to 256 characters');
    const timeout = body.timeout;
    if (timeout !== undefined && timeout !== null && (typeof timeout !== 'number' || !(timeout > 0)))
      throw badRequest('timeout must be a positive number of seconds');
    this.expire();
    const id = typeof given === 'string' ? given : `session-${++this.counter}`;
    if (this.open.has(id)) throw badRequest(`session id ${id} already exists`);
    if (this.open.size >= MAX_SESSIONS) throw new OpenAiError(503, 'too many open sessions', 'server_error', 'too_many_sessions');
    this.open.set(id, { timeoutMs: typeof timeout === 'number' ? timeout * 1000 : undefined, usedAt: this.clock() });
    return id;
  }

  /** POST /close_session. */
  closeFrom(body: Record<string, unknown>): void {
    const id = body.session_id;
    if (typeof id !== 'string') throw badRequest('session_id must be a string');
    this.expire();
    if (!this.open.delete(id)) throw badRequest(`session id ${id} does not exist`);
  }

  private expire(): void {
    const now = this.clock();
    for (const [id, s] of this.open) if (s.timeoutMs !== undefined && now - s.usedAt > s.timeoutMs) this.open.delete(id);
  }
}

function badRequest(message: string): OpenAiError {
  return new OpenAiError(400, message, 'invalid_request_error', 'invalid_session');
}
