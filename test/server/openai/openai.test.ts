// The official openai client, streamed and not, through the uWebSockets.js frontend to the
// simulated fleet: aggregated, and disaggregated in each handoff style.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EngineKind } from '../../../src/server/config/config.js';
import { MODEL, bookedLoad, prompt, startTestRouter, waitForNoLoad, type TestRouter } from '../helpers/router.js';

const SHAPES: Array<{ name: string; prefill: number; style: EngineKind }> = [
  { name: 'aggregated', prefill: 0, style: 'vllm' },
  { name: 'vllm', prefill: 1, style: 'vllm' },
  { name: 'sglang', prefill: 1, style: 'sglang' },
  { name: 'trtllm', prefill: 1, style: 'trtllm' },
];

describe.each(SHAPES)('openai client against $name serving', ({ prefill, style }) => {
  let t: TestRouter;
  const disaggregated = prefill > 0;

  beforeAll(async () => {
    t = await startTestRouter({ prefill, decode: disaggregated ? 1 : 2, style });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('completes without streaming, naming the workers in the headers', async () => {
    const { data, response } = await t.client.completions.create({ model: MODEL, prompt: prompt(80, 1), max_tokens: 6 }).withResponse();
    expect(data.object).toBe('text_completion');
    expect(data.choices[0].text.length).toBeGreaterThan(0);
    expect(data.usage?.prompt_tokens).toBe(80);
    expect(data.usage?.completion_tokens).toBe(6);
    expect(response.headers.get('x-request-id')).toBeTruthy();
    expect(response.headers.get('x-kvroute-decode-worker')).toMatch(/^\d+$/);
    expect(response.headers.get('x-kvroute-mode')).toBe(disaggregated ? 'disaggregated' : 'aggregated');
    if (disaggregated) expect(response.headers.get('x-kvroute-prefill-worker')).toBe('0');
    expect(response.headers.get('x-kvroute-overlap-blocks')).toMatch(/^\d+$/);
  });

  it('streams completions chunk by chunk with usage at the end', async () => {
    const stream = await t.client.completions.create({
      model: MODEL,
      prompt: prompt(64, 2),
      max_tokens: 8,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: { completion_tokens: number } | undefined;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      if (chunk.choices[0]) text += chunk.choices[0].text;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(chunks).toBeGreaterThanOrEqual(2);
    expect(text.length).toBeGreaterThan(0);
    expect(usage?.completion_tokens).toBe(8);
  });

  it('answers chat completions, streamed and not, in the chat format', async () => {
    const messages = [{ role: 'user' as const, content: `Say something about ${prompt(40, 3)}` }];
    const full = await t.client.chat.completions.create({ model: MODEL, messages, max_tokens: 5 });
    expect(full.object).toBe('chat.completion');
    expect(full.choices[0].message.role).toBe('assistant');
    expect(typeof full.choices[0].message.content).toBe('string');
    expect(full.usage?.completion_tokens).toBe(5);

    const stream = await t.client.chat.completions.create({ model: MODEL, messages, max_tokens: 5, stream: true });
    const deltas: string[] = [];
    let role: string | undefined;
    let finish: string | null = null;
    for await (const chunk of stream) {
      expect(chunk.object).toBe('chat.completion.chunk');
      const c = chunk.choices[0];
      if (!c) continue;
      role ??= c.delta.role;
      if (c.delta.content) deltas.push(c.delta.content);
      finish = c.finish_reason ?? finish;
    }
    expect(role).toBe('assistant');
    expect(deltas.length).toBeGreaterThan(0);
    expect(finish).toBe('length');
  });

  it('books each request while it runs and frees every booking once the requests are over', async () => {
    // A stream far longer than the test: while it runs, its booking shows in the load gauges.
    const controller = new AbortController();
    const long = await t.client.completions.create({ model: MODEL, prompt: prompt(96, 4), max_tokens: 100_000, stream: true }, { signal: controller.signal });
    const tokens = long[Symbol.asyncIterator]();
    expect((await tokens.next()).done).toBe(false);
    const running = await bookedLoad(t.url);
    expect(running.requests).toBeGreaterThanOrEqual(1);
    expect(running.decodeBlocks).toBeGreaterThan(0);

    // Requests that end normally, each way, next to it; then the long one's client leaves.
    await t.client.completions.create({ model: MODEL, prompt: prompt(80, 5), max_tokens: 3 });
    for await (const _chunk of await t.client.completions.create({ model: MODEL, prompt: prompt(80, 6), max_tokens: 3, stream: true })) void _chunk;
    await t.client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: prompt(40, 7) }], max_tokens: 3 });
    expect((await bookedLoad(t.url)).requests).toBeGreaterThanOrEqual(1); // the long stream still holds its booking
    controller.abort();
    await tokens.return?.();
    await waitForNoLoad(t.url);
  });
});

describe('approximate indexing (no KV events)', () => {
  let t: TestRouter;
  beforeAll(async () => {
    t = await startTestRouter({ prefill: 0, decode: 2, config: { indexerMode: 'approximate' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('predicts the cache from its own decisions and keeps a shared prefix on one worker', async () => {
    const shared = prompt(256, 21);
    const first = await t.client.completions.create({ model: MODEL, prompt: `${shared}a`, max_tokens: 2 }).withResponse();
    const worker = first.response.headers.get('x-kvroute-decode-worker');
    for (const suffix of ['b', 'c', 'd']) {
      const { response } = await t.client.completions.create({ model: MODEL, prompt: shared + suffix, max_tokens: 2 }).withResponse();
      expect(response.headers.get('x-kvroute-decode-worker')).toBe(worker);
      expect(Number(response.headers.get('x-kvroute-overlap-blocks'))).toBe(16);
    }
    const text = await (await fetch(`${t.url}/metrics`)).text();
    expect(text).not.toMatch(/^kvroute_kv_events_applied_total\{/m); // nothing subscribed
  });
});
