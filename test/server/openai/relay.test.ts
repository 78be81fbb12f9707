import { describe, expect, it } from 'vitest';
import { transportError } from '../../../src/engines/errors.js';
import { EventCursor } from '../../../src/engines/event-batch.js';
import { RouterMetrics } from '../../../src/server/observability/metrics.js';
import { relayStream, type RelayOptions, type SseEvent } from '../../../src/server/openai/relay.js';

async function* events(list: Array<SseEvent | Error>): AsyncGenerator<SseEvent> {
  for (const e of list) {
    if (e instanceof Error) throw e;
    yield e;
  }
}

const chunk = (text: string, extra: object = {}) => ({
  data: JSON.stringify({ id: 'cmpl-1', object: 'text_completion', choices: [{ index: 0, text, finish_reason: null }], ...extra }),
});
const usageChunk = {
  data: JSON.stringify({
    id: 'cmpl-1',
    object: 'text_completion',
    choices: [],
    usage: { prompt_tokens: 10, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 4 } },
  }),
};

function options(over: Partial<RelayOptions> = {}) {
  const ends: number[] = [];
  let aborted = 0;
  const metrics = new RouterMetrics();
  const o: RelayOptions = {
    route: '/v1/completions',
    model: 'm',
    chat: false,
    clientWantsUsage: true,
    startedAt: performance.now(),
    metrics,
    abort: () => aborted++,
    onEnd: (status) => ends.push(status),
    ...over,
  };
  return { o, ends, metrics, aborted: () => aborted };
}

async function drain(s: { next(): Promise<string | null> }): Promise<string[]> {
  const out: string[] = [];
  for (let f = await s.next(); f !== null; f = await s.next()) out.push(f);
  return out;
}

describe('relayStream', () => {
  it('relays completions chunks verbatim and ends once after [DONE]', async () => {
    const { o, ends, metrics } = options();
    const a = chunk('a');
    const frames = await drain(relayStream(events([a, usageChunk, { data: '[DONE]' }]), o));
    expect(frames).toEqual([`data: ${a.data}\n\n`, `data: ${usageChunk.data}\n\n`, 'data: [DONE]\n\n']);
    expect(ends).toEqual([200]);
    const text = await metrics.render();
    expect(text).toMatch(/kvroute_requests_total\{route="\/v1\/completions",model="m",status="200"\} 1/);
    expect(text).toMatch(/kvroute_output_tokens_total 2/);
    expect(text).toMatch(/kvroute_cached_tokens_total 4/);
    expect(text).toMatch(/kvroute_time_to_first_token_seconds_count\{route="\/v1\/completions",model="m"\} 1/);
  });

  it('relays a batch of events (one engine read) as one string of frames, stopping at an in-stream error', async () => {
    const { o, ends } = options({ clientWantsUsage: false });
    const a = chunk('a');
    const b = chunk('b');
    const failed = { data: JSON.stringify({ error: { message: 'out of memory', code: 507 } }) };
    const batches: SseEvent[][] = [
      [a, usageChunk, b],
      [failed, chunk('never')],
    ];
    let reads = 0;
    const source = { [Symbol.asyncIterator]: () => new EventCursor(async () => (reads < batches.length ? batches[reads++] : null)) };
    const frames = await drain(relayStream(source, o));
    expect(frames).toEqual([`data: ${a.data}\n\ndata: ${b.data}\n\n`, `data: ${failed.data}\n\n`]);
    expect(ends).toEqual([507]);
  });

  it('drops the usage chunk the client did not ask for, and adds a missing [DONE]', async () => {
    const { o, ends } = options({ clientWantsUsage: false });
    const frames = await drain(relayStream(events([chunk('a'), chunk('b'), usageChunk]), o));
    expect(frames.length).toBe(3);
    expect(frames.at(-1)).toBe('data: [DONE]\n\n');
    expect(frames.join('')).not.toContain('"usage"');
    expect(ends).toEqual([200]);
  });

  it('converts chunks to chat format', async () => {
    const { o } = options({ chat: true, route: '/v1/chat/completions' });
    const frames = await drain(relayStream(events([chunk('hi'), { data: '[DONE]' }]), o));
    const first = JSON.parse(frames[0].slice(6)) as { object: string; choices: Array<{ delta: object }> };
    expect(first.object).toBe('chat.completion.chunk');
    expect(first.choices[0].delta).toEqual({ role: 'assistant', content: 'hi' });
  });

  it('turns an engine failure mid-stream into one error frame and the end', async () => {
    const { o, ends } = options();
    const failure = transportError('engine_stream_broken', 'http://127.0.0.1:9', 'socket hang up');
    const frames = await drain(relayStream(events([chunk('a'), failure]), o));
    expect(frames.length).toBe(2);
    const err = JSON.parse(frames[1].slice(6)) as { error: { message: string; code: string } };
    // The client learns what failed; the transport's own words (and the URL) are for the log.
    expect(err.error).toEqual({ message: 'engine connection broke mid-response (the engine)', type: 'engine_error', code: 'engine_stream_broken' });
    expect(ends).toEqual([502]);
  });

  it('cancel aborts the engine legs, closes the source and ends once with 499', async () => {
    const { o, ends, aborted } = options();
    let closed = false;
    async function* endless(): AsyncGenerator<SseEvent> {
      try {
        for (;;) yield chunk('x');
      } finally {
        closed = true;
      }
    }
    const s = relayStream(endless(), o);
    await s.next();
    s.cancel();
    s.cancel();
    expect(await s.next()).toBeNull();
    await new Promise((r) => setImmediate(r));
    expect(closed).toBe(true);
    expect(aborted()).toBe(1);
    expect(ends).toEqual([499]);
  });
});
