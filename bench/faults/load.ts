// A steady open-loop load of streamed completions with fresh prompts (no prefix shared, so no
// cache pulls a request towards any worker), sent at evenly spaced times by the pacer thread, and
// what became of each: answered to [DONE], or failed (an error status, an error frame in the
// stream, a broken connection). One worker is SIGKILLed at a set time during the load.
import { pace } from '../frontend/pacer.js';

export interface Outcome {
  /** When it was sent, ms after the kill signal (negative: before). */
  sentMs: number;
  ok: boolean;
  status: number;
  /** The decode worker the router named, when it answered. */
  worker: number | undefined;
}

export interface LoadRun {
  outcomes: Outcome[];
  /** The worker killed. */
  victim: number;
}

export interface LoadOptions {
  url: string;
  ratePerS: number;
  /** Load before the kill. */
  beforeMs: number;
  /** Load after it. */
  afterMs: number;
  maxTokens: number;
  /** Distinct prompts per run. */
  tag: string;
  victim: number;
  kill(): Promise<void>;
}

async function send(url: string, prompt: string, maxTokens: number): Promise<{ ok: boolean; status: number; worker: number | undefined }> {
  try {
    const res = await fetch(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt, max_tokens: maxTokens, ignore_eos: true, stream: true }),
    });
    const text = await res.text();
    const header = res.headers.get('x-kvroute-decode-worker');
    const ok = res.status === 200 && text.trimEnd().endsWith('data: [DONE]') && !text.includes('data: {"error"');
    return { ok, status: res.status, worker: header === null ? undefined : Number(header) };
  } catch {
    return { ok: false, status: 0, worker: undefined };
  }
}

export async function runLoad(o: LoadOptions): Promise<LoadRun> {
  const gapMs = 1000 / o.ratePerS;
  const total = Math.round(((o.beforeMs + o.afterMs) / 1000) * o.ratePerS);
  const killAt = Math.round((o.beforeMs / 1000) * o.ratePerS);
  const offsets = Float64Array.from({ length: total }, (_, i) => i * gapMs);
  const sentAt = new Float64Array(total);
  const pending: Array<Promise<{ ok: boolean; status: number; worker: number | undefined }>> = [];
  let killedAt = Number.NaN;
  let killed: Promise<void> = Promise.resolve();
  const pacer = pace(offsets, (i) => {
    if (i === killAt) {
      killedAt = performance.now();
      killed = o.kill();
    }
    sentAt[i] = performance.now();
    pending.push(send(o.url, `${o.tag} request ${i}: tell me about fault tolerance in routers, please.`, o.maxTokens));
  });
  await pacer.done;
  await pacer.stop();
  const results = await Promise.all(pending);
  await killed;
  return { victim: o.victim, outcomes: results.map((r, i) => ({ sentMs: sentAt[i] - killedAt, ok: r.ok, status: r.status, worker: r.worker })) };
}
