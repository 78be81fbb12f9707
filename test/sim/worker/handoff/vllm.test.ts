// vLLM NIXL handoff end to end between a simulated prefill and decode worker, driven by hand
// the way a router does it (PROTOCOLS.md 3a).
import { beforeAll, describe, expect, it } from 'vitest';
import type { SimWorker } from '../../../../src/sim/worker/worker.js';
import { eventually, post, postStream, range, worker } from '../helpers.js';

const REQUEST_PARAMS = {
  do_remote_decode: true,
  do_remote_prefill: false,
  remote_engine_id: null,
  remote_block_ids: null,
  remote_host: null,
  remote_port: null,
};

let prefill: SimWorker;
let decode: SimWorker;
beforeAll(async () => {
  prefill = await worker({ role: 'prefill', pdStyle: 'vllm' });
  decode = await worker({ role: 'decode', pdStyle: 'vllm' });
});

const holds = async (w: SimWorker) => Number(/kvroute_sim_kv_holds\{[^}]*\} (\d+)/.exec(await (await fetch(`${w.url}/metrics`)).text())?.[1]);
const recomputes = async (w: SimWorker) => Number(/kvroute_sim_kv_recomputes_total\{[^}]*\} (\d+)/.exec(await (await fetch(`${w.url}/metrics`)).text())?.[1]);

describe('vLLM prefill/decode handoff', () => {
  it('prefill returns kv_transfer_params; decode pulls the KV and streams; the hold is released', async () => {
    const prompt = range(10_000, 22);
    const client = { prompt, max_tokens: 6, ignore_eos: true, stream: true, stream_options: { include_usage: true } };
    const idHeader = { 'x-request-id': 'vllm-e2e-1' };
    const first = await post(
      `${prefill.url}/v1/completions`,
      { ...client, stream: false, stream_options: undefined, max_tokens: 1, kv_transfer_params: REQUEST_PARAMS },
      idHeader,
    );
    expect(first.status).toBe(200);
    const params = first.json.kv_transfer_params;
    expect(params).toEqual({
      do_remote_prefill: true,
      do_remote_decode: false,
      remote_block_ids: expect.any(Array),
      remote_engine_id: expect.any(String),
      remote_request_id: expect.any(String),
      remote_host: '127.0.0.1',
      remote_port: prefill.bootstrap?.port,
      tp_size: 1,
    });
    expect(params.remote_block_ids).toHaveLength(Math.ceil(22 / 4));
    expect(await holds(prefill)).toBe(1);

    const s = await postStream(`${decode.url}/v1/completions`, { ...client, kv_transfer_params: params }, idHeader);
    expect(s.status).toBe(200);
    expect(s.data.at(-1)).toBe('[DONE]');
    const usage = s.chunks.at(-1)?.usage;
    expect(usage).toMatchObject({ prompt_tokens: 22, completion_tokens: 6 });
    expect(await holds(prefill)).toBe(0);
    expect(await recomputes(decode)).toBe(0);
  });

  it('returns null kv_transfer_params when prefill ended on EOS, holding nothing', async () => {
    const eos = await worker({ role: 'prefill', pdStyle: 'vllm', engine: { eosProbability: 1 } });
    const r = await post(`${eos.url}/v1/completions`, { prompt: range(11_000, 9), max_tokens: 1, kv_transfer_params: REQUEST_PARAMS });
    expect(r.status).toBe(200);
    expect(r.json.choices[0].finish_reason).toBe('stop');
    expect(r.json.kv_transfer_params).toBeNull();
    expect(await holds(eos)).toBe(0);
  });

  it('releases a hold nobody pulls after the timeout', async () => {
    const short = await worker({ role: 'prefill', pdStyle: 'vllm', handoffHoldMs: 50 });
    const r = await post(`${short.url}/v1/completions`, { prompt: range(12_000, 9), max_tokens: 1, kv_transfer_params: REQUEST_PARAMS });
    expect(r.json.kv_transfer_params.do_remote_prefill).toBe(true);
    await eventually(async () => (await holds(short)) === 0, 'the hold to expire');
    // A decode that comes too late recomputes the prompt instead of failing.
    const late = await post(`${decode.url}/v1/completions`, { prompt: range(12_000, 9), max_tokens: 2, kv_transfer_params: r.json.kv_transfer_params });
    expect(late.status).toBe(200);
    expect(late.json.usage.completion_tokens).toBeGreaterThan(0);
    expect(await recomputes(decode)).toBe(1);
  });

  it('serves a plain request on the decode worker, and refuses a plain one on the prefill worker', async () => {
    const plain = await post(`${decode.url}/v1/completions`, { prompt: range(13_000, 5), max_tokens: 2 });
    expect(plain.status).toBe(200);
    const refused = await post(`${prefill.url}/v1/completions`, { prompt: range(13_000, 5), max_tokens: 1 });
    expect(refused.status).toBe(400);
    expect(refused.json.error.code).toBe('missing_kv_transfer_params');
  });

  it('refuses malformed kv_transfer_params with 400s', async () => {
    const bad = [
      { url: prefill.url, params: 'yes' },
      { url: prefill.url, params: { do_remote_decode: false } },
      { url: decode.url, params: { do_remote_prefill: true, remote_host: '127.0.0.1', remote_port: 'x', remote_request_id: 'r' } },
      { url: decode.url, params: { do_remote_prefill: true, remote_host: '', remote_port: 80, remote_request_id: 'r' } },
      { url: decode.url, params: { do_remote_prefill: true, remote_host: 'h', remote_port: 80 } },
    ];
    for (const { url, params } of bad) {
      const r = await post(`${url}/v1/completions`, { prompt: [1, 2, 3], max_tokens: 1, kv_transfer_params: params });
      expect(r.status, JSON.stringify(params)).toBe(400);
      expect(r.json.error.type).toBe('invalid_request_error');
    }
  });

  it('frees the hold when the prefill client leaves before the response', async () => {
    const slowPrefill = await worker({ role: 'prefill', pdStyle: 'vllm', engine: { speedup: 1 } });
    const ac = new AbortController();
    const body = { prompt: range(14_000, 9), max_tokens: 100_000, ignore_eos: true, kv_transfer_params: REQUEST_PARAMS };
    const pending = post(`${slowPrefill.url}/v1/completions`, body, {}, ac.signal).catch(() => 'aborted');
    await eventually(() => slowPrefill.model.metrics().running === 1, 'the request to run');
    ac.abort();
    expect(await pending).toBe('aborted');
    await eventually(() => slowPrefill.model.metrics().running === 0, 'the request to be aborted');
    expect(await holds(slowPrefill)).toBe(0);
  });
});
