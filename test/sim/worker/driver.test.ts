import { afterEach, describe, expect, it, vi } from 'vitest';
import { EngineDriver, type SteppableModel } from '../../../src/sim/worker/driver.js';

interface Req {
  id: string;
  tokens: number;
}
interface Out {
  id: string;
  tokenId: number;
  finishReason?: string;
}

/** One token per running request per step, each step `stepMs` long, one event per step. */
class FakeModel implements SteppableModel<Req, Out, string> {
  running = new Map<string, { left: number; next: number }>();
  aborted: string[] = [];
  released: string[] = [];
  stepStarts: number[] = [];
  constructor(private readonly stepMs = 10) {}
  submit(req: Req): void {
    if (req.tokens < 1) throw new RangeError('tokens must be >= 1');
    this.running.set(req.id, { left: req.tokens, next: 0 });
  }
  abort(id: string): boolean {
    this.aborted.push(id);
    return this.running.delete(id);
  }
  release(id: string): boolean {
    this.released.push(id);
    return true;
  }
  hasWork(): boolean {
    return this.running.size > 0;
  }
  step(nowMs: number) {
    if (this.running.size === 0) return null;
    this.stepStarts.push(nowMs);
    const outputs: Out[] = [];
    for (const [id, r] of this.running) {
      r.left--;
      outputs.push({ id, tokenId: r.next++, finishReason: r.left === 0 ? 'length' : undefined });
      if (r.left === 0) this.running.delete(id);
    }
    return { startMs: nowMs, durationMs: this.stepMs, outputs, events: [`step@${nowMs}`] };
  }
}

function recorder() {
  const log: string[] = [];
  const sink = (name: string) => ({
    onToken: (o: Out) => log.push(`${name}:${o.tokenId}${o.finishReason ? `:${o.finishReason}` : ''}`),
    onError: (e: Error) => log.push(`${name}:error:${e.message}`),
  });
  return { log, sink };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('EngineDriver', () => {
  it('steps in real time: tokens after each step, the step events first', async () => {
    vi.useFakeTimers({ now: 1_000 });
    const model = new FakeModel(10);
    const { log, sink } = recorder();
    const d = new EngineDriver(model, { onEvents: (ev) => log.push(...ev) });
    d.submit({ id: 'a', tokens: 3 }, sink('a'));
    await vi.advanceTimersByTimeAsync(0);
    expect(log).toEqual([]); // the first step runs; its results wait for its duration
    await vi.advanceTimersByTimeAsync(10);
    expect(log).toEqual(['step@1000', 'a:0']);
    await vi.advanceTimersByTimeAsync(20);
    expect(log).toEqual(['step@1000', 'a:0', 'step@1010', 'a:1', 'step@1020', 'a:2:length']);
    expect(d.activeRequests).toBe(0);
    expect(model.stepStarts).toEqual([1000, 1010, 1020]);
  });

  it('stretches steps by timeScale and the slow factor (read at each step start)', async () => {
    vi.useFakeTimers({ now: 0 });
    const model = new FakeModel(10);
    let slow = 3;
    const { log, sink } = recorder();
    const d = new EngineDriver(model, { onEvents: () => {}, timeScale: 0.5, slowFactor: () => slow });
    d.submit({ id: 'a', tokens: 3 }, sink('a'));
    await vi.advanceTimersByTimeAsync(14);
    expect(log).toEqual([]);
    await vi.advanceTimersByTimeAsync(1); // 10 ms x 0.5 x 3
    expect(log).toEqual(['a:0']);
    slow = 1; // the second step already started at 3x
    await vi.advanceTimersByTimeAsync(15);
    expect(log).toEqual(['a:0', 'a:1']);
    await vi.advanceTimersByTimeAsync(5);
    expect(log).toEqual(['a:0', 'a:1', 'a:2:length']);
  });

  it('keeps engine time exact for sub-millisecond steps instead of rounding each to a timer tick', async () => {
    const model = new FakeModel(0.1);
    const done = new Promise<void>((resolve) => {
      const d = new EngineDriver(model, { onEvents: () => {}, clock: () => 0 });
      d.submit({ id: 'a', tokens: 30 }, { onToken: (o) => o.finishReason && resolve(), onError: () => {} });
    });
    await done;
    model.stepStarts.forEach((t, i) => expect(t).toBeCloseTo(i * 0.1, 9));
  });

  it('aborts a request: the model is told and nothing more is delivered', async () => {
    vi.useFakeTimers({ now: 0 });
    const model = new FakeModel(10);
    const { log, sink } = recorder();
    const d = new EngineDriver(model, { onEvents: () => {} });
    d.submit({ id: 'a', tokens: 5 }, sink('a'));
    d.submit({ id: 'b', tokens: 2 }, sink('b'));
    await vi.advanceTimersByTimeAsync(10);
    expect(d.abort('a')).toBe(true);
    expect(d.abort('a')).toBe(false);
    await vi.advanceTimersByTimeAsync(50);
    expect(model.aborted).toEqual(['a']);
    expect(log).toEqual(['a:0', 'b:0', 'b:1:length']);
  });

  it('pauses (hang) and resumes where it stopped', async () => {
    vi.useFakeTimers({ now: 0 });
    const model = new FakeModel(10);
    const { log, sink } = recorder();
    const d = new EngineDriver(model, { onEvents: () => {} });
    d.submit({ id: 'a', tokens: 3 }, sink('a'));
    await vi.advanceTimersByTimeAsync(10);
    d.setPaused(true);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(log).toEqual(['a:0']);
    d.setPaused(false);
    await vi.advanceTimersByTimeAsync(20);
    expect(log).toEqual(['a:0', 'a:1', 'a:2:length']);
  });

  it('fails every running request when the model is replaced, and drops the old step', async () => {
    vi.useFakeTimers({ now: 0 });
    const old = new FakeModel(10);
    const { log, sink } = recorder();
    const d = new EngineDriver<Req, Out, string>(old, { onEvents: (ev) => log.push(...ev) });
    d.submit({ id: 'a', tokens: 3 }, sink('a'));
    await vi.advanceTimersByTimeAsync(5); // mid-step
    const fresh = new FakeModel(10);
    d.replaceModel(fresh, new Error('restarted'));
    expect(log).toEqual(['a:error:restarted']);
    await vi.advanceTimersByTimeAsync(100);
    expect(log).toEqual(['a:error:restarted']);
    expect(d.model).toBe(fresh);
    d.submit({ id: 'a', tokens: 1 }, sink('a2'));
    await vi.advanceTimersByTimeAsync(10);
    expect(log.slice(1)).toEqual(['step@105', 'a2:0:length']);
  });

  it('restarts engine time with a new model, even after a very long step', async () => {
    vi.useFakeTimers({ now: 0 });
    const { log, sink } = recorder();
    let slow = 1e9;
    const d = new EngineDriver<Req, Out, string>(new FakeModel(10), { onEvents: () => {}, slowFactor: () => slow });
    d.submit({ id: 'a', tokens: 1 }, sink('a'));
    await vi.advanceTimersByTimeAsync(5);
    slow = 1;
    d.replaceModel(new FakeModel(10), new Error('restarted'));
    d.submit({ id: 'b', tokens: 1 }, sink('b'));
    await vi.advanceTimersByTimeAsync(10);
    expect(log).toEqual(['a:error:restarted', 'b:0:length']);
  });

  it('propagates the model refusing a request and refuses duplicate ids', () => {
    const d = new EngineDriver(new FakeModel(), { onEvents: () => {} });
    const { sink } = recorder();
    expect(() => d.submit({ id: 'a', tokens: 0 }, sink('a'))).toThrow(RangeError);
    expect(d.activeRequests).toBe(0);
    d.submit({ id: 'a', tokens: 1 }, sink('a'));
    expect(() => d.submit({ id: 'a', tokens: 1 }, sink('a'))).toThrow(/already running/);
    d.close();
    expect(() => d.submit({ id: 'b', tokens: 1 }, sink('b'))).toThrow(/closed/);
  });

  it('forwards releases to the model', () => {
    const model = new FakeModel();
    const d = new EngineDriver(model, { onEvents: () => {} });
    expect(d.release('p')).toBe(true);
    expect(model.released).toEqual(['p']);
  });
});
