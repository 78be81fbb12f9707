// Worker health: a periodic GET {baseUrl}/health per worker. The verdicts go to the registry,
// which takes an unhealthy worker out of selection at once, drops its blocks from the index after a
// grace period, and puts it back when it answers again. The state machine (HealthTracker) is pure
// and takes the time as an argument; HealthMonitor is the I/O around it. After a passed check the
// monitor also reads the engine's start time from GET /metrics (process_start_time_seconds, which
// vLLM and SGLang export): a new value is a restarted engine, whatever its events said.

export type HealthVerdict = 'became_unhealthy' | 'became_healthy' | 'grace_expired' | 'unchanged';

interface Entry {
  healthy: boolean;
  unhealthySince?: number;
  blocksDropped: boolean;
  lastError?: string;
}

export interface HealthStatus {
  healthy: boolean;
  unhealthySince?: number;
  blocksDropped: boolean;
  lastError?: string;
}

export class HealthTracker {
  private readonly entries = new Map<number, Entry>();

  constructor(private readonly graceMs: number) {}

  add(worker: number): void {
    if (!this.entries.has(worker)) this.entries.set(worker, { healthy: true, blocksDropped: false });
  }

  remove(worker: number): void {
    this.entries.delete(worker);
  }

  status(worker: number): HealthStatus | undefined {
    const e = this.entries.get(worker);
    return e && { ...e };
  }

  isHealthy(worker: number): boolean {
    return this.entries.get(worker)?.healthy ?? false;
  }

  /** Records one check; the verdict says what changed. */
  record(worker: number, ok: boolean, nowMs: number, error?: string): HealthVerdict {
    const e = this.entries.get(worker);
    if (!e) return 'unchanged';
    if (ok) {
      e.lastError = undefined;
      if (e.healthy) return 'unchanged';
      e.healthy = true;
      e.unhealthySince = undefined;
      e.blocksDropped = false;
      return 'became_healthy';
    }
    e.lastError = error;
    if (e.healthy) {
      e.healthy = false;
      e.unhealthySince = nowMs;
      return 'became_unhealthy';
    }
    return this.checkGrace(e, nowMs);
  }

  /** Workers whose grace period ran out since the last call (their blocks should go). */
  expired(nowMs: number): number[] {
    const out: number[] = [];
    for (const [worker, e] of this.entries) if (this.checkGrace(e, nowMs) === 'grace_expired') out.push(worker);
    return out;
  }

  private checkGrace(e: Entry, nowMs: number): HealthVerdict {
    if (e.healthy || e.blocksDropped || e.unhealthySince === undefined) return 'unchanged';
    if (nowMs - e.unhealthySince < this.graceMs) return 'unchanged';
    e.blocksDropped = true;
    return 'grace_expired';
  }
}

export interface HealthTarget {
  id: number;
  baseUrl: string;
}

export interface HealthEvents {
  targets(): HealthTarget[];
  /**
   * A check finished (ok: 2xx within the timeout); `startTime`: the engine's process start
   * (seconds since the epoch) when its /metrics reports one.
   */
  onResult(worker: number, ok: boolean, error?: string, startTime?: number): void;
  /** Called after each round, to let grace periods expire. */
  onRound?(): void;
}

/** Polls every target each interval; one round at a time, never overlapping. */
export class HealthMonitor {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private closed = false;
  private readonly inFlight = new Set<AbortController>();
  /** Base URLs whose /metrics has no start time: not asked again. */
  private readonly noStartTime = new Set<string>();

  constructor(
    private readonly events: HealthEvents,
    private readonly intervalMs: number,
    private readonly timeoutMs: number,
    /** Read process_start_time_seconds from /metrics after each passed check. */
    private readonly readStartTime = true,
  ) {}

  start(): void {
    if (this.intervalMs <= 0 || this.timer || this.closed) return;
    this.timer = setInterval(() => {
      if (!this.running) this.running = this.checkAll().finally(() => (this.running = undefined));
    }, this.intervalMs);
    this.timer.unref();
  }

  /** One round now (tests and the admin API use it to avoid waiting for the timer). */
  async checkAll(): Promise<void> {
    await Promise.all(this.events.targets().map((t) => this.checkOne(t)));
    if (!this.closed) this.events.onRound?.();
  }

  async checkOne(target: HealthTarget): Promise<boolean> {
    const controller = new AbortController();
    this.inFlight.add(controller);
    const timer = setTimeout(() => controller.abort(), this.timeoutMs);
    let ok = false;
    let error: string | undefined;
    let startTime: number | undefined;
    try {
      const res = await fetch(`${target.baseUrl}/health`, { signal: controller.signal });
      ok = res.ok;
      if (!ok) error = `GET /health answered ${res.status}`;
      await res.body?.cancel();
      if (ok && this.readStartTime && !this.noStartTime.has(target.baseUrl)) startTime = await this.startTimeOf(target.baseUrl, controller.signal);
    } catch (err) {
      error = controller.signal.aborted ? `GET /health timed out after ${this.timeoutMs} ms` : (err as Error).message;
    } finally {
      clearTimeout(timer);
      this.inFlight.delete(controller);
    }
    if (!this.closed) this.events.onResult(target.id, ok, error, startTime);
    return ok;
  }

  /** The engine's start time from its /metrics; undefined when it cannot say now (a failed scrape fails no health check). */
  private async startTimeOf(baseUrl: string, signal: AbortSignal): Promise<number | undefined> {
    try {
      const res = await fetch(`${baseUrl}/metrics`, { signal });
      if (!res.ok) {
        await res.body?.cancel();
        if (res.status === 404) this.noStartTime.add(baseUrl);
        return undefined;
      }
      const value = processStartTime(await res.text());
      if (value === undefined) this.noStartTime.add(baseUrl);
      return value;
    } catch {
      return undefined;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    for (const c of this.inFlight) c.abort();
    await this.running;
  }
}

const START_TIME = /^process_start_time_seconds(?:\{[^}]*\})?[ \t]+(\S+)/m;

/** process_start_time_seconds from a Prometheus text exposition (the first sample), if any. */
export function processStartTime(text: string): number | undefined {
  const m = START_TIME.exec(text);
  if (!m) return undefined;
  const v = Number(m[1]);
  return Number.isFinite(v) && v > 0 ? v : undefined;
}
