// Streams under stress, end to end: many at once, slow readers, clients that leave, a worker that
// dies mid-stream; and prefix affinity observed through the engines' own cached_tokens.
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimWorker } from '../../../src/sim/worker/worker.js';
import { GeneratedText } from '../../../src/sim/worker/token-text.js';
import { MODEL, metricSum, prompt, startTestRouter, waitFor, waitForNoLoad, type TestRouter } from '../helpers/router.js';

describe('streaming through the router (vLLM disaggregated fleet)', () => {
  let t: TestRouter;
  beforeAll(async () => {
    t = await startTestRouter({ prefill: 2, decode: 2, style: 'vllm' });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('serves concurrent streams completely and frees all their bookings', async () => {
    const runs = Array.from({ length: 24 }, async (_, i) => {
      const stream = await t.client.completions.create({ model: MODEL, prompt: prompt(48 + i, 100 + i), max_tokens: 12, stream: true });
      let tokens = 0;
      for await (const chunk of stream) if (chunk.choices[0]?.text) tokens++;
      return tokens;
    });
    const counts = await Promise.all(runs);
    expect(counts.every((n) => n >= 1)).toBe(true);
    await waitForNoLoad(t.url);
  });

  it('relays everything to a slow reader, in order, without loss or repeats', async () => {
    const requestId = `slow-reader-${process.pid}`;
    // What the decode engines generate for this request, token by token, in the order they do.
    const generated = recordGeneratedTokens(
      t.fleet.sim.filter((w) => w.role === 'decode'),
      requestId,
    );
    const body = JSON.stringify({ model: MODEL, prompt: prompt(64, 7), max_tokens: 300, stream: true, stream_options: { include_usage: true } });
    const u = new URL(t.url);
    const raw = await new Promise<string>((resolve, reject) => {
      const headers = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-request-id': requestId };
      const req = request({ host: u.hostname, port: u.port, path: '/v1/completions', method: 'POST', headers }, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => {
          parts.push(c);
          // Read a little, then stop for a while: the router must hold the engine stream meanwhile.
          res.pause();
          setTimeout(() => res.resume(), 3);
        });
        res.on('end', () => resolve(Buffer.concat(parts).toString()));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    }).finally(() => generated.stop());
    const events = raw.split('\n\n').filter((e) => e !== '');
    expect(events.at(-1)).toBe('data: [DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.slice(6)) as { choices: Array<{ text: string }>; usage?: { completion_tokens: number } });
    expect(chunks.at(-1)?.usage?.completion_tokens).toBe(300);
    // The client's text is the engine's, token for token: nothing lost, repeated or reordered.
    expect(generated.tokenIds).toHaveLength(300);
    const engineText = new GeneratedText();
    const expected = generated.tokenIds.map((id) => engineText.push(id)).join('') + engineText.end();
    expect(chunks.map((c) => c.choices[0]?.text ?? '').join('')).toBe(expected);
    await waitForNoLoad(t.url);
  });

  it('frees the booking when the client disconnects mid-stream', async () => {
    const disconnectsBefore = await metricSum(t.url, 'kvroute_client_disconnects_total');
    const controller = new AbortController();
    const stream = await t.client.completions.create({ model: MODEL, prompt: prompt(64, 8), max_tokens: 100_000, stream: true }, { signal: controller.signal });
    let seen = 0;
    for await (const _chunk of stream) {
      if (++seen === 3) {
        controller.abort(); // the client goes away mid-stream
        break;
      }
    }
    expect(seen).toBe(3);
    await waitFor(async () => (await metricSum(t.url, 'kvroute_client_disconnects_total')) > disconnectsBefore, 'the disconnect to be seen');
    await waitForNoLoad(t.url);
  });

  it('sends repeated prompts with a shared prefix to the worker holding it (cached_tokens)', async () => {
    const shared = prompt(320, 9); // 20 blocks
    const first = await t.client.completions.create({ model: MODEL, prompt: `${shared}first`, max_tokens: 2 }).withResponse();
    const holder = first.response.headers.get('x-kvroute-prefill-worker');
    // The prefill worker's KV events reach the index: the router now predicts the overlap.
    await waitFor(async () => {
      const r = await fetch(`${t.url}/v1/route`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL, prompt: `${shared}again` }),
      });
      const e = (await r.json()) as { prefill: { worker: number; overlap_blocks: number } };
      return e.prefill.overlap_blocks >= 20 && String(e.prefill.worker) === holder;
    }, 'the shared prefix to be indexed');
    for (let i = 0; i < 3; i++) {
      const { data, response } = await t.client.completions.create({ model: MODEL, prompt: `${shared}variant ${i}`, max_tokens: 2 }).withResponse();
      expect(response.headers.get('x-kvroute-prefill-worker')).toBe(holder);
      expect(Number(response.headers.get('x-kvroute-overlap-blocks'))).toBeGreaterThanOrEqual(20);
      const cached = (data.usage as { prompt_tokens_details?: { cached_tokens?: number } }).prompt_tokens_details?.cached_tokens ?? 0;
      expect(cached).toBeGreaterThanOrEqual(320);
    }
  });
});

describe('a worker killed mid-stream', () => {
  let t: TestRouter;
  beforeAll(async () => {
    t = await startTestRouter({ prefill: 0, decode: 1, speedup: 20 });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('gives the client a clean error and frees the booking', async () => {
    const stream = await t.client.completions.create({ model: MODEL, prompt: prompt(64, 11), max_tokens: 100_000, stream: true });
    let seen = 0;
    const consumed = (async () => {
      for await (const _chunk of stream) {
        if (++seen === 3) void t.fleet.sim[0].close();
      }
    })();
    await expect(consumed).rejects.toThrow(/engine/i);
    await waitForNoLoad(t.url);
    // Nothing can serve any more once health checks see it gone.
    await t.router.checkHealth();
    const res = await fetch(`${t.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, prompt: 'x' }),
    });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
  });
});

/** Records the token ids the workers' engine models generate for requests whose engine id starts with `requestId`, in order. */
function recordGeneratedTokens(workers: SimWorker[], requestId: string): { tokenIds: number[]; stop(): void } {
  const tokenIds: number[] = [];
  const restores = workers.map((w) => {
    const model = w.model;
    const step = model.step;
    model.step = (nowMs) => {
      const r = step.call(model, nowMs);
      for (const out of r?.outputs ?? []) if (out.id.startsWith(requestId)) tokenIds.push(out.tokenId);
      return r;
    };
    return () => {
      model.step = step;
    };
  });
  return { tokenIds, stop: () => restores.forEach((restore) => restore()) };
}
