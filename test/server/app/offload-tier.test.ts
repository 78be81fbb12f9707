// End to end: simulated engines with a CPU offload tier publish their offloaded blocks over ZeroMQ
// (KV events with medium CPU), the router indexes them as the host tier, and kv's tier credit sends
// a request to the worker that holds its prefix on CPU, where the engine reloads it instead of
// computing it. With lower tiers ignored, the same request goes to the worker with the longer GPU
// prefix instead. Two aggregated workers of 64 blocks of 16 tokens (1,024 tokens each).
import { afterEach, describe, expect, it } from 'vitest';
import { MODEL, prompt, startTestRouter, waitFor, type TestRouter } from '../helpers/router.js';

interface Candidate {
  worker: number;
  overlap_blocks: number;
  lower_tier_blocks: { host: number };
  cost: number;
}
interface Route {
  decode: { worker: number; predicted_ttft_ms?: number; candidates: Candidate[] };
}

let t: TestRouter | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

async function post(path: string, body: object, headers: Record<string, string> = {}) {
  const res = await fetch(`${t!.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const json = (await res.json()) as Record<string, any>;
  expect(res.status, JSON.stringify(json)).toBe(200);
  return { worker: res.headers.get('x-kvroute-decode-worker'), json };
}

/** A 600-token prompt whose 37 full blocks end up on worker 0's CPU tier only, its first 3 blocks on worker 1's GPU. */
const A = prompt(600, 1);

async function offloadAOnWorker0(): Promise<void> {
  const on = (worker: number) => ({ 'x-worker-instance-id': String(worker) });
  await post('/v1/completions', { model: MODEL, prompt: A, max_tokens: 1 }, on(0));
  // Two prompts of 1,000 tokens push every block of A out of worker 0's GPU, to its CPU tier.
  await post('/v1/completions', { model: MODEL, prompt: prompt(1000, 2), max_tokens: 1 }, on(0));
  await post('/v1/completions', { model: MODEL, prompt: prompt(1000, 3), max_tokens: 1 }, on(0));
  await post('/v1/completions', { model: MODEL, prompt: A.slice(0, 48) + prompt(100, 4), max_tokens: 1 }, on(1));
}

async function routeOfA(): Promise<Route> {
  return (await post('/v1/route', { model: MODEL, prompt: A })).json as Route;
}

const candidate = (r: Route, worker: number) => r.decode.candidates.find((c) => c.worker === worker);

describe('a CPU offload tier, end to end', () => {
  it("routes a request to the worker holding its prefix on CPU, which reloads it (kv's host credit)", async () => {
    t = await startTestRouter({ decode: 2, kvBlocks: 64, offloadBlocks: 512, config: { routing: { policy: 'kv' } } });
    await offloadAOnWorker0();
    // The events reach the index: worker 0 can reload A's 37 blocks, worker 1 holds 3 on its GPU.
    await waitFor(async () => {
      const r = await routeOfA();
      return candidate(r, 0)?.lower_tier_blocks.host === 37 && candidate(r, 1)?.overlap_blocks === 3;
    }, "A's blocks in the index");
    const route = await routeOfA();
    expect(candidate(route, 0)).toMatchObject({ overlap_blocks: 0, lower_tier_blocks: { host: 37 } });
    expect(route.decode.worker).toBe(0);
    expect(route.decode.predicted_ttft_ms, 'kv predicts no TTFT').toBeUndefined();
    const r = await post('/v1/completions', { model: MODEL, prompt: A, max_tokens: 1 });
    expect(r.worker).toBe('0');
    // The engine reloaded the 37 blocks (592 tokens) from its CPU tier instead of computing them.
    expect(r.json.usage.prompt_tokens_details.cached_tokens).toBe(592);
  });

  it('sends the same request to the longer GPU prefix when the router ignores lower tiers', async () => {
    t = await startTestRouter({ decode: 2, kvBlocks: 64, offloadBlocks: 512, config: { routing: { policy: 'kv' }, lowerTiers: false } });
    await offloadAOnWorker0();
    await waitFor(async () => candidate(await routeOfA(), 1)?.overlap_blocks === 3, "worker 1's blocks in the index");
    const route = await routeOfA();
    expect(candidate(route, 0)).toMatchObject({ overlap_blocks: 0, lower_tier_blocks: { host: 0 } });
    const r = await post('/v1/completions', { model: MODEL, prompt: A, max_tokens: 1 });
    expect(r.worker).toBe('1');
    expect(r.json.usage.prompt_tokens_details.cached_tokens).toBe(48);
  });

  it('ttft explains its predicted TTFT: a reload of host blocks, less than the score that adds the work', async () => {
    t = await startTestRouter({ decode: 2, kvBlocks: 64, offloadBlocks: 512, config: { routing: { policy: 'ttft' } } });
    await offloadAOnWorker0();
    await waitFor(async () => candidate(await routeOfA(), 0)?.lower_tier_blocks.host === 37, "A's blocks in the index");
    const route = await routeOfA();
    expect(route.decode.worker).toBe(0);
    const predicted = route.decode.predicted_ttft_ms!;
    expect(predicted).toBeGreaterThan(0);
    expect(predicted).toBeLessThan(candidate(route, 0)!.cost);
  });
});
