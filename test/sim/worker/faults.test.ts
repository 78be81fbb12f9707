import { describe, expect, it } from 'vitest';
import { OpenAiError } from '../../../src/sim/worker/errors.js';
import { FaultState, parseFaultCommand } from '../../../src/sim/worker/faults.js';
import { eventually, post, range, worker } from './helpers.js';
import { connectSubscriber, receiveWithin, replayFrom, seqOf } from './zmq-helpers.js';

describe('FaultState', () => {
  it('fails exactly the next n requests', () => {
    const f = new FaultState();
    f.failNext(2);
    expect([f.takeFailure(), f.takeFailure(), f.takeFailure()]).toEqual([true, true, false]);
    expect(f.injectedFailures).toBe(2);
    expect(f.pendingFailures).toBe(0);
  });

  it('refuses bad counts and slow factors', () => {
    const f = new FaultState();
    expect(() => f.failNext(-1)).toThrow(RangeError);
    expect(() => f.failNext(1.5)).toThrow(RangeError);
    expect(() => f.setSlow(0)).toThrow(RangeError);
    expect(() => f.setSlow(Number.NaN)).toThrow(RangeError);
    f.setSlow(3);
    expect(f.slowFactor).toBe(3);
  });
});

describe('parseFaultCommand', () => {
  it('accepts every documented switch', () => {
    expect(parseFaultCommand({ fail_next: 2, hang: true, slow: 4, drop_events: 1, restart: true })).toEqual({
      fail_next: 2,
      hang: true,
      slow: 4,
      drop_events: 1,
      restart: true,
    });
    expect(parseFaultCommand({})).toEqual({});
  });

  it('refuses unknown switches and bad values as 400s', () => {
    for (const bad of [
      { explode: true },
      { fail_next: -1 },
      { fail_next: 'x' },
      { hang: 1 },
      { slow: 0 },
      { slow: 'fast' },
      { drop_events: 0.5 },
      { restart: 'now' },
    ]) {
      let err: unknown;
      try {
        parseFaultCommand(bad);
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify(bad)).toBeInstanceOf(OpenAiError);
      expect((err as OpenAiError).status).toBe(400);
    }
  });
});

describe('fault switches of a running worker', () => {
  it('fails the next N requests with OpenAI-style 500s, then serves again', async () => {
    const w = await worker();
    w.faults.failNext(2);
    for (let i = 0; i < 2; i++) {
      const r = await post(`${w.url}/v1/completions`, { prompt: [1, 2, 3], max_tokens: 1 });
      expect(r.status).toBe(500);
      expect(r.json.error).toEqual({ message: expect.stringMatching(/injected/), type: 'server_error', code: 'injected_fault' });
    }
    expect((await post(`${w.url}/v1/completions`, { prompt: [1, 2, 3], max_tokens: 1 })).status).toBe(200);
  });

  it('takes the same switches through POST /admin/faults and refuses bad ones', async () => {
    const w = await worker();
    const set = await post(`${w.url}/admin/faults`, { fail_next: 1, slow: 2 });
    expect(set.status).toBe(200);
    expect(set.json).toMatchObject({ fail_next: 1, slow: 2, hang: false });
    expect((await post(`${w.url}/v1/completions`, { prompt: [1], max_tokens: 1 })).status).toBe(500);
    expect((await post(`${w.url}/v1/completions`, { prompt: [1], max_tokens: 1 })).status).toBe(200);
    const bad = await post(`${w.url}/admin/faults`, { fail_next: -3 });
    expect(bad.status).toBe(400);
    expect(bad.json.error.type).toBe('invalid_request_error');
    const status = await (await fetch(`${w.url}/admin/faults`)).json();
    expect(status).toMatchObject({ fail_next: 0, slow: 2, injected_failures: 1 });
  });

  it('hangs: requests (and /health) get no answer until released, then complete', async () => {
    const w = await worker();
    await post(`${w.url}/admin/faults`, { hang: true });
    let answered = false;
    const pending = post(`${w.url}/v1/completions`, { prompt: [4, 5, 6], max_tokens: 2, ignore_eos: true }).then((r) => {
      answered = true;
      return r;
    });
    const health = fetch(`${w.url}/health`).then((r) => r.status);
    // Both requests have reached the worker and are held there, unanswered.
    await eventually(
      async () => ((await (await fetch(`${w.url}/admin/faults`)).json()) as { parked_requests: number }).parked_requests === 2,
      'both requests to be parked',
    );
    expect(answered).toBe(false);
    // The admin endpoint still answers: that is how a test releases the worker.
    expect((await post(`${w.url}/admin/faults`, { hang: false })).status).toBe(200);
    expect((await pending).json.usage.completion_tokens).toBe(2);
    expect(await health).toBe(200);
  });

  it('runs slower by a factor (a huge factor stalls generation)', async () => {
    const w = await worker();
    const control = await worker();
    w.faults.slow(1e9);
    let answered = false;
    const body = { prompt: [4, 5, 6], max_tokens: 1 };
    void post(`${w.url}/v1/completions`, body)
      .then(() => {
        answered = true;
      })
      .catch(() => {});
    // The slowed engine has computed its step (whose token is its answer)...
    await eventually(() => w.model.metrics().steps >= 1, 'the slowed engine to step');
    // ...and the same request on a worker at normal speed, started after it, is fully answered.
    expect((await post(`${control.url}/v1/completions`, body)).status).toBe(200);
    expect(answered).toBe(false);
    expect(() => w.faults.slow(0)).toThrow(RangeError);
  });

  it('drops the next N event batches: subscribers see a gap, replay still has them', async () => {
    const w = await worker();
    let n = 0;
    const { sub } = await connectSubscriber(w.eventsEndpoint, 'kv-events', () => {
      void post(`${w.url}/v1/completions`, { prompt: range(50_000 + 4 * n++, 4), max_tokens: 1 });
    });
    try {
      await eventually(() => w.model.metrics().running + w.model.metrics().waiting === 0, 'probes to finish');
      const before = Number(((await (await fetch(`${w.url}/admin/faults`)).json()) as { next_event_seq: number }).next_event_seq);
      w.faults.dropEvents(2);
      for (let i = 0; i < 3; i++) await post(`${w.url}/v1/completions`, { prompt: range(60_000 + 4 * i, 4), max_tokens: 1 });
      let seq = -1;
      while (seq < before) seq = seqOf((await receiveWithin(sub))[1]);
      expect(seq).toBeGreaterThanOrEqual(before + 2); // before and before + 1 never arrived
      const replayed = (await replayFrom(w.replayEndpoint, before)).slice(0, -1).map((m) => seqOf(m[1]));
      expect(replayed.slice(0, 3)).toEqual([before, before + 1, before + 2]);
    } finally {
      sub.close();
    }
  });

  it('restarts: in-flight requests are cut, the cache is empty, sequence numbers start from 0', async () => {
    const w = await worker();
    const prompt = range(70_000, 12);
    await post(`${w.url}/v1/completions`, { prompt, max_tokens: 1 });
    expect((await post(`${w.url}/v1/completions`, { prompt, max_tokens: 1 })).json.usage.prompt_tokens_details.cached_tokens).toBe(8);
    expect((await replayFrom(w.replayEndpoint, 0)).length).toBeGreaterThan(1);
    w.faults.slow(1e9);
    const cut = post(`${w.url}/v1/completions`, { prompt: [1, 2], max_tokens: 5 }).then(
      () => 'answered',
      () => 'connection dropped',
    );
    await eventually(() => w.model.metrics().running + w.model.metrics().waiting === 1, 'the request to start');
    const oldModel = w.model;
    await w.faults.restart();
    expect(await cut).toBe('connection dropped');
    expect(w.model).not.toBe(oldModel);
    w.faults.slow(1);
    // Only the end marker: nothing buffered since the restart.
    expect(await replayFrom(w.replayEndpoint, 0)).toHaveLength(1);
    const after = await post(`${w.url}/v1/completions`, { prompt, max_tokens: 1 });
    expect(after.json.usage.prompt_tokens_details.cached_tokens).toBe(0);
    const replies = await replayFrom(w.replayEndpoint, 0);
    expect(seqOf(replies[0][1])).toBe(0);
  });
});
