// Token buckets: `perMinute` units a minute, refilled continuously, holding at most one minute's
// worth (so a quiet key may spend its minute at once). Time is passed in, so the buckets are pure.

export class TokenBucket {
  private level: number;
  private at: number;
  private readonly perMs: number;

  constructor(
    readonly perMinute: number,
    now: number,
  ) {
    this.level = perMinute;
    this.at = now;
    this.perMs = perMinute / 60_000;
  }

  /** Milliseconds until `n` units are there (0: now; Infinity: never, n is over the bucket's size). */
  waitFor(n: number, now: number): number {
    if (n > this.perMinute) return Infinity;
    this.refill(now);
    return this.level >= n ? 0 : Math.ceil((n - this.level) / this.perMs);
  }

  take(n: number, now: number): void {
    this.refill(now);
    this.level -= n;
  }

  private refill(now: number): void {
    if (now > this.at) this.level = Math.min(this.perMinute, this.level + (now - this.at) * this.perMs);
    this.at = now;
  }
}
