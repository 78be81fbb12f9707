// Online trace replay: sends a trace's requests with their timing to a live OpenAI-compatible
// router (token-id prompts, streamed), and measures the same figures as the offline replay from
// the client side.
import { request } from 'undici';
import { EngineClient } from '../../engines/http-client.js';
import { EngineError } from '../../engines/errors.js';
import { carriesToken } from '../../engines/sse.js';
import { eventUsage, usageCounts } from '../../engines/usage.js';
import { pendingRecord, type RequestRecord } from './records.js';
import { synthesizePrompt } from './synth.js';
import type { TraceRequest } from './trace.js';

export interface OnlineReplayOptions {
  /** Routers to send to: request i goes to urls[i % urls.length] (round robin per request). */
  urls: readonly string[];
  trace: readonly TraceRequest[];
  /** Arrivals are compressed by this factor. */
  arrivalScale: number;
  seed: number;
  /** Model name; the first of GET /v1/models when absent. */
  model?: string;
  /** Give up on one request after this long. */
  requestTimeoutMs?: number;
  onProgress?: (done: number, total: number, inFlight: number) => void;
}

export interface OnlineRun {
  records: RequestRecord[];
  /** Requests that failed for another reason than a refusal (429/503). */
  errors: number;
  firstError?: string;
  wallMs: number;
}

export async function firstModel(url: string): Promise<string> {
  const res = await request(new URL('/v1/models', url));
  const body = (await res.body.json()) as { data?: Array<{ id?: unknown }> };
  const id = body?.data?.[0]?.id;
  if (res.statusCode !== 200 || typeof id !== 'string') throw new Error(`GET ${url}/v1/models gave no model (status ${res.statusCode})`);
  return id;
}

export async function replayOnline(opts: OnlineReplayOptions): Promise<OnlineRun> {
  if (opts.urls.length === 0) throw new RangeError('replayOnline needs at least one URL');
  const model = opts.model ?? (await firstModel(opts.urls[0]));
  const clients = opts.urls.map((url) => new EngineClient(url, { connections: 256, firstByteTimeoutMs: opts.requestTimeoutMs ?? 600_000 }));
  const records = opts.trace.map((r) => pendingRecord(r, opts.arrivalScale));
  let errors = 0;
  let firstError: string | undefined;
  let done = 0;
  let inFlight = 0;
  const start = performance.now();
  const t0 = opts.trace[0]?.timestamp ?? 0;

  const send = async (i: number) => {
    const req = opts.trace[i];
    const rec = records[i];
    rec.arrivalMs = performance.now() - start;
    const body = {
      model,
      prompt: Array.from(synthesizePrompt(req, opts.seed)),
      max_tokens: req.outputLength,
      ignore_eos: true,
      stream: true,
      stream_options: { include_usage: true },
    };
    try {
      const stream = await clients[i % clients.length].postStream('/v1/completions', body, { requestId: `replay-${i}` });
      for await (const ev of stream) {
        if (carriesToken(ev)) {
          if (Number.isNaN(rec.firstTokenMs)) rec.firstTokenMs = performance.now() - start;
          rec.outputTokens++;
        }
        const usage = eventUsage(ev);
        if (usage) {
          const c = usageCounts(usage);
          rec.cachedTokens = c.cachedTokens ?? 0;
          if (c.completionTokens) rec.outputTokens = c.completionTokens;
        }
      }
      rec.finishMs = performance.now() - start;
    } catch (err) {
      if (err instanceof EngineError && (err.status === 429 || err.status === 503)) rec.refused = true;
      else {
        errors++;
        firstError ??= err instanceof Error ? err.message : String(err);
      }
    }
  };

  const pending: Promise<void>[] = [];
  for (let i = 0; i < opts.trace.length; i++) {
    const due = (opts.trace[i].timestamp - t0) / opts.arrivalScale;
    const wait = due - (performance.now() - start);
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    inFlight++;
    pending.push(
      send(i).finally(() => {
        inFlight--;
        opts.onProgress?.(++done, opts.trace.length, inFlight);
      }),
    );
  }
  await Promise.all(pending);
  await Promise.all(clients.map((c) => c.close()));
  return { records, errors, firstError, wallMs: performance.now() - start };
}
