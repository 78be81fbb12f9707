// What the router says about faults on the routing path: legs retried on another worker after
// their engine never got them (KvRouter's failover), and workers ejected from selection and back
// (WorkerPool's outlier detection). Each is counted in the metrics and logged: ejections and
// returns always (they are state changes), retries once a second per worker and reason (a dead
// worker without ejection makes every request retry; the count says how many lines were left out).
import type { LegRetry } from '../../routing/kv-router.js';
import type { EjectionEvent, ReturnEvent, WorkerPoolOptions } from '../../routing/worker-pool.js';
import { redactUrl, type Logger } from '../../util/logger.js';
import { LogThrottle } from '../../util/log-throttle.js';
import type { OutlierDetectionConfig } from '../config/config.js';
import type { RouterMetrics } from '../observability/metrics.js';

const RETRY_LOG_WINDOW_MS = 1000;

export class FaultEvents {
  private readonly retryLines: LogThrottle;

  constructor(
    private readonly metrics: RouterMetrics,
    private readonly log: Logger,
    private readonly clock: () => number = Date.now,
  ) {
    this.retryLines = new LogThrottle(RETRY_LOG_WINDOW_MS, clock);
  }

  /** The options of a pool's WorkerPool: ejection as configured, its changes reported here. */
  poolOptions(config: OutlierDetectionConfig): WorkerPoolOptions {
    if (!config.enabled) return {};
    return {
      outlierDetection: {
        consecutiveConnectFailures: config.consecutiveConnectFailures,
        consecutive5xx: config.consecutive5xx,
        baseEjectionTimeMs: config.baseEjectionTimeMs,
        maxEjectionTimeMs: config.maxEjectionTimeMs,
        maxEjectionPercent: config.maxEjectionPercent,
      },
      clock: this.clock,
      onEjection: (e) => this.ejected(e),
      onReturn: (e) => this.returned(e),
      onEjectionCapped: (e) =>
        this.log.warn(
          { pool: e.pool, worker: e.worker, reason: e.reason },
          'worker kept failing but was not ejected: the max ejection percent of its pool is reached',
        ),
    };
  }

  retried(r: LegRetry): void {
    this.metrics.legRetry(r.pool, r.worker, r.reason);
    const suppressed = this.retryLines.admit(`${r.pool} ${r.worker} ${r.reason}`);
    if (suppressed === undefined) return;
    const fields: Record<string, unknown> = {
      request_id: r.requestId,
      trace_id: r.traceId,
      pool: r.pool,
      worker: r.worker,
      to: r.to,
      reason: r.reason,
      attempt: r.attempt,
    };
    if (r.error.engine !== undefined) fields.engine = redactUrl(r.error.engine);
    if (r.error.detail !== undefined) fields.detail = r.error.detail;
    if (suppressed > 0) fields.suppressed = suppressed;
    this.log.warn(fields, 'leg sent to another worker: its engine never got it');
  }

  private ejected(e: EjectionEvent): void {
    this.metrics.ejection(e.pool, e.worker, e.reason);
    this.log.warn(
      { pool: e.pool, worker: e.worker, reason: e.reason, ejection_ms: e.durationMs, until: new Date(e.untilMs).toISOString(), ejections: e.ejections },
      'worker ejected: out of selection after consecutive failures',
    );
  }

  private returned(e: ReturnEvent): void {
    this.log.info({ pool: e.pool, worker: e.worker, why: e.why }, 'ejected worker back in selection');
  }
}
