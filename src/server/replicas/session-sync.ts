// Session pins shared through a KV bucket whose entries expire with the session TTL: a session
// bound on one replica continues on the same workers whichever replica gets its next request.
import type { BoundWorker, SessionBinding } from '../../routing/session-affinity.js';
import type { SharedBucket } from './bucket.js';

/** What the sync needs of the router's SessionAffinity. */
export interface SessionTable {
  adopt(sessionId: string, binding: SessionBinding): void;
}

/** A KV key from any session id: base64url, which NATS keys accept. */
export function sessionKey(sessionId: string): string {
  return Buffer.from(sessionId, 'utf8').toString('base64url');
}

export function sessionIdOf(key: string): string {
  return Buffer.from(key, 'base64url').toString('utf8');
}

export function bindingValue(binding: SessionBinding): Record<string, unknown> {
  const v: Record<string, unknown> = {};
  if (binding.decode) v.decode = [binding.decode.worker, binding.decode.dpRank];
  if (binding.prefill) v.prefill = [binding.prefill.worker, binding.prefill.dpRank];
  return v;
}

/** The binding an entry holds, or null when it is not one. */
export function bindingOf(value: Record<string, unknown>): SessionBinding | null {
  const decode = boundWorker(value.decode);
  const prefill = boundWorker(value.prefill);
  if (decode === null || prefill === null || (decode === undefined && prefill === undefined)) return null;
  const b: SessionBinding = {};
  if (decode) b.decode = decode;
  if (prefill) b.prefill = prefill;
  return b;
}

/** undefined when absent, null when malformed. */
function boundWorker(v: unknown): BoundWorker | undefined | null {
  if (v === undefined) return undefined;
  if (!Array.isArray(v) || v.length !== 2 || !v.every((n) => Number.isSafeInteger(n) && n >= 0)) return null;
  return { worker: v[0] as number, dpRank: v[1] as number };
}

export class SessionSync {
  constructor(
    private readonly bucket: SharedBucket,
    private readonly table: SessionTable,
    private readonly invalid: () => void,
  ) {}

  /** This replica bound (or refreshed) a session. */
  bound(sessionId: string, binding: SessionBinding): void {
    this.bucket.put(sessionKey(sessionId), bindingValue(binding));
  }

  /** Another replica's entry from the bucket. */
  received(key: string, value: Record<string, unknown> | null): void {
    // Deleted or expired in the bucket: each replica's own table expires it on the same TTL.
    if (value === null) return;
    const binding = bindingOf(value);
    const id = sessionIdOf(key);
    if (!binding || id === '') return this.invalid();
    this.table.adopt(id, binding);
  }
}
