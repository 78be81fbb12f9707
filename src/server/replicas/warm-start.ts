// Warm start, second half: a restored index resumes each engine's event stream right after the
// last batch its snapshot holds (the subscriptions replay the rest from the engines' replay
// buffers), and the replica reports itself ready only once every resumed stream has caught up, or
// warmStartTimeoutMs has passed since startup (then it reports ready anyway, and says so).
// Restored blocks of a worker this replica does not subscribe to, or whose endpoints changed,
// are dropped: nothing would ever tell the index they are gone.
import type { PoolName } from '../../core/vocabulary.js';
import { POOL_NAMES } from '../../core/vocabulary.js';
import type { Logger } from '../../util/logger.js';
import type { SnapshotLoad } from './snapshot-load.js';
import type { WarmStartPort, WarmStartStatus, WarmState } from './ports.js';
import type { WarmStartSample } from '../observability/warm-metrics.js';
import type { StreamPosition } from './snapshot-format.js';

export interface WarmStartOptions {
  load: SnapshotLoad | undefined;
  timeoutMs: number;
  /** performance.now() when the router began starting. */
  startedAt: number;
  log: Logger;
  /** Drops a restored worker's blocks from a pool's index. */
  dropWorker(pool: PoolName, worker: number): void;
}

export class WarmStart implements WarmStartPort {
  private state: WarmState = 'loading';
  private readonly unclaimed = new Map<string, StreamPosition & { pool: PoolName }>();
  private readonly catchUps: Array<Promise<void>> = [];
  private pending = 0;
  private readyAfterMs?: number;
  private timedOut = false;
  private timer?: NodeJS.Timeout;
  private latest?: { createdAt: number; bytes: number };
  private published = 0;
  private publishFailures = 0;

  constructor(private readonly o: WarmStartOptions) {
    const streams = o.load?.streams;
    if (streams) for (const pool of POOL_NAMES) for (const s of streams[pool]) this.unclaimed.set(key(pool, s.worker), Object.assign({ pool }, s));
    if (o.load?.snapshot) this.latest = o.load.snapshot;
    const load = o.load;
    if (load && load.outcome !== 'restored') {
      // No snapshot yet is routine (the first replica); any other reason is worth a warning.
      const fields = { outcome: load.outcome, reason: load.reason, snapshot_replica: load.snapshot?.replica };
      if (load.outcome === 'absent') o.log.info(fields, 'warm start: no snapshot to restore, cold start');
      else o.log.warn(fields, 'warm start: the snapshot cannot be used, cold start');
    } else if (load) {
      o.log.info(
        {
          snapshot_replica: load.snapshot?.replica,
          snapshot_bytes: load.snapshot?.bytes,
          fetch_ms: Math.round(load.fetchMs),
          restore_ms: Math.round(load.restoreMs),
        },
        "warm start: index restored from the cluster's snapshot, catching up from the engines' replay buffers",
      );
    }
  }

  /**
   * A worker being subscribed: where its restored streams resume (per dp rank, null: from the
   * start), or undefined when its blocks were not restored or no longer apply (then dropped).
   */
  claim(pool: PoolName, worker: number, endpoints: readonly string[]): Array<bigint | null> | undefined {
    const k = key(pool, worker);
    const s = this.unclaimed.get(k);
    if (!s) return undefined;
    this.unclaimed.delete(k);
    if (s.endpoints.length !== endpoints.length || s.endpoints.some((e, i) => e !== endpoints[i])) {
      this.o.log.warn(
        { pool, worker, snapshot_endpoints: s.endpoints, endpoints },
        "warm start: the worker's KV event endpoints changed since the snapshot: its restored blocks were dropped",
      );
      this.o.dropWorker(pool, worker);
      return undefined;
    }
    return s.lastSeq;
  }

  /** Waits for a resumed worker's catch-up before reporting ready. */
  track(caughtUp: Promise<void>): void {
    if (this.state === 'ready') return;
    this.pending++;
    this.catchUps.push(caughtUp.finally(() => this.pending--));
  }

  workersLoaded(): void {
    if (this.state !== 'loading') return;
    for (const s of this.unclaimed.values()) this.o.dropWorker(s.pool, s.worker);
    if (this.unclaimed.size > 0)
      this.o.log.info({ workers: [...this.unclaimed.values()].map((s) => s.worker) }, 'warm start: restored blocks of workers not in this fleet were dropped');
    this.unclaimed.clear();
    const load = this.o.load;
    if (load?.outcome !== 'restored' || this.catchUps.length === 0) return this.becomeReady();
    this.state = 'catching_up';
    const remaining = Math.max(0, this.o.timeoutMs - (performance.now() - this.o.startedAt));
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.o.log.warn(
        { pending: this.pending, timeout_ms: this.o.timeoutMs },
        "warm start: the catch-up from the engines' replay buffers did not finish within warmStartTimeoutMs; reporting ready anyway (it goes on)",
      );
      this.becomeReady();
    }, remaining);
    this.timer.unref();
    void Promise.all(this.catchUps).then(() => this.becomeReady());
  }

  ready(): boolean {
    return this.state === 'ready';
  }

  status(): WarmStartStatus {
    const s: WarmStartStatus = { state: this.state, outcome: this.o.load?.outcome ?? 'off', pending: this.pending };
    if (this.o.load?.reason) s.reason = this.o.load.reason;
    if (this.readyAfterMs !== undefined) s.readyAfterMs = Math.round(this.readyAfterMs);
    if (this.timedOut) s.timedOut = true;
    return s;
  }

  /** A snapshot this replica published. */
  publishedSnapshot(createdAt: number, bytes: number): void {
    this.latest = { createdAt, bytes };
    this.published++;
  }

  publishFailed(): void {
    this.publishFailures++;
  }

  sample(now = Date.now()): WarmStartSample {
    return {
      outcome: this.o.load?.outcome ?? 'off',
      ready: this.ready(),
      readySeconds: this.readyAfterMs === undefined ? undefined : this.readyAfterMs / 1000,
      snapshotAgeSeconds: this.latest && Math.max(0, (now - this.latest.createdAt) / 1000),
      snapshotBytes: this.latest?.bytes,
      published: this.published,
      publishFailures: this.publishFailures,
    };
  }

  close(): void {
    clearTimeout(this.timer);
  }

  private becomeReady(): void {
    if (this.state === 'ready') return;
    clearTimeout(this.timer);
    this.state = 'ready';
    this.readyAfterMs = performance.now() - this.o.startedAt;
    const load = this.o.load;
    this.o.log.info(
      {
        outcome: load?.outcome ?? 'off',
        ready_after_ms: Math.round(this.readyAfterMs),
        fetch_ms: load && Math.round(load.fetchMs),
        restore_ms: load && Math.round(load.restoreMs),
        snapshot_bytes: load?.snapshot?.bytes,
      },
      load?.outcome === 'restored' ? 'warm start: the restored index caught up, ready' : "ready (cold start: the index fills from the engines' KV events)",
    );
  }
}

function key(pool: PoolName, worker: number): string {
  return `${pool}:${worker}`;
}
