// Bookings return to exactly zero after thousands of requests that finish, fail, time out or are
// abandoned in every way a request can end, on each handoff style.
import { afterEach, describe, expect, it } from 'vitest';
import type { EngineKind } from '../../src/engines/types.js';
import type { Directive } from '../engines/fake-engine.js';
import { type Fleet, request, startFleet, until, zeroTotals } from './harness.js';

let fleet: Fleet | undefined;
afterEach(async () => {
  await fleet?.close();
  fleet = undefined;
});

/** xorshift32: a reproducible mix. */
function rng(seed: number) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

type Consumer = 'read' | 'leave-early' | 'abort-mid' | 'never-read' | 'abort-before';

interface Plan {
  prefill?: Directive;
  decode?: Directive;
  stream: boolean;
  consumer: Consumer;
}

function plan(r: () => number): Plan {
  const pick = <T>(items: Array<[number, T]>): T => {
    let x = r() * items.reduce((s, [w]) => s + w, 0);
    for (const [w, v] of items) if ((x -= w) < 0) return v;
    return items[items.length - 1][1];
  };
  return {
    prefill: pick<Directive | undefined>([
      [70, undefined],
      [10, 'fail'],
      [2, 'hang'],
      [5, 'eos'],
      [5, 'break'],
      [8, 'slow'],
    ]),
    decode: pick<Directive | undefined>([
      [70, undefined],
      [10, 'fail'],
      [2, 'hang'],
      [10, 'break'],
      [8, 'slow'],
    ]),
    stream: r() < 0.75,
    consumer: pick<Consumer>([
      [60, 'read'],
      [15, 'leave-early'],
      [10, 'abort-mid'],
      [3, 'never-read'],
      [12, 'abort-before'],
    ]),
  };
}

async function runOne(f: Fleet, p: Plan): Promise<string> {
  const ac = new AbortController();
  const req = request({
    signal: ac.signal,
    tokens: Uint32Array.of(1, 2, 3, 4, 5, 6, 7, 8),
    body: { model: 'fake', prompt: [1, 2, 3, 4, 5, 6, 7, 8], max_tokens: 4, stream: p.stream, x_fake: { prefill: p.prefill, decode: p.decode } },
  });
  if (p.consumer === 'abort-before') setTimeout(() => ac.abort(), 1);
  try {
    const res = await f.router.handle(req);
    if (!res.stream) return 'json';
    const it = res.stream[Symbol.asyncIterator]();
    if (p.consumer === 'never-read') return 'never-read';
    await it.next();
    if (p.consumer === 'leave-early') {
      await it.return?.();
      return 'left';
    }
    if (p.consumer === 'abort-mid') ac.abort();
    while (!(await it.next()).done);
    return 'read';
  } catch (err) {
    return (err as Error).name;
  }
}

describe.each<EngineKind>(['vllm', 'sglang', 'trtllm'])('%s: bookings after many requests', (kind) => {
  it('return to exactly zero', async () => {
    const f = await startFleet({
      kind,
      prefill: 2,
      decode: 2,
      client: { firstByteTimeoutMs: 300, idleTimeoutMs: 2_000 },
      abandonAfterMs: 200,
      releaseTimeoutMs: 500,
    });
    fleet = f;
    const r = rng(kind.length * 7919);
    const total = kind === 'vllm' ? 1200 : 600;
    const outcomes = new Map<string, number>();
    let next = 0;
    const worker = async () => {
      while (next < total) {
        next++;
        const o = await runOne(f, plan(r));
        outcomes.set(o, (outcomes.get(o) ?? 0) + 1);
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    await f.router.idle();
    await until(() => zeroTotals(f.prefillCore) && zeroTotals(f.decodeCore), 'every booking to be freed', 15_000);
    expect(f.prefillCore.stats().active).toBe(0);
    expect(f.decodeCore.stats().active).toBe(0);
    expect(f.decodeCore.stats().booked).toBe(f.decodeCore.stats().freed);
    // The mix really covered each way of ending.
    for (const o of ['read', 'json', 'left', 'never-read', 'AbortError', 'EngineError'])
      expect(outcomes.get(o) ?? 0, `${o} in ${[...outcomes]}`).toBeGreaterThan(0);
    expect(f.router.stats().fallbacks).toBeGreaterThan(0);
  }, 120_000);
});
