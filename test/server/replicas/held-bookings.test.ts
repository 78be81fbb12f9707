// ReplicaSync's own bookings (held in a SteadyMap, src/util/steady-map.ts): counted per pool and
// request, freed once, swept when stale while the sweep frees them, announced whole. No NATS is
// reachable here: the bookings are held whatever the connection.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RemoteBookingStats } from '../../../src/core/routing-core.js';
import { parseRouterConfig } from '../../../src/server/index.js';
import { ReplicaSync, type RemoteBookingCore } from '../../../src/server/replicas/sync.js';
import { silentLogger } from '../../../src/util/logger.js';

const idleCore: RemoteBookingCore = {
  applyRemoteBooking: () => true,
  markRemotePrefillCompleted: () => true,
  freeRemote: () => true,
  dropReplica: () => 0,
  remoteStats: (): RemoteBookingStats => ({ booked: 0, freed: 0, expired: 0, dropped: 0, active: 0, replicas: [] }),
};

async function unconnectedSync(): Promise<ReplicaSync> {
  const input = {
    model: 'm',
    workers: [{ id: 0, role: 'aggregated' as const, kind: 'vllm' as const, baseUrl: 'http://127.0.0.1:9' }],
    replicas: { nats: 'nats://127.0.0.1:1', connectTimeoutMs: 100 },
  };
  const config = parseRouterConfig(input).replicas!;
  return ReplicaSync.start({ config, model: 'm', cores: { prefill: idleCore, decode: idleCore }, log: silentLogger }, true);
}

const booking = (pool: 'prefill' | 'decode', requestId: string) => ({
  pool,
  requestId,
  worker: 0,
  dpRank: 0,
  promptTokens: 64,
  overlapBlocks: 0,
  hashes: new Uint8Array(32),
});
const held = (s: ReplicaSync) => s.stats().localBookings;

describe('ReplicaSync: its own bookings', () => {
  let sync: ReplicaSync | undefined;
  afterEach(async () => {
    vi.restoreAllMocks();
    await sync?.close();
  });

  it('holds one booking per pool and request, frees each once, and ignores requests it does not hold', async () => {
    sync = await unconnectedSync();
    sync.booked(booking('prefill', 'r1'));
    sync.booked(booking('decode', 'r1'));
    sync.booked(booking('decode', 'r2'));
    expect(held(sync)).toBe(3);
    sync.prefillDone('decode', 'nobody');
    sync.freed('decode', 'nobody');
    sync.freed('prefill', 'r1');
    sync.freed('prefill', 'r1');
    expect(held(sync)).toBe(2);
    sync.freed('decode', 'r1');
    sync.freed('decode', 'r2');
    expect(held(sync)).toBe(0);
  });

  it('holds thousands coming and going, and the stale sweep frees exactly the untouched ones', async () => {
    let now = 1_000_000;
    vi.spyOn(Date, 'now').mockImplementation(() => now);
    sync = await unconnectedSync();
    for (let i = 0; i < 5000; i++) {
      sync.booked(booking(i % 2 === 0 ? 'prefill' : 'decode', `old-${i}`));
      if (i >= 64) sync.freed((i - 64) % 2 === 0 ? 'prefill' : 'decode', `old-${i - 64}`);
    }
    expect(held(sync)).toBe(64);
    now += 10_000;
    // Touched since: a prefill done counts as a change.
    sync.prefillDone('decode', 'old-4999'); // 4999 is odd: a decode booking
    for (let i = 0; i < 300; i++) sync.booked(booking('decode', `new-${i}`));
    expect(sync.sweepStale(5_000)).toBe(63);
    expect(held(sync)).toBe(301);
    expect(sync.sweepStale(5_000)).toBe(0);
    now += 10_000;
    expect(sync.sweepStale(5_000)).toBe(301);
    expect(held(sync)).toBe(0);
  });
});
