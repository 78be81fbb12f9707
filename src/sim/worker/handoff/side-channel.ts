// The KV side channel of a simulated prefill worker: the stand-in for NIXL / Mooncake transfers.
// A decode worker pulls a finished prefill by key over HTTP; the reply tells it how many prompt
// tokens arrive by transfer, and the prefill worker unpins the blocks. It is the vLLM
// `remote_host:remote_port`, the SGLang bootstrap server and the TensorRT-LLM context server's
// address in the opaque state, so workers in different processes hand off as well as in one.
import { OpenAiError, invalidRequest } from '../errors.js';
import { type HttpServer, listenHttp } from '../http-server.js';
import { parseJsonBody } from '../openai.js';
import type { KvHolds } from './kv-holds.js';

export interface SideChannelOptions {
  host: string;
  port: number;
  holds: KvHolds;
  engineId: string;
  /** Upper bound on a pull's wait, whatever the client asks. */
  maxWaitMs: number;
  reusePort?: boolean;
}

export async function startSideChannel(opts: SideChannelOptions): Promise<HttpServer> {
  return listenHttp({
    host: opts.host,
    port: opts.port,
    label: 'KV side channel',
    maxBodyBytes: 64 * 1024,
    reusePort: opts.reusePort,
    routes: [
      { method: 'GET', path: '/health', handler: (ex) => ex.json(200, { status: 'ok', engine_id: opts.engineId }) },
      {
        method: 'POST',
        path: '/kv/pull',
        handler: async (ex) => {
          const body = parseJsonBody(ex.body);
          const key = body.key;
          const waitMs = body.wait_ms ?? 0;
          if (typeof key !== 'string' || key === '') throw invalidRequest('key must be a non-empty string');
          if (typeof waitMs !== 'number' || !Number.isFinite(waitMs) || waitMs < 0) throw invalidRequest('wait_ms must be a number >= 0');
          if (body.engine_id !== undefined && body.engine_id !== opts.engineId) {
            throw new OpenAiError(404, `this side channel serves engine ${opts.engineId}, not ${String(body.engine_id)}`, 'not_found_error', 'unknown_engine');
          }
          const ac = new AbortController();
          ex.onAbort(() => ac.abort());
          const r = await opts.holds.pull(key, Math.min(waitMs, opts.maxWaitMs), ac.signal);
          if (r.ok) ex.json(200, { engine_id: opts.engineId, prompt_tokens: r.held.promptTokens, block_ids: r.held.blockIds });
          else ex.error(new OpenAiError(r.status, r.reason, 'not_found_error', r.status === 410 ? 'prefill_gone' : 'prefill_not_found'));
        },
      },
    ],
  });
}

export type PullOutcome = { ok: true; promptTokens: number; blockIds: number[] } | { ok: false; status: number; reason: string };

/** Pulls a held prefill from a side channel; network failures are outcomes too, never throws. */
export async function pullPrefill(target: {
  host: string;
  port: number;
  key: string;
  engineId?: string;
  waitMs: number;
  signal?: AbortSignal;
}): Promise<PullOutcome> {
  const host = target.host.includes(':') && !target.host.startsWith('[') ? `[${target.host}]` : target.host;
  try {
    const res = await fetch(`http://${host}:${target.port}/kv/pull`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ key: target.key, wait_ms: target.waitMs, engine_id: target.engineId }),
      signal: target.signal,
    });
    const json = (await res.json().catch(() => ({}))) as Record<string, unknown>;
    if (res.status === 200 && typeof json.prompt_tokens === 'number' && Array.isArray(json.block_ids)) {
      return { ok: true, promptTokens: json.prompt_tokens, blockIds: json.block_ids as number[] };
    }
    const message = (json.error as { message?: unknown } | undefined)?.message;
    return { ok: false, status: res.status, reason: typeof message === 'string' ? message : `side channel answered ${res.status}` };
  } catch (err) {
    if (target.signal?.aborted) return { ok: false, status: 499, reason: 'cancelled' };
    return { ok: false, status: 502, reason: `cannot reach the KV side channel at ${target.host}:${target.port}: ${(err as Error).message}` };
  }
}
