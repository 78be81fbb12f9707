// A small fleet of fake engines with the real routing stack over it (KvIndexer, RoutingCore,
// WorkerPool, KvRouter, PrefillRouter), for the routing tests.
import { afterEach } from 'vitest';
import { KvIndexer } from '../../src/core/indexer.js';
import { RoutingCore, type PolicyName } from '../../src/core/routing-core.js';
import { EngineClients, type EngineClientOptions } from '../../src/engines/http-client.js';
import { HttpTransport } from '../../src/engines/http-transport.js';
import type { EngineKind, SseEvent, WorkerInfo } from '../../src/engines/types.js';
import type { RoutingHints } from '../../src/routing/hints.js';
import { KvRouter, type KvRouterOptions } from '../../src/routing/kv-router.js';
import type { KvRouterCore } from '../../src/routing/booking.js';
import { PrefillRouter, type PrefillRouterOptions, type PrefillRouterEvent, type RequestDone } from '../../src/routing/prefill-router.js';
import type { RouterRequest } from '../../src/routing/router-request.js';
import { WorkerPool, type WorkerPoolOptions } from '../../src/routing/worker-pool.js';
import { type FakeBehaviour, type FakeEngine, FakeKvWorld, startFakeEngine } from '../engines/fake-engine.js';

export const BLOCK = 4;

export interface FleetOptions {
  kind: EngineKind;
  prefill?: number;
  decode?: number;
  prefillPolicy?: PolicyName;
  decodePolicy?: PolicyName;
  prefillDpSize?: number;
  decodeDpSize?: number;
  prefillBehaviour?: Partial<FakeBehaviour>;
  decodeBehaviour?: Partial<FakeBehaviour>;
  router?: Partial<Omit<PrefillRouterOptions, 'prefill' | 'decode'>>;
  client?: EngineClientOptions;
  abandonAfterMs?: number;
  releaseTimeoutMs?: number;
  trackOutputBlocks?: boolean;
  /** The decode RoutingCore's clock (it is read when the decode leg is booked and freed). */
  decodeClock?: () => number;
  /** Both KvRouters' failover settings. */
  failover?: Pick<KvRouterOptions, 'maxRetries' | 'onRetry'>;
  /** Both pools' options (outlier detection). */
  pools?: WorkerPoolOptions;
  /** What each KvRouter books on (a test may watch the calls); default the pool's core itself. */
  routerCore?: (pool: 'prefill' | 'decode', core: RoutingCore) => KvRouterCore;
}

export interface Fleet {
  world: FakeKvWorld;
  prefillEngines: FakeEngine[];
  decodeEngines: FakeEngine[];
  prefillCore: RoutingCore;
  decodeCore: RoutingCore;
  prefillPool: WorkerPool;
  decodePool: WorkerPool;
  router: PrefillRouter;
  events: PrefillRouterEvent[];
  done: RequestDone[];
  info(engine: FakeEngine): WorkerInfo;
  close(): Promise<void>;
}

/** startFleet for tests that run one fleet at a time: starting one closes the last, and each test's is closed after it. */
export function fleetPerTest(): (o: FleetOptions) => Promise<Fleet> {
  let fleet: Fleet | undefined;
  afterEach(async () => {
    await fleet?.close();
    fleet = undefined;
  });
  return async (o) => {
    await fleet?.close();
    fleet = await startFleet(o);
    return fleet;
  };
}

export async function startFleet(o: FleetOptions): Promise<Fleet> {
  const world = new FakeKvWorld();
  const prefillEngines = await Promise.all(
    Array.from({ length: o.prefill ?? 1 }, (_, i) => startFakeEngine({ id: 100 + i, kind: o.kind, role: 'prefill', world, behaviour: o.prefillBehaviour })),
  );
  const decodeEngines = await Promise.all(
    Array.from({ length: o.decode ?? 1 }, (_, i) => startFakeEngine({ id: 200 + i, kind: o.kind, role: 'decode', world, behaviour: o.decodeBehaviour })),
  );
  const prefillCore = new RoutingCore(new KvIndexer({ blockSize: BLOCK }), { blockSize: BLOCK, policy: o.prefillPolicy ?? 'kv', seed: 1 });
  const decodeCore = new RoutingCore(new KvIndexer({ blockSize: BLOCK }), { blockSize: BLOCK, policy: o.decodePolicy ?? 'kv', seed: 2, clock: o.decodeClock });
  const prefillPool = new WorkerPool('prefill', prefillCore, ['prefill'], o.pools);
  const decodePool = new WorkerPool('decode', decodeCore, ['decode', 'aggregated'], o.pools);
  const info = (e: FakeEngine): WorkerInfo => ({
    id: e.id,
    role: e.role,
    kind: e.kind,
    baseUrl: e.url,
    dpSize: e.role === 'prefill' ? (o.prefillDpSize ?? 1) : (o.decodeDpSize ?? 1),
    ...(e.kind === 'sglang' && e.role === 'prefill' ? { bootstrapHost: e.bootstrapHost, bootstrapPort: e.bootstrapPort } : {}),
  });
  for (const e of prefillEngines) prefillPool.add(info(e));
  for (const e of decodeEngines) decodePool.add(info(e));
  const clients = new EngineClients({ firstByteTimeoutMs: 5_000, idleTimeoutMs: 5_000, ...o.client });
  const legs = {
    transport: new HttpTransport(clients),
    abandonAfterMs: o.abandonAfterMs,
    releaseTimeoutMs: o.releaseTimeoutMs,
    trackOutputBlocks: o.trackOutputBlocks,
    ...o.failover,
  };
  const routerCore = o.routerCore ?? ((_pool, core) => core);
  const events: PrefillRouterEvent[] = [];
  const done: RequestDone[] = [];
  const router = new PrefillRouter({
    prefill: new KvRouter({ core: routerCore('prefill', prefillCore), pool: prefillPool, ...legs }),
    decode: new KvRouter({ core: routerCore('decode', decodeCore), pool: decodePool, ...legs }),
    onEvent: (e) => events.push(e),
    onRequestDone: (d) => done.push(d),
    ...o.router,
  });
  return {
    world,
    prefillEngines,
    decodeEngines,
    prefillCore,
    decodeCore,
    prefillPool,
    decodePool,
    router,
    events,
    done,
    info,
    close: async () => {
      router.close();
      await clients.close();
      await Promise.all([...prefillEngines, ...decodeEngines].map((e) => e.close()));
    },
  };
}

let seq = 0;

/** A request with a fresh id; `tokens` default to 16 (4 blocks). */
export function request(over: Partial<RouterRequest> & { body?: Record<string, unknown>; hints?: RoutingHints } = {}): RouterRequest {
  const tokens = over.tokens ?? Uint32Array.from({ length: 16 }, (_, i) => i + 1);
  return {
    route: '/v1/completions',
    tokens,
    requestId: `req-${++seq}`,
    hints: {},
    signal: new AbortController().signal,
    ...over,
    body: over.body ?? { model: 'fake', prompt: [...tokens], max_tokens: 3 },
  };
}

export async function collect(stream: AsyncIterable<SseEvent> | undefined): Promise<SseEvent[]> {
  if (!stream) throw new Error('no stream');
  const out: SseEvent[] = [];
  for await (const ev of stream) out.push(ev);
  return out;
}

export function zeroTotals(core: RoutingCore): boolean {
  const t = core.totals();
  return t.prefillTokens === 0 && t.decodeBlocks === 0 && t.requests === 0;
}

export async function until(cond: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** The exact JSON digits of a top-level field in a raw body text. */
export function rawField(text: string, field: string): string | undefined {
  return new RegExp(`"${field}":(\\d+|\\[[\\d,]+\\])`).exec(text)?.[1];
}
