// PROTOCOLS.md 3a point 4: after a vLLM or TensorRT-LLM prefill, the prefill worker holds the
// prompt's KV blocks until a decode worker pulls them (or a timeout of minutes). A decode leg has
// pulled once it produced its first event, so a leg the client gave up on is kept running until
// then, bounded by a release timeout, and only then closed: the blocks are released by the normal
// pull instead of being stranded. FirstEventSource watches for that first event.
import { EventCursor, type EventBatchSource } from '../engines/event-batch.js';
import type { LegStream } from '../engines/transport.js';
import type { SseEvent } from '../engines/types.js';

export class FirstEventSource implements AsyncIterator<SseEvent>, EventBatchSource {
  private readonly cursor = new EventCursor(() => this.readBatch());
  private seen = false;
  private ended = false;
  private readonly seenOrEnded: Promise<void>;
  private signalSeen!: () => void;

  constructor(readonly engine: LegStream) {
    this.seenOrEnded = new Promise<void>((r) => (this.signalSeen = r));
  }

  /** The leg produced an event (or ended): its KV handoff is over. */
  get started(): boolean {
    return this.seen || this.ended;
  }

  next(): Promise<IteratorResult<SseEvent>> {
    return this.cursor.next();
  }

  nextBatch(): Promise<readonly SseEvent[] | null> {
    return this.cursor.nextBatch();
  }

  private async readBatch(): Promise<readonly SseEvent[] | null> {
    try {
      const batch = await this.engine.nextBatch();
      if (batch === null) this.ended = true;
      else this.seen = true;
      this.signalSeen();
      return batch;
    } catch (err) {
      this.ended = true;
      this.signalSeen();
      throw err;
    }
  }

  /**
   * Reads on (discarding events nobody will see) until the first event, the end, a failure, or
   * `abort` firing; concurrent reads by a consumer count too. Never rejects.
   */
  async untilStarted(): Promise<void> {
    if (this.started) return;
    const drain = (async () => {
      try {
        while (!this.started) await this.next();
      } catch {
        // a failed or aborted leg has nothing more to release
      }
    })();
    await Promise.race([drain, this.seenOrEnded]);
  }
}

/**
 * Closes `source`'s leg once its KV handoff is over: at once when it already started, else after
 * its first event or `releaseTimeoutMs`, whichever comes first (`abortLeg` then cuts it short).
 */
export async function releaseThenClose(source: FirstEventSource, releaseTimeoutMs: number, abortLeg: () => void): Promise<void> {
  if (!source.started) {
    const timer = setTimeout(abortLeg, releaseTimeoutMs);
    timer.unref();
    try {
      await source.untilStarted();
    } finally {
      clearTimeout(timer);
    }
  }
  source.engine.cancel();
}
