// WarmStart alone: which restored streams resume, which restored blocks are dropped, and when the
// replica reports ready.
import { describe, expect, it } from 'vitest';
import { WarmStart } from '../../../src/server/replicas/warm-start.js';
import type { SnapshotLoad } from '../../../src/server/replicas/snapshot-load.js';
import { silentLogger } from '../../../src/util/logger.js';

function restored(): SnapshotLoad {
  return {
    outcome: 'restored',
    streams: {
      prefill: [{ worker: 1, endpoints: ['tcp://p:1'], lastSeq: [7n] }],
      decode: [
        { worker: 2, endpoints: ['tcp://d:2', 'tcp://d:3'], lastSeq: [5n, null] },
        { worker: 3, endpoints: ['tcp://d:4'], lastSeq: [9n] },
        { worker: 4, endpoints: ['tcp://d:5'], lastSeq: [1n] },
      ],
    },
    fetchMs: 1,
    restoreMs: 1,
  };
}

function warmStart(load: SnapshotLoad | undefined, timeoutMs = 60_000) {
  const dropped: string[] = [];
  const warm = new WarmStart({
    load,
    timeoutMs,
    startedAt: performance.now(),
    log: silentLogger,
    dropWorker: (pool, worker) => dropped.push(`${pool}:${worker}`),
  });
  return { warm, dropped };
}

describe('WarmStart', () => {
  it('resumes a worker whose endpoints match, drops one whose endpoints changed and the workers never subscribed', () => {
    const { warm, dropped } = warmStart(restored());
    expect(warm.claim('decode', 2, ['tcp://d:2', 'tcp://d:3'])).toEqual([5n, null]);
    expect(warm.claim('decode', 2, ['tcp://d:2', 'tcp://d:3'])).toBeUndefined(); // claimed once
    expect(warm.claim('decode', 3, ['tcp://elsewhere:4'])).toBeUndefined();
    expect(warm.claim('prefill', 2, ['tcp://d:2'])).toBeUndefined(); // another pool's worker 2: nothing restored
    expect(dropped).toEqual(['decode:3']);
    warm.workersLoaded();
    expect(dropped.sort()).toEqual(['decode:3', 'decode:4', 'prefill:1']);
    // Nothing tracked: ready at once.
    expect(warm.ready()).toBe(true);
    expect(warm.claim('decode', 4, ['tcp://d:5'])).toBeUndefined();
  });

  it('is ready only once every tracked catch-up settled', async () => {
    const { warm } = warmStart(restored());
    let finish!: () => void;
    warm.track(new Promise<void>((r) => (finish = r)));
    warm.workersLoaded();
    expect(warm.ready()).toBe(false);
    expect(warm.status()).toMatchObject({ state: 'catching_up', outcome: 'restored', pending: 1 });
    finish();
    await new Promise((r) => setTimeout(r, 0));
    expect(warm.ready()).toBe(true);
    expect(warm.status()).toMatchObject({ state: 'ready', pending: 0 });
    expect(warm.status().timedOut).toBeUndefined();
  });

  it('reports ready after its timeout when a catch-up never ends', async () => {
    const { warm } = warmStart(restored(), 50);
    warm.track(new Promise<void>(() => undefined));
    warm.workersLoaded();
    expect(warm.ready()).toBe(false);
    await new Promise((r) => setTimeout(r, 120));
    expect(warm.status()).toMatchObject({ state: 'ready', timedOut: true, pending: 1 });
    warm.close();
  });

  it('is ready at once when off or cold', () => {
    for (const load of [undefined, { outcome: 'absent' as const, reason: 'none yet', fetchMs: 1, restoreMs: 0 }]) {
      const { warm } = warmStart(load);
      expect(warm.ready()).toBe(false); // loading until the configured workers are in
      warm.workersLoaded();
      expect(warm.ready()).toBe(true);
      expect(warm.sample().outcome).toBe(load ? 'absent' : 'off');
    }
  });
});
