// One log line per kind of event per time window: when a whole fleet fails the same way, every
// request would log the same line. The lines left out are counted and reported with the next one.

export class LogThrottle {
  private readonly recent = new Map<string, { at: number; suppressed: number }>();

  constructor(
    private readonly windowMs: number,
    private readonly clock: () => number = Date.now,
  ) {}

  /**
   * Whether a line of this kind may be written now: undefined when one was written less than a
   * window ago (this one is counted as left out), else how many were left out since the last.
   */
  admit(key: string): number | undefined {
    const now = this.clock();
    const seen = this.recent.get(key);
    if (seen && now - seen.at < this.windowMs) {
      seen.suppressed++;
      return undefined;
    }
    this.recent.set(key, { at: now, suppressed: 0 });
    return seen?.suppressed ?? 0;
  }
}
