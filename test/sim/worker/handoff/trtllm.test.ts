// TensorRT-LLM handoff end to end: context_only, then generation_only with the opaque state
// (PROTOCOLS.md 3c).
import { beforeAll, describe, expect, it } from 'vitest';
import type { SimWorker } from '../../../../src/sim/worker/worker.js';
import { post, postStream, range, worker } from '../helpers.js';

let ctxWorker: SimWorker;
let genWorker: SimWorker;
beforeAll(async () => {
  ctxWorker = await worker({ role: 'prefill', pdStyle: 'trtllm' });
  genWorker = await worker({ role: 'decode', pdStyle: 'trtllm' });
});

describe('TensorRT-LLM context/generation handoff', () => {
  it('context_only returns disaggregated_params that a generation_only request consumes', async () => {
    const messages = [{ role: 'user', content: 'Tell me about KV caches, please.' }];
    const ctx = await post(`${ctxWorker.url}/v1/chat/completions`, {
      messages,
      max_tokens: 8,
      ignore_eos: true,
      disaggregated_params: { request_type: 'context_only' },
    });
    expect(ctx.status).toBe(200);
    const choice = ctx.json.choices[0];
    expect(choice.finish_reason).toBe('length');
    expect(choice.disaggregated_params).toMatchObject({
      request_type: 'context_only',
      first_gen_tokens: [expect.any(Number)],
      ctx_request_id: expect.any(Number),
      encoded_opaque_state: expect.stringMatching(/^[A-Za-z0-9+/]+=*$/),
    });
    const gen = await postStream(`${genWorker.url}/v1/chat/completions`, {
      messages,
      max_tokens: 8,
      ignore_eos: true,
      stream: true,
      stream_options: { include_usage: true },
      disaggregated_params: { ...choice.disaggregated_params, request_type: 'generation_only' },
    });
    expect(gen.status).toBe(200);
    expect(gen.data.at(-1)).toBe('[DONE]');
    expect(gen.chunks.at(-1)?.usage.completion_tokens).toBe(8);
    // The context was pulled once: a second generation leg with the same state fails.
    const again = await post(`${genWorker.url}/v1/chat/completions`, {
      messages,
      max_tokens: 2,
      disaggregated_params: { ...choice.disaggregated_params, request_type: 'generation_only' },
    });
    expect(again.status).toBe(500);
    expect(again.json.error.code).toBe('kv_transfer_failed');
  });

  it('refuses wrong request types and forged opaque state', async () => {
    const base = { prompt: range(30_000, 6), max_tokens: 2 };
    const cases: [string, Record<string, unknown>, string][] = [
      [ctxWorker.url, {}, 'missing_disaggregated_params'],
      [ctxWorker.url, { disaggregated_params: { request_type: 'generation_only' } }, 'invalid_disaggregated_params'],
      [genWorker.url, { disaggregated_params: { request_type: 'context_only' } }, 'invalid_disaggregated_params'],
      [genWorker.url, { disaggregated_params: { request_type: 'generation_only', encoded_opaque_state: 'bm90IGpzb24=' } }, 'invalid_opaque_state'],
      [genWorker.url, { disaggregated_params: { request_type: 'generation_only' } }, 'invalid_opaque_state'],
      [genWorker.url, { disaggregated_params: 'context_only' }, 'invalid_disaggregated_params'],
    ];
    for (const [url, extra, code] of cases) {
      const r = await post(`${url}/v1/completions`, { ...base, ...extra });
      expect(r.status, JSON.stringify(extra)).toBe(400);
      expect(r.json.error.code).toBe(code);
    }
  });

  it('serves a plain request on the generation worker', async () => {
    const r = await post(`${genWorker.url}/v1/completions`, { prompt: range(31_000, 6), max_tokens: 2 });
    expect(r.status).toBe(200);
  });
});
