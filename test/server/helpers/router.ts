// A router in front of an embedded simulated fleet, on loopback ports chosen by the OS, for the
// end-to-end server tests. Engines run at a high speedup (tests never assert timings).
import OpenAI from 'openai';
import { createRouter, type Router } from '../../../src/server/app/router.js';
import type { EngineKind, RouterConfigInput } from '../../../src/server/config/config.js';
import { startEmbeddedFleet, type EmbeddedFleet } from '../../../src/server/app/embedded.js';
import { listenUws, type RunningServer } from '../../../src/server/http/uws.js';
import type { ApiKey } from '../../../src/server/access/api-keys.js';
import type { Logger } from '../../../src/util/logger.js';

export const MODEL = 'kvroute-sim';
export const BLOCK_SIZE = 16;

export interface TestRouter {
  url: string;
  router: Router;
  fleet: EmbeddedFleet;
  server: RunningServer;
  client: OpenAI;
  close(): Promise<void>;
}

export interface TestRouterOptions {
  prefill?: number;
  decode?: number;
  style?: EngineKind;
  speedup?: number;
  kvBlocks?: number;
  /** A CPU offload tier of this many blocks on each simulated engine (default none). */
  offloadBlocks?: number;
  config?: RouterConfigInput;
  /** Where the router logs (default: nowhere). */
  logger?: Logger;
  apiKeys?: ApiKey[];
}

export async function startTestRouter(o: TestRouterOptions = {}): Promise<TestRouter> {
  const fleet = await startEmbeddedFleet({
    prefill: o.prefill ?? 0,
    decode: o.decode ?? 2,
    style: o.style ?? 'vllm',
    speedup: o.speedup ?? 200,
    blockSize: BLOCK_SIZE,
    kvBlocks: o.kvBlocks ?? 2048,
    offloadBlocks: o.offloadBlocks,
    model: MODEL,
  });
  let router: Router | undefined;
  try {
    router = await createRouter(
      { port: 0, blockSize: BLOCK_SIZE, model: MODEL, health: { intervalMs: 0 }, seed: 7, ...o.config, workers: fleet.workers },
      { logger: o.logger, apiKeys: o.apiKeys },
    );
    const server = await listenUws(router, { host: '127.0.0.1', port: 0 });
    const r = router;
    return {
      url: server.url,
      router: r,
      fleet,
      server,
      client: new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 30_000 }),
      async close() {
        await server.close();
        await r.close();
        await fleet.close();
      },
    };
  } catch (err) {
    await router?.close();
    await fleet.close();
    throw err;
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function waitFor(cond: () => boolean | Promise<boolean>, what: string, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/**
 * Every simulated worker's KV event stream is joined (its join probe is over): from here on a
 * batch the engine publishes reaches the index, so a test's own gaps are seen as gaps.
 */
export async function waitForEventStreams(t: TestRouter): Promise<void> {
  for (const w of t.fleet.workers) {
    await waitFor(
      async () => (await metricSum(t.url, 'kvroute_kv_event_stream_joins_total', `worker="${w.id}"`)) >= 1,
      `worker ${w.id}'s KV event stream to join`,
    );
  }
}

/** Sum of a metric's samples in /metrics text (optionally only lines matching a label filter). */
export async function metricSum(url: string, name: string, labels = ''): Promise<number> {
  return (await metricSamples(url, name, labels)).sum;
}

/** A metric's samples in /metrics text: how many lines there are and their sum. */
export async function metricSamples(url: string, name: string, labels = ''): Promise<{ count: number; sum: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  let count = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name) || (line[name.length] !== '{' && line[name.length] !== ' ')) continue;
    if (labels && !line.includes(labels)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
    count++;
  }
  return { count, sum };
}

const LOAD_GAUGES = ['kvroute_worker_active_requests', 'kvroute_worker_active_prefill_tokens', 'kvroute_worker_active_decode_blocks'] as const;

/** The booked load summed over every worker, per gauge. Throws if a gauge is missing (a renamed gauge must not read as zero). */
export async function bookedLoad(url: string): Promise<{ requests: number; prefillTokens: number; decodeBlocks: number }> {
  const [requests, prefill, decode] = await Promise.all(LOAD_GAUGES.map((g) => metricSamples(url, g)));
  for (const [i, s] of [requests, prefill, decode].entries()) if (s.count === 0) throw new Error(`/metrics has no ${LOAD_GAUGES[i]} samples`);
  return { requests: requests.sum, prefillTokens: prefill.sum, decodeBlocks: decode.sum };
}

/** Every booking of both pools is freed: the load gauges are back to zero. */
export async function waitForNoLoad(url: string): Promise<void> {
  await waitFor(async () => {
    const load = await bookedLoad(url);
    return load.requests === 0 && load.prefillTokens === 0 && load.decodeBlocks === 0;
  }, 'the load gauges to return to zero');
}

/** A prompt of `n` bytes (byte tokenizer: n tokens), distinct per seed. */
export function prompt(n: number, seed = 0): string {
  let s = '';
  let x = seed * 7919 + 1;
  while (s.length < n) {
    x = (x * 1103515245 + 12345) % 2147483648;
    s += String.fromCharCode(97 + (x % 26));
  }
  return s;
}
