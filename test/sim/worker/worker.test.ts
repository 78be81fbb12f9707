import { Unpackr } from 'msgpackr';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type * as zmq from 'zeromq';
import { KvEventPublisher } from '../../../src/sim/worker/kv-publisher.js';
import { ReplayServer } from '../../../src/sim/worker/replay.js';
import { startSimWorker, type SimWorker } from '../../../src/sim/worker/worker.js';
import { FAST_ENGINE, eventually, post, postStream, range, worker } from './helpers.js';
import { connectSubscriber, receiveWithin, replayFrom, seqOf } from './zmq-helpers.js';

const unpackr = new Unpackr({ useRecords: false, int64AsType: 'bigint', mapsAsObjects: true });

let w: SimWorker;
beforeAll(async () => {
  w = await worker();
});

describe('a simulated worker over HTTP', () => {
  it('serves a non-streamed completion of token ids, with usage and the request id', async () => {
    const r = await post(
      `${w.url}/v1/completions`,
      { prompt: range(1000, 10), max_tokens: 5, ignore_eos: true, model: 'any-model' },
      { 'x-request-id': 'req-1' },
    );
    expect(r.status).toBe(200);
    expect(r.headers.get('x-request-id')).toBe('req-1');
    expect(r.json).toMatchObject({
      id: 'cmpl-req-1',
      object: 'text_completion',
      model: 'any-model',
      choices: [{ index: 0, finish_reason: 'length' }],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, prompt_tokens_details: { cached_tokens: 0 } },
    });
    expect(typeof r.json.choices[0].text).toBe('string');
  });

  it('shows prefix reuse in cached_tokens', async () => {
    const prefix = range(2000, 20); // 5 complete blocks of 4
    const first = await post(`${w.url}/v1/completions`, { prompt: prefix, max_tokens: 1 });
    expect(first.json.usage.prompt_tokens_details.cached_tokens).toBe(0);
    const second = await post(`${w.url}/v1/completions`, { prompt: [...prefix, 7, 7, 7], max_tokens: 1 });
    expect(second.json.usage.prompt_tokens_details.cached_tokens).toBe(20);
    const other = await post(`${w.url}/v1/completions`, { prompt: [...range(2000, 8), 9, 9, 9, 9, 9], max_tokens: 1 });
    expect(other.json.usage.prompt_tokens_details.cached_tokens).toBe(8);
  });

  it('tokenizes text prompts to UTF-8 bytes (the built-in byte tokenizer)', async () => {
    const r = await post(`${w.url}/v1/completions`, { prompt: 'héllo', max_tokens: 1 });
    expect(r.json.usage.prompt_tokens).toBe(6);
  });

  it('respects max_tokens with ignore_eos', async () => {
    const r = await post(`${w.url}/v1/completions`, { prompt: range(3000, 6), max_tokens: 17, ignore_eos: true });
    expect(r.json.usage.completion_tokens).toBe(17);
    expect(r.json.choices[0].finish_reason).toBe('length');
  });

  it('streams exactly as PROTOCOLS.md section 5: data frames, a usage chunk, then [DONE]', async () => {
    const s = await postStream(`${w.url}/v1/completions`, {
      prompt: range(4000, 9),
      max_tokens: 4,
      ignore_eos: true,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(s.status).toBe(200);
    expect(s.headers.get('content-type')).toBe('text/event-stream');
    expect(s.raw.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(s.raw).toBe(s.data.map((d) => `data: ${d}\n\n`).join(''));
    expect(s.data.at(-1)).toBe('[DONE]');
    const tokens = s.chunks.slice(0, -1);
    expect(tokens).toHaveLength(4);
    for (const c of tokens) expect(c).toMatchObject({ object: 'text_completion', choices: [{ index: 0 }] });
    expect(tokens.map((c) => c.choices[0].finish_reason)).toEqual([null, null, null, 'length']);
    const usage = s.chunks.at(-1) as Record<string, any>;
    expect(usage.choices).toEqual([]);
    expect(usage.usage).toEqual({ prompt_tokens: 9, completion_tokens: 4, total_tokens: 13, prompt_tokens_details: { cached_tokens: 0 } });
    expect(new Set(s.chunks.map((c) => c.id)).size).toBe(1);
  });

  it('streams without a usage chunk unless asked', async () => {
    const s = await postStream(`${w.url}/v1/completions`, { prompt: range(4100, 5), max_tokens: 2, ignore_eos: true, stream: true });
    expect(s.chunks).toHaveLength(2);
    expect(s.chunks.every((c) => c.usage === undefined)).toBe(true);
  });

  it('answers chat completions, streamed (role first) and not', async () => {
    const messages = [{ role: 'user', content: 'Hello there' }];
    const full = await post(`${w.url}/v1/chat/completions`, { messages, max_completion_tokens: 3, ignore_eos: true });
    expect(full.json).toMatchObject({
      object: 'chat.completion',
      choices: [{ message: { role: 'assistant' }, finish_reason: 'length' }],
      usage: { completion_tokens: 3 },
    });
    expect(full.json.id).toMatch(/^chatcmpl-/);
    const s = await postStream(`${w.url}/v1/chat/completions`, {
      messages,
      max_tokens: 3,
      ignore_eos: true,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(s.chunks[0].choices[0].delta).toEqual({ role: 'assistant', content: '' });
    expect(s.chunks.slice(1, 4).every((c) => c.object === 'chat.completion.chunk' && typeof c.choices[0].delta.content === 'string')).toBe(true);
    expect(s.chunks[4]).toMatchObject({ choices: [], usage: { completion_tokens: 3 } });
    // The same conversation again: its prompt blocks are cached.
    expect(s.chunks[4].usage.prompt_tokens_details.cached_tokens).toBeGreaterThan(0);
  });

  it('lists its model, answers /health and exposes engine metrics', async () => {
    const models = await (await fetch(`${w.url}/v1/models`)).json();
    expect(models).toMatchObject({ object: 'list', data: [{ id: 'kvroute-sim', object: 'model' }] });
    const health = await fetch(`${w.url}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok', worker_id: w.id, role: 'aggregated' });
    const metrics = await (await fetch(`${w.url}/metrics`)).text();
    for (const name of [
      'vllm:kv_cache_usage_perc',
      'vllm:num_requests_running',
      'vllm:num_requests_waiting',
      'vllm:gpu_prefix_cache_hit_rate',
      'vllm:num_preemptions_total',
    ]) {
      expect(metrics).toContain(`${name}{model_name="kvroute-sim",engine="${w.id}"}`);
    }
    const hitRate = Number(/vllm:gpu_prefix_cache_hit_rate\{[^}]*\} ([\d.e-]+)/.exec(metrics)?.[1]);
    expect(hitRate).toBeGreaterThan(0); // the prefix reuse above
  });

  it('answers bad requests with OpenAI-style errors', async () => {
    const cases: [string, unknown, number][] = [
      ['/v1/completions', '{not json', 400],
      ['/v1/completions', { max_tokens: 3 }, 400],
      ['/v1/completions', { prompt: [1, 'x'] }, 400],
      ['/v1/completions', { prompt: ['a', 'b'] }, 400],
      ['/v1/completions', { prompt: 'x', max_tokens: -1 }, 400],
      ['/v1/completions', { prompt: 'x', stream_options: { include_usage: true } }, 400],
      ['/v1/chat/completions', { messages: [] }, 400],
      ['/v1/completions', { prompt: range(0, FAST_ENGINE.kvBlocks * FAST_ENGINE.blockSize + 1) }, 400], // larger than the whole cache
    ];
    for (const [path, body, status] of cases) {
      const r = await post(`${w.url}${path}`, body);
      expect(r.status, JSON.stringify(body).slice(0, 80)).toBe(status);
      expect(r.json.error).toEqual({ message: expect.any(String), type: 'invalid_request_error', code: expect.any(String) });
    }
    const missing = await fetch(`${w.url}/v1/embeddings`, { method: 'POST', body: '{}' });
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { type: string } }).error.type).toBe('invalid_request_error');
  });

  it('aborts the engine request when the client disconnects', async () => {
    const slow = await worker({ engine: { speedup: 1 } });
    const ac = new AbortController();
    const res = await fetch(`${slow.url}/v1/completions`, {
      method: 'POST',
      body: JSON.stringify({ prompt: range(5000, 8), max_tokens: 100_000, ignore_eos: true, stream: true }),
      signal: ac.signal,
    });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    expect(slow.model.metrics().running).toBe(1);
    ac.abort();
    await eventually(() => slow.model.metrics().running === 0, 'the aborted request to leave the engine');
  });
});

describe('KV events of a simulated worker', () => {
  let ev: SimWorker;
  let sub: zmq.Subscriber;
  let probes = 0;
  beforeAll(async () => {
    ev = await worker({ engine: { blockSize: 4 } });
    // Each probe request stores fresh blocks, so events flow until the subscription is live.
    ({ sub } = await connectSubscriber(ev.eventsEndpoint, 'kv-events', () => {
      void post(`${ev.url}/v1/completions`, { prompt: range(900_000 + 8 * probes++, 8), max_tokens: 1 });
    }));
  });
  afterAll(() => sub.close());

  it('publishes BlockStored for a prompt: 3 frames, increasing seq, the prompt tokens block by block', async () => {
    const prompt = range(6000, 12);
    await post(`${ev.url}/v1/completions`, { prompt, max_tokens: 1 });
    const stored: Record<string, any>[] = [];
    let lastSeq = -1;
    while (stored.flatMap((e) => e.token_ids).length < 12 || !stored.some((e) => e.token_ids.includes(6011))) {
      const msg = await receiveWithin(sub);
      expect(msg).toHaveLength(3);
      expect(msg[0].toString()).toBe('kv-events');
      const seq = seqOf(msg[1]);
      expect(seq).toBeGreaterThan(lastSeq);
      lastSeq = seq;
      const [ts, events, dp] = unpackr.unpack(msg[2]) as [number, Record<string, any>[], number];
      expect(typeof ts).toBe('number');
      expect(dp).toBe(0);
      for (const e of events) if (e.type === 'BlockStored' && e.token_ids[0] >= 6000 && e.token_ids[0] < 6012) stored.push(e);
    }
    expect(stored.flatMap((e) => e.token_ids)).toEqual(prompt);
    for (const e of stored) {
      expect(e).toMatchObject({ block_size: 4, medium: 'GPU', lora_name: null });
      expect(e.token_ids).toHaveLength(4 * e.block_hashes.length);
    }
    // Blocks chain: each stored run's parent is the previous run's last block (the first has none).
    const hashes = stored.flatMap((e) => e.block_hashes.map((h: number | bigint) => BigInt(h)));
    expect(new Set(hashes).size).toBe(3);
    expect(stored[0].parent_block_hash).toBeNull();
  });

  it('replays buffered batches from a sequence number, then the end marker', async () => {
    const replies = await replayFrom(ev.replayEndpoint, 0);
    const end = replies.at(-1) as Buffer[];
    expect(end[1].toString('hex')).toBe('ffffffffffffffff');
    expect(end[2]).toHaveLength(0);
    const seqs = replies.slice(0, -1).map((m) => seqOf(m[1]));
    expect(seqs.length).toBeGreaterThan(0);
    expect(seqs).toEqual(range(0, seqs.length));
    const later = await replayFrom(ev.replayEndpoint, seqs.length - 1);
    expect(later.map((m) => seqOf(m[1]))[0]).toBe(seqs.length - 1);
  });

  it('sends AllBlocksCleared when the prefix cache is reset', async () => {
    const r = await fetch(`${ev.url}/reset_prefix_cache`, { method: 'POST' });
    expect(r.status).toBe(200);
    for (;;) {
      const [, , payload] = await receiveWithin(sub);
      const [, events] = unpackr.unpack(payload) as [number, Record<string, any>[]];
      if (events.some((e) => e.type === 'AllBlocksCleared')) break;
    }
    const again = await post(`${ev.url}/v1/completions`, { prompt: range(6000, 12), max_tokens: 1 });
    expect(again.json.usage.prompt_tokens_details.cached_tokens).toBe(0);
  });

  it('uses the legacy positional encoding when asked', async () => {
    const legacy = await startSimWorker({ id: 99, eventEncoding: 'array', engine: FAST_ENGINE });
    try {
      let n = 0;
      const { sub: s, probed } = await connectSubscriber(legacy.eventsEndpoint, '', () => {
        void post(`${legacy.url}/v1/completions`, { prompt: range(700_000 + 8 * n++, 8), max_tokens: 1 });
      });
      s.close();
      const [, events] = unpackr.unpack(probed[0][2]) as [number, unknown[][]];
      expect(events[0][0]).toBe('BlockStored');
      expect(events[0]).toHaveLength(7);
    } finally {
      await legacy.close();
    }
  });
});

describe('startSimWorker options', () => {
  it('refuses bad options with TypeError or RangeError before taking ports', async () => {
    await expect(startSimWorker({ id: -1 })).rejects.toThrow(RangeError);
    await expect(startSimWorker({ id: 1, role: 'router' as never })).rejects.toThrow(/role must be one of/);
    await expect(startSimWorker({ id: 1, pdStyle: 'tgi' as never })).rejects.toThrow(RangeError);
    await expect(startSimWorker({ id: 1, httpPort: 70_000 })).rejects.toThrow(RangeError);
    await expect(startSimWorker({ id: 1, eventEncoding: 'json' as never })).rejects.toThrow(RangeError);
    await expect(startSimWorker({ id: 1, topic: 5 as never })).rejects.toThrow(TypeError);
    await expect(startSimWorker({ id: 1, replayBufferSteps: 0 })).rejects.toThrow(RangeError);
    await expect(startSimWorker({ id: 1, loras: [''] })).rejects.toThrow(TypeError);
  });

  it('releases the ports it took when a later bind fails', async () => {
    const taken = await worker();
    const httpPort = Number(new URL(taken.url).port);
    // The event publisher and the replay socket bind first, on ports the OS picks (no probe that
    // another process could race); then the HTTP bind fails on the taken port.
    const publishers = vi.spyOn(KvEventPublisher, 'open');
    const replays = vi.spyOn(ReplayServer, 'open');
    try {
      const failure = await startSimWorker({ id: 5, httpPort, zmqPort: 0, replayPort: 0 }).then(
        () => new Error('startSimWorker should have failed'),
        (err: Error) => err,
      );
      expect(failure.message).toMatch(/cannot listen on 127\.0\.0\.1:\d+ \(the worker's HTTP server\): the port is in use/);
      expect(publishers).toHaveBeenCalledTimes(1);
      expect(replays).toHaveBeenCalledTimes(1);
      const ports = [(await publishers.mock.results[0].value) as KvEventPublisher, (await replays.mock.results[0].value) as ReplayServer].map((s) =>
        Number(s.endpoint.split(':').pop()),
      );
      // libzmq unbinds in its I/O thread, a moment after close() returned: each port comes back
      // soon, not necessarily at once.
      for (const port of ports) {
        const again = await retry(() => KvEventPublisher.open({ host: '127.0.0.1', port, topic: '', encoding: 'map', replayBufferSteps: 1 }), 10_000);
        await again.close();
      }
    } finally {
      publishers.mockRestore();
      replays.mockRestore();
    }
  });

  it('serves LoRA adapters by model name and tags their events', async () => {
    const lw = await worker({ loras: ['my-lora'] });
    const models = (await (await fetch(`${lw.url}/v1/models`)).json()) as { data: { id: string }[] };
    expect(models.data.map((m) => m.id)).toEqual(['kvroute-sim', 'my-lora']);
    const prompt = range(8000, 8);
    await post(`${lw.url}/v1/completions`, { prompt, max_tokens: 1 });
    const withLora = await post(`${lw.url}/v1/completions`, { prompt, max_tokens: 1, model: 'my-lora' });
    // A LoRA adapter does not share the base model's cache.
    expect(withLora.json.usage.prompt_tokens_details.cached_tokens).toBe(0);
    const replies = await replayFrom(lw.replayEndpoint, 0);
    const names = replies
      .slice(0, -1)
      .flatMap((m) => (unpackr.unpack(m[2]) as [number, Record<string, any>[]])[1])
      .filter((e) => e.type === 'BlockStored')
      .map((e) => e.lora_name);
    expect(names).toContain('my-lora');
    expect(names).toContain(null);
  });
});

/** `attempt` until it resolves, for at most `ms`; then its last failure. */
async function retry<T>(attempt: () => Promise<T>, ms: number): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await attempt();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}
