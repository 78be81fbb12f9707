// Shared by the simulated worker tests: workers on ephemeral ports (closed after each file),
// JSON posts, and SSE reading that keeps the raw bytes for exact framing checks.
import { afterAll } from 'vitest';
import { type SimWorker, type SimWorkerOptions, startSimWorker } from '../../../src/sim/worker/worker.js';

/** Small, fast engines: block size 4, speedup 1000 (tests never assert timings). */
export const FAST_ENGINE = { blockSize: 4, kvBlocks: 256, speedup: 1000 } as const;

let nextId = 0;
const started: SimWorker[] = [];
afterAll(async () => {
  await Promise.all(started.splice(0).map((w) => w.close()));
});

export async function worker(opts: Partial<SimWorkerOptions> = {}): Promise<SimWorker> {
  const w = await startSimWorker({ id: nextId++, ...opts, engine: { ...FAST_ENGINE, ...opts.engine } });
  started.push(w);
  return w;
}

export interface JsonReply {
  status: number;
  headers: Headers;
  json: Record<string, any>;
}

export async function post(url: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<JsonReply> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text === '' ? {} : JSON.parse(text) };
}

export interface SseReply {
  status: number;
  headers: Headers;
  raw: string;
  /** The payloads after "data: ", in order ("[DONE]" included). */
  data: string[];
  /** The JSON payloads. */
  chunks: Record<string, any>[];
}

export async function postStream(url: string, body: unknown, headers: Record<string, string> = {}): Promise<SseReply> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const raw = await res.text();
  const data = raw
    .split('\n\n')
    .filter((e) => e !== '')
    .map((e) => {
      if (!e.startsWith('data: ')) throw new Error(`not an SSE data event: ${JSON.stringify(e)}`);
      return e.slice('data: '.length);
    });
  return { status: res.status, headers: res.headers, raw, data, chunks: data.filter((d) => d !== '[DONE]').map((d) => JSON.parse(d)) };
}

/** Token ids [start, start + n): distinct prompts per test keep caches independent. */
export const range = (start: number, n: number) => Array.from({ length: n }, (_, i) => start + i);

/** Polls `check` until it returns true (generous deadline; the machine is shared). */
export async function eventually(check: () => boolean | Promise<boolean>, what: string, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
