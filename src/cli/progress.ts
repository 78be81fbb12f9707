// Progress of a long command on stderr. On a terminal the line is rewritten in place; on a pipe or
// a file (CI logs, `2> replay.log`, a service manager) carriage returns would pile up as one
// endless line, so it is printed as plain lines instead, at most one every few seconds, with the
// time elapsed, and the last state once at the end.

/** Where progress goes: process.stderr, or any stream-like with write() (isTTY when a terminal). */
export interface ProgressSink {
  readonly isTTY?: boolean;
  write(text: string): unknown;
}

export interface ProgressOptions {
  /** Least time between two plain lines when the sink is not a terminal. */
  intervalMs?: number;
  /** On a terminal, keep the last line at the end (true) or clear it (false, the default). */
  keepOnTerminal?: boolean;
  /** Milliseconds, for tests. */
  now?: () => number;
}

export const PLAIN_PROGRESS_INTERVAL_MS = 5_000;

const CLEAR_LINE = '\r\x1b[2K';

export class ProgressLine {
  /** Whether the line is rewritten in place (the sink is a terminal). */
  readonly interactive: boolean;
  private readonly intervalMs: number;
  private readonly now: () => number;
  private readonly keepOnTerminal: boolean;
  private readonly startedAt: number;
  private latest: string | undefined;
  private printed: string | undefined;
  private printedAt = Number.NEGATIVE_INFINITY;
  private ended = false;

  constructor(
    private readonly sink: ProgressSink,
    o: ProgressOptions = {},
  ) {
    this.interactive = sink.isTTY === true;
    this.intervalMs = o.intervalMs ?? PLAIN_PROGRESS_INTERVAL_MS;
    this.now = o.now ?? (() => performance.now());
    this.keepOnTerminal = o.keepOnTerminal ?? false;
    this.startedAt = this.now();
  }

  update(message: string): void {
    if (this.ended) return;
    this.latest = message;
    if (this.interactive) {
      this.sink.write(CLEAR_LINE + message);
      return;
    }
    const t = this.now();
    if (t - this.printedAt >= this.intervalMs) this.printPlain(message, t);
  }

  /** Ends the progress: on a terminal the line is cleared (or kept); otherwise the last state is printed if it was not. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.latest === undefined) return;
    if (this.interactive) this.sink.write(this.keepOnTerminal ? '\n' : CLEAR_LINE);
    else if (this.latest !== this.printed) this.printPlain(this.latest, this.now());
  }

  private printPlain(message: string, t: number): void {
    this.printed = message;
    this.printedAt = t;
    this.sink.write(`${message} (${Math.round((t - this.startedAt) / 1000)} s)\n`);
  }
}
