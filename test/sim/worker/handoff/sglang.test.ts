// SGLang bootstrap handoff end to end: both legs at once, meeting by bootstrap_room (PROTOCOLS.md 3b).
import { beforeAll, describe, expect, it } from 'vitest';
import type { SimWorker } from '../../../../src/sim/worker/worker.js';
import { eventually, post, postStream, range, worker } from '../helpers.js';

let prefill: SimWorker;
let decode: SimWorker;
beforeAll(async () => {
  prefill = await worker({ role: 'prefill', pdStyle: 'sglang' });
  decode = await worker({ role: 'decode', pdStyle: 'sglang', handoffWaitMs: 10_000 });
});

const bootstrap = (room: number | string) => ({ bootstrap_host: prefill.bootstrap?.host, bootstrap_port: prefill.bootstrap?.port, bootstrap_room: room });

describe('SGLang prefill/decode handoff', () => {
  it('advertises a bootstrap address on the prefill worker only', () => {
    expect(prefill.bootstrap).toEqual({ host: '127.0.0.1', port: expect.any(Number) });
    expect(decode.bootstrap).toBeUndefined();
  });

  it('runs both legs at once; the client gets the decode stream', async () => {
    const body = {
      prompt: range(20_000, 18),
      max_tokens: 5,
      ignore_eos: true,
      stream: true,
      stream_options: { include_usage: true },
      ...bootstrap(123_456_789),
    };
    const [p, d] = await Promise.all([
      post(`${prefill.url}/v1/completions`, { ...body, stream: false, stream_options: undefined }),
      postStream(`${decode.url}/v1/completions`, body),
    ]);
    expect(p.status).toBe(200);
    expect(p.json.usage.completion_tokens).toBe(1); // the prefill leg stops after its first token
    expect(d.status).toBe(200);
    expect(d.data.at(-1)).toBe('[DONE]');
    expect(d.chunks.at(-1)?.usage).toMatchObject({ prompt_tokens: 18, completion_tokens: 5 });
  });

  it('works whichever leg arrives first, with rooms up to 2^63-1', async () => {
    const room = '9223372036854775807';
    const body = { prompt: range(21_000, 10), max_tokens: 3, ignore_eos: true, ...bootstrap(room) };
    const d = post(`${decode.url}/v1/completions`, body); // decode first: it waits at the bootstrap
    await new Promise((r) => setTimeout(r, 50));
    const p = await post(`${prefill.url}/v1/completions`, body);
    expect(p.status).toBe(200);
    expect((await d).json.usage.completion_tokens).toBe(3);
  });

  it('fails a decode leg whose prefill never comes, after the timeout', async () => {
    const impatient = await worker({ role: 'decode', pdStyle: 'sglang', handoffWaitMs: 200 });
    const r = await post(`${impatient.url}/v1/completions`, { prompt: range(22_000, 8), max_tokens: 2, ...bootstrap(42) });
    expect(r.status).toBe(500);
    expect(r.json.error).toMatchObject({ type: 'server_error', code: 'kv_transfer_failed' });
    expect(impatient.model.metrics().running).toBe(0);
  });

  it('fails the decode leg when the bootstrap address is unreachable', async () => {
    const r = await post(`${decode.url}/v1/completions`, {
      prompt: [1, 2, 3],
      max_tokens: 1,
      bootstrap_host: '127.0.0.1',
      bootstrap_port: 1,
      bootstrap_room: 7,
    });
    expect(r.status).toBe(500);
    expect(r.json.error.message).toMatch(/cannot reach/);
  });

  it('refuses a room already in use, and legs without bootstrap fields', async () => {
    const body = { prompt: range(23_000, 8), max_tokens: 1, ...bootstrap(77) };
    const slowPrefill = await worker({ role: 'prefill', pdStyle: 'sglang', engine: { speedup: 0.01 } });
    const first = fetch(`${slowPrefill.url}/v1/completions`, { method: 'POST', body: JSON.stringify(body) }).catch(() => undefined);
    // The first leg holds the room from before its engine has the request until its blocks are pulled.
    await eventually(() => {
      const m = slowPrefill.model.metrics();
      return m.running + m.waiting + m.heldRequests === 1;
    }, 'the first leg to start');
    const dup = await post(`${slowPrefill.url}/v1/completions`, body);
    expect(dup.status).toBe(409);
    expect(dup.json.error.code).toBe('bootstrap_room_in_use');
    await slowPrefill.close();
    await first;
    for (const [url, extra] of [
      [prefill.url, {}],
      [decode.url, { bootstrap_room: 5 }],
      [decode.url, { bootstrap_room: -1, bootstrap_host: 'h', bootstrap_port: 1 }],
      [decode.url, { bootstrap_room: 5, bootstrap_host: 'h', bootstrap_port: 0 }],
    ] as const) {
      const r = await post(`${url}/v1/completions`, { prompt: [1, 2], max_tokens: 1, ...extra });
      expect(r.status, JSON.stringify(extra)).toBe(400);
      expect(r.json.error.code).toBe('missing_bootstrap');
    }
  });
});
