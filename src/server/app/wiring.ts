// Assembles the routing layer behind the HTTP layer: per pool (prefill; decode and aggregated) a
// KvIndexer, its RoutingCore, a WorkerPool and a KvRouter; one PrefillRouter over both; one
// EventIngest per pool feeding its index; shared engine clients behind one HTTP leg transport. The
// result is the Backend that router.ts speaks to, so the HTTP layer never reaches into routing
// internals.
import { KvIndexer } from '../../core/indexer.js';
import { RoutingCore, type RoutingDecision } from '../../core/routing-core.js';
import { EngineClients, type EngineClientOptions } from '../../engines/http-client.js';
import { HttpTransport } from '../../engines/http-transport.js';
import type { LegTransport } from '../../engines/transport.js';
import type { WorkerInfo } from '../../engines/types.js';
import { EventIngest } from '../../events/ingest.js';
import type { KvRouterCore } from '../../routing/booking.js';
import { KvRouter } from '../../routing/kv-router.js';
import { PrefillRouter } from '../../routing/prefill-router.js';
import type { QueueSettings } from '../../routing/queue/admission-queue.js';
import { SessionAffinity } from '../../routing/session-affinity.js';
import { WorkerPool } from '../../routing/worker-pool.js';
import type { Backend, LegExplanation, RouteExplanation } from './backend.js';
import type { PoolRoutingConfig, RouterConfig, WorkerConfig, WorkerRole } from '../config/config.js';
import type { RouterMetrics } from '../observability/metrics.js';
import type { PoolName, PoolPort } from '../fleet/registry.js';
import type { IngestIncident } from '../../events/incidents.js';
import { silentLogger, type Logger } from '../../util/logger.js';
import { withFields } from '../../util/objects.js';
import { ReplicaSync } from '../replicas/sync.js';
import { FaultEvents } from './fault-events.js';
import { SnapshotPublisher } from '../replicas/snapshot-publisher.js';
import { DecisionLog } from '../observability/decision-log.js';
import { beginWarmStart, captureSnapshot, subscribeResuming } from './warm-wiring.js';

export interface BackendOptions {
  metrics: RouterMetrics;
  clock?: () => number;
  engineClient?: EngineClientOptions;
  /** A stream nobody pulls for this long is abandoned (booking freed). */
  abandonAfterMs?: number;
  /** Longest a decode leg is kept running after its client left, to pull the prefill's KV. */
  releaseTimeoutMs?: number;
  /** KV event gaps, replays and engine restarts are logged here. */
  log?: Logger;
}

interface PoolParts {
  name: PoolName;
  indexer: KvIndexer;
  core: RoutingCore;
  pool: WorkerPool;
  router: KvRouter;
  ingest?: EventIngest;
}

const STALE_SWEEP_MS = 30_000;
/** Shutdown waits this long for legs finishing a KV handoff, then closes anyway. */
const SHUTDOWN_GRACE_MS = 2_000;

export async function createBackend(config: RouterConfig, o: BackendOptions): Promise<Backend> {
  const startedAt = performance.now();
  // Warm start: the pools are built over the restored indexes, when there are.
  const warmStart = await beginWarmStart(config, o.log ?? silentLogger, startedAt, o.clock);
  const warm = warmStart?.warm;
  const clients = new EngineClients(o.engineClient);
  const transport = new HttpTransport(clients);
  // Bound once the pools exist: their cores and the session table tell it every change from then on.
  const shared: { sync?: ReplicaSync } = {};
  const affinity = config.sessionAffinity;
  const sessions =
    affinity &&
    new SessionAffinity({
      ttlMs: affinity.ttlMs,
      maxSessions: affinity.maxSessions,
      clock: o.clock,
      onBind: (id, binding) => shared.sync?.sessionBound(id, binding),
    });
  // The latest decisions for the live page (/dashboard): a ring of the legs booked and the requests finished.
  const decisions = new DecisionLog();
  const faults = new FaultEvents(o.metrics, (o.log ?? silentLogger).child({ component: 'routing' }), o.clock);
  const parts: Record<PoolName, PoolParts> = {
    prefill: buildPool('prefill', config, config.prefill, ['prefill'], transport, faults, o, shared, decisions, warmStart?.restored?.prefill),
    decode: buildPool('decode', config, config.decode, ['decode', 'aggregated'], transport, faults, o, shared, decisions, warmStart?.restored?.decode),
  };
  const sync = config.replicas
    ? await ReplicaSync.start(
        {
          config: config.replicas,
          model: config.models[0],
          cores: { prefill: parts.prefill.core, decode: parts.decode.core },
          log: o.log ?? silentLogger,
          observeLag: (s) => o.metrics.replicaSyncLag(s),
          sessions: sessions && affinity && { table: sessions, ttlMs: affinity.ttlMs },
        },
        warmStart?.natsUnreachable === true,
      )
    : undefined;
  shared.sync = sync;
  const publisher =
    sync &&
    warm &&
    new SnapshotPublisher({
      intervalMs: config.replicas!.snapshotIntervalMs,
      cluster: sync.cluster,
      connection: () => sync.connection,
      canPublish: () => warm.ready(),
      capture: () => captureSnapshot(config, sync.id, parts),
      log: (o.log ?? silentLogger).child({ component: 'warm-start' }),
      onPublished: (createdAt, bytes) => warm.publishedSnapshot(createdAt, bytes),
      onFailed: () => warm.publishFailed(),
    });
  publisher?.start();
  const router = new PrefillRouter({
    prefill: parts.prefill.router,
    decode: parts.decode.router,
    sessions,
    enforceDisagg: config.enforceDisagg,
    fallbackToAggregated: config.fallbackToAggregated,
    forwardPriority: config.forwardPriority,
    clock: o.clock,
    onRequestDone: (done) => {
      o.metrics.served(done.mode);
      const { summary } = done;
      decisions.done({
        at: Date.now(),
        requestId: summary.requestId,
        mode: done.mode,
        reason: done.reason,
        outcome: done.outcome,
        ttftMs: summary.ttftMs,
        outputTokens: summary.outputTokens,
      });
    },
    queue: queueSettings(config),
    onQueueEvent: (pool, ev) => o.metrics.queueEvent(pool, ev),
    conditionalDisagg: config.conditionalDisagg,
  });
  // Bookings whose requests vanished without ending (should not happen; bounded if it does).
  const sweep = setInterval(() => {
    parts.prefill.core.expireStale();
    parts.decode.core.expireStale();
    sync?.sweepStale(parts.decode.core.config.staleBookingMs);
  }, STALE_SWEEP_MS);
  sweep.unref();

  const poolPort = (p: PoolParts): PoolPort => ({
    enable(w) {
      if (!p.pool.has(w.id)) {
        p.pool.add(workerInfo(w));
        return;
      }
      p.pool.setDraining(w.id, false);
      p.pool.setHealthy(w.id, true);
    },
    disable(id) {
      if (p.pool.has(id)) p.pool.setHealthy(id, false);
    },
    remove(id) {
      const info = p.pool.get(id);
      p.pool.remove(id);
      // Close the engine's connections unless another worker shares its URL.
      const shared = [...parts.prefill.pool.workers(), ...parts.decode.pool.workers()].some((w) => w.baseUrl === info?.baseUrl);
      if (info && !shared) void clients.drop(info.baseUrl);
    },
    dropBlocks(id) {
      p.indexer.removeWorker(id);
    },
    activeRequests(id) {
      return p.pool.has(id) ? p.pool.activeRequests(id) : 0;
    },
    healthCheckPassed(id) {
      p.pool.healthCheckPassed(id);
    },
    ejection(id) {
      if (!p.pool.has(id)) return undefined;
      const s = p.pool.state(id);
      return (
        s.outlier && { ejected: s.ejected, ejections: s.outlier.ejections, ejectedUntil: s.outlier.ejectedUntil, lastReason: s.outlier.lastEjectionReason }
      );
    },
  });

  return {
    dispatch: (req) => router.handle(req),
    explain(tokens, hints, requestId): RouteExplanation {
      const q = router.query(tokens, hints, { requestId });
      return {
        request_id: requestId,
        prompt_tokens: tokens.length,
        block_size: config.blockSize,
        mode: q.mode,
        mode_reason: q.reason,
        prefill: q.prefill ? explainLeg(q.prefill) : null,
        decode: explainLeg(q.decode),
      };
    },
    pools: { prefill: poolPort(parts.prefill), decode: poolPort(parts.decode) },
    ingest: {
      subscribe(w, pool) {
        const ingest = parts[pool].ingest;
        // Approximate indexing (or a worker without events) learns from routing decisions instead.
        if (!ingest) return;
        subscribeResuming(ingest, parts[pool].indexer, w, pool, config.blockSize, warm);
      },
      unsubscribe(id) {
        parts.prefill.ingest?.removeWorker(id);
        parts.decode.ingest?.removeWorker(id);
      },
      continuous(id) {
        const p = [parts.prefill, parts.decode].find((p) => p.ingest?.hasWorker(id));
        return p?.ingest?.continuous(id) ?? false;
      },
      resync(id, reason) {
        for (const p of [parts.prefill, parts.decode]) {
          if (p.ingest?.hasWorker(id)) p.ingest.resync(id, reason);
          // Without events (approximate indexing), its blocks are the router's predictions: dropped.
          else if (p.pool.has(id)) p.indexer.removeWorker(id);
        }
      },
    },
    canServe: () => router.canServeRequests(),
    recentDecisions: (limit) =>
      decisions
        .recent(limit)
        .map((r) => ({ requestId: r.requestId, at: r.at, legs: r.legs.map((l) => ({ pool: l.pool, at: l.at, ...explainLeg(l.decision) })), done: r.done })),
    indexedBlocks: (pool, worker, dpSize) => {
      let n = 0;
      for (let rank = 0; rank < dpSize; rank++) n += parts[pool].indexer.blocksOf(worker, rank);
      return n;
    },
    metricsSources: {
      workerLoads: () =>
        [parts.prefill, parts.decode].flatMap((p) =>
          p.core.load().map((l) => ({
            pool: p.name,
            worker: l.worker,
            dpRank: l.dpRank,
            prefillTokens: l.prefillTokens,
            decodeBlocks: l.decodeBlocks,
            requests: l.requests,
          })),
        ),
      eventStats: () =>
        [parts.prefill, parts.decode].flatMap((p) =>
          (p.ingest?.stats() ?? []).map((s) => ({
            worker: s.worker,
            applied: s.applied,
            lowerTier: s.lowerTierEvents,
            rejected: s.rejected,
            joins: s.joins,
            gaps: s.gaps,
            replays: s.replays,
            decodeErrors: s.decodeErrors,
            restarts: s.restarts,
            blockSizeMismatch: s.ranks.find((r) => r.blockSizeMismatch !== null)?.blockSizeMismatch ?? undefined,
            skipped: { unknown_type: s.unknownEventTypes, other_group: s.otherGroupEvents, other_medium: s.ignoredMedium },
          })),
        ),
      indexStats: () => [parts.prefill, parts.decode].map((p) => ({ pool: p.name, ...p.indexer.stats() })),
      fallbacksToAggregated: () => router.stats().fallbacks,
      sessionStats: () => sessions?.stats(),
      replicaStats: sync && (() => sync.stats()),
      warmStartStats: warm && (() => warm.sample()),
      ejectedWorkers: () =>
        [parts.prefill, parts.decode].flatMap((p) =>
          p.pool.ejectedCount === 0
            ? []
            : p.pool
                .workers()
                .filter((w) => p.pool.state(w.id).ejected)
                .map((w) => ({ pool: p.name, worker: w.id })),
        ),
      queueStats: () => router.queueStats(),
      modeReasons: () => router.stats().modeReasons,
    },
    scheduling: {
      queue: () => router.queueSettings,
      setQueue: (s) => router.setQueueSettings(s),
      queueStats: () => router.queueStats(),
      conditionalDisagg: () => router.conditionalDisagg,
      setConditionalDisagg: (s) => router.setConditionalDisagg(s),
    },
    replicas: sync,
    warmStart: warm,
    async close() {
      clearInterval(sweep);
      publisher?.close();
      warm?.close();
      router.close();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([router.idle(), new Promise<void>((r) => (timer = setTimeout(r, SHUTDOWN_GRACE_MS)))]);
      clearTimeout(timer);
      await sync?.close();
      await Promise.all([parts.prefill.ingest?.close(), parts.decode.ingest?.close()]);
      await clients.close();
    },
  };
}

function buildPool(
  name: PoolName,
  config: RouterConfig,
  routing: PoolRoutingConfig,
  roles: WorkerRole[],
  transport: LegTransport,
  faults: FaultEvents,
  o: BackendOptions,
  shared: { sync?: ReplicaSync },
  decisions: DecisionLog,
  restored?: KvIndexer,
): PoolParts {
  const approximate = config.indexerMode === 'approximate';
  const indexer =
    restored ??
    new KvIndexer({
      blockSize: config.blockSize,
      mode: config.indexerMode,
      ...(approximate ? {} : { lowerTiers: config.lowerTiers }),
      ...(config.maxIndexedBlocks !== undefined && !approximate ? { maxBlocks: config.maxIndexedBlocks } : {}),
      clock: o.clock,
    });
  const core = new RoutingCore(indexer, {
    blockSize: config.blockSize,
    policy: routing.policy,
    overlapScoreCredit: routing.overlapScoreCredit,
    prefillLoadScale: routing.prefillLoadScale,
    temperature: routing.temperature,
    tierCredit: { host: routing.hostCacheCredit, disk: routing.diskCacheCredit, external: routing.externalCacheCredit },
    ttft: routing.ttftModel,
    busyDecodeFraction: routing.busyDecodeFraction,
    busyPrefillTokens: routing.busyPrefillTokens,
    maxQueuedPrefillTokens: routing.maxQueuedPrefillTokens,
    seed: config.seed,
    clock: o.clock,
    approximate,
  });
  const pool = new WorkerPool(name, core, roles, faults.poolOptions(config.outlierDetection));
  const router = new KvRouter({
    core: observed(core, name, o.metrics, shared, decisions),
    pool,
    transport,
    abandonAfterMs: o.abandonAfterMs,
    releaseTimeoutMs: o.releaseTimeoutMs,
    maxRetries: config.maxRetries,
    onRetry: (r) => faults.retried(r),
    trackOutputBlocks: config.trackOutputBlocks,
  });
  const log = (o.log ?? silentLogger).child({ component: 'kv-events', pool: name });
  const ingest = approximate
    ? undefined
    : new EventIngest({
        indexer,
        onIncident: (incident) => logIncident(log, incident),
        onError: (err, worker) => log.error({ worker, err }, 'KV event ingestion failed'),
      });
  return { name, indexer, core, pool, router, ingest };
}

/** One line per event stream incident: a join's catch-up at info, lost history and restarts as warnings. */
function logIncident(log: Logger, { worker, dpRank, what }: IngestIncident): void {
  const at = { worker, dp_rank: dpRank };
  switch (what.kind) {
    case 'gap':
      // Joining a running engine counts as a gap from 0: routine, not a loss.
      if (what.from === 0n) log.info(withFields(at, { to: String(what.to) }), 'KV events: joined a running engine, catching up from its replay buffer');
      else log.warn(withFields(at, { from: String(what.from), to: String(what.to) }), 'KV events: sequence gap, replaying the missing batches');
      return;
    case 'replayed':
      log.info(withFields(at, { from: String(what.from), to: String(what.to) }), 'KV events: gap repaired from the replay');
      return;
    case 'index_cleared':
      log.warn(withFields(at, { reason: what.reason }), "KV events: history lost, the worker's blocks were cleared from the index");
      return;
    case 'restart': {
      const fields = withFields(at, {
        seq: what.seq === null ? null : String(what.seq),
        last_seq: what.lastSeq === null ? null : String(what.lastSeq),
        reason: what.reason,
      });
      if (what.via === 'sequence') log.warn(fields, "engine restarted (KV event sequence went back): the worker's blocks were cleared");
      else
        log.warn(
          fields,
          "engine restarted (its replay buffer no longer holds the last batch applied): the worker's blocks were cleared, rebuilt from its buffer",
        );
      return;
    }
    case 'joined':
      log.info(
        withFields(at, { from: String(what.from), to: String(what.to) }),
        'KV events: applied from the replay the batches sent before the subscription took effect',
      );
      return;
    case 'caught_up':
      log.info(
        withFields(at, { from: String(what.from), to: what.to === null ? null : String(what.to) }),
        'KV events: the restored index caught up from the replay buffer',
      );
      return;
    case 'block_size_mismatch':
      log.warn(
        withFields(at, { engine_block_size: what.engineBlockSize, router_block_size: what.routerBlockSize }),
        `KV events refused: the engine's block size is ${what.engineBlockSize}, the router's ${what.routerBlockSize}; this worker's cache earns no credit until they agree (--block-size)`,
      );
      return;
    case 'block_size_ok':
      log.info(withFields(at, { router_block_size: what.routerBlockSize }), "KV events: the engine's block size agrees with the router's again");
      return;
    case 'catch_up_failed':
      log.warn(withFields(at, { reason: what.reason }), 'KV events: the restored index could not catch up now; the next live batch repairs or clears it');
      return;
  }
}

/**
 * The core as KvRouter sees it: every booked decision observed by the metrics and kept in the
 * decision log, and every booking change told to the sibling replicas when they share bookings.
 */
function observed(core: RoutingCore, pool: PoolName, metrics: RouterMetrics, shared: { sync?: ReplicaSync }, decisions: DecisionLog): KvRouterCore {
  return {
    config: core.config,
    route(tokens, req) {
      const d = core.route(tokens, req);
      metrics.decision(pool, d.promptTokens, d.cachedTokens, d.timingsUs);
      decisions.leg(pool, d);
      shared.sync?.booked({
        pool,
        requestId: d.requestId,
        worker: d.worker,
        dpRank: d.dpRank,
        promptTokens: d.promptTokens,
        overlapBlocks: d.overlapBlocks,
        expectedOutputTokens: req.expectedOutputTokens,
        hashes: core.lastLocalHashes(),
      });
      return d;
    },
    query: (tokens, req) => core.query(tokens, req),
    markPrefillCompleted(id) {
      const first = core.markPrefillCompleted(id);
      if (first) shared.sync?.prefillDone(pool, id);
      return first;
    },
    free(id) {
      const freed = core.free(id);
      if (freed) shared.sync?.freed(pool, id);
      return freed;
    },
    addOutputTokens: (id, tokens) => core.addOutputTokens(id, tokens),
    load: () => core.load(),
  };
}

/** The router queue's settings from the config (the threshold absent: off). */
function queueSettings(config: RouterConfig): QueueSettings {
  const q = config.routerQueue;
  return {
    threshold: q.threshold ?? null,
    policy: q.policy,
    maxRequests: q.maxRequests,
    maxTokens: q.maxTokens,
    maxNumBatchedTokens: q.maxNumBatchedTokens,
    maxWaitMs: q.maxWaitMs ?? null,
  };
}

function workerInfo(w: WorkerConfig): WorkerInfo {
  const info: WorkerInfo = { id: w.id, role: w.role, kind: w.kind, baseUrl: w.baseUrl, dpSize: w.dpSize };
  if (w.kvCapacityBlocks !== undefined) info.kvCapacityBlocks = w.kvCapacityBlocks;
  if (w.bootstrap) {
    info.bootstrapHost = w.bootstrap.host;
    info.bootstrapPort = w.bootstrap.port;
  }
  return info;
}

function explainLeg(d: RoutingDecision): LegExplanation {
  const leg: LegExplanation = {
    worker: d.worker,
    dp_rank: d.dpRank,
    policy: d.policy,
    overlap_blocks: d.overlapBlocks,
    lower_tier_blocks: d.lowerTierBlocks,
    cached_tokens: d.cachedTokens,
    prefill_tokens: d.prefillTokens,
    candidates: d.candidates.map((c) => ({
      worker: c.worker,
      dp_rank: c.dpRank,
      overlap_blocks: c.overlapBlocks,
      lower_tier_blocks: c.lowerTierBlocks,
      prefill_blocks: c.prefillBlocks,
      decode_blocks: c.decodeBlocks,
      cost: c.cost,
    })),
    timings_us: d.timingsUs,
  };
  if (d.predictedTtftMs !== undefined) leg.predicted_ttft_ms = d.predictedTtftMs;
  return leg;
}
