// One ZeroMQ SUB socket for one (worker, dp rank): receives KV event batches, keeps their sequence,
// repairs gaps through the engine's replay service, clears the worker's blocks when the engine
// restarts, and applies batches to the index.
//
// Two loops, so that ingestion never holds the event loop for long: the receive loop moves
// messages from the socket into a bounded queue (when the queue is full it stops reading, and
// ZeroMQ's own high-water mark takes over: past it the SUB socket drops messages, which shows up as
// a gap and is replayed); the apply loop drains the queue one batch at a time, applying large
// payloads on a libuv thread (BatchApplier), and yields to the event loop (setImmediate) after
// every slice of events, so HTTP requests interleave with bursts.
//
// ZeroMQ's slow joiner: a PUB socket drops what it sends before the subscription has reached it,
// and nothing tells the subscriber. A later batch reveals the gap, but an engine that goes idle
// after the first batches would keep them from the index for good. So, shortly after every
// connection (the first and each reconnect), the apply loop asks the replay buffer for anything
// after the last batch applied: the join probe.
//
// A restarted engine: the replay ROUTER sends only batches numbered from the one asked for, so a
// new process that numbered fewer batches than the old one answers nothing, and one that numbered
// more answers its own batches as if they followed ours. So every replay asks from the last batch
// applied (the anchor), not the one after: the same process still buffers it, byte for byte (its
// payload carries the batch's timestamp). Nothing at or after the anchor, or another payload under
// its number, is a restart: the rank is cleared and rebuilt from what the new buffer holds.
// Continuity is known from the first join until the connection drops; after a reconnect it is
// proven again by the probe (without a replay service it cannot be: the rank is cleared).
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import * as zmq from 'zeromq';
import type { BatchApplier } from './apply.js';
import type { IngestCounters } from './counters.js';
import { parseEventMessage } from './frames.js';
import { decodeEventBatch } from './decode.js';
import { ReplayError, replayBatches } from './replay.js';
import { SequenceTracker } from './sequence.js';
import type { IngestIncident } from './incidents.js';

export interface SubscriberOptions {
  worker: number;
  dpRank: number;
  endpoint: string;
  /** The engine's replay ROUTER; without it a gap cannot be repaired and the index is cleared. */
  replayEndpoint?: string;
  /** Topic prefix to subscribe to ('' receives everything). */
  topic: string;
  applier: BatchApplier;
  counters: IngestCounters;
  replayTimeoutMs: number;
  /** Messages received but not yet applied, at most. */
  queueLimit: number;
  /** Events applied between two yields to the event loop. */
  eventsPerSlice: number;
  /** ZeroMQ's receive queue (messages) before the SUB socket drops. */
  receiveHighWaterMark: number;
  /** Largest message accepted (bytes); larger ones are dropped by ZeroMQ. */
  maxMessageBytes: number;
  /**
   * The last sequence number the index already holds for this rank (a restored snapshot): the
   * subscriber replays from the next one at once instead of joining from 0.
   */
  resumeAfter?: bigint;
  /** Unexpected failures (bugs), reported instead of thrown from a background loop. */
  onError?: (err: unknown) => void;
  /** Gaps, replays, restarts and cleared indexes, as they happen (for logs). */
  onIncident?: (incident: IngestIncident) => void;
}

export interface SubscriberState {
  dpRank: number;
  endpoint: string;
  replayEndpoint: string | null;
  lastSeq: bigint | null;
  queued: number;
  replaying: boolean;
  /** The index is known to hold what this engine process published (false while disconnected, until the probe proves it). */
  continuous: boolean;
  /** The engine's stored events carry another block size than the index's: refused, so its cache earns no credit. */
  blockSizeMismatch: { engineBlockSize: number; routerBlockSize: number } | null;
}

/** A rank refusing stored events for their block size decodes one in TypeScript at most this often, to name the size. */
const MISMATCH_DECODE_MS = 1_000;

/** Receives this many messages back to back at most before letting the event loop run. */
const RECEIVE_BURST = 256;

/**
 * From a connection's handshake to its join probe. The subscription is sent right after the
 * handshake; the probe must reach the engine after it, or batches sent in between are lost until
 * the next live batch shows the gap.
 */
const JOIN_PROBE_DELAY_MS = 50;

export class EventSubscriber {
  private readonly socket: zmq.Subscriber;
  private readonly tracker = new SequenceTracker();
  private readonly queue: Buffer[][] = [];
  private readonly abort = new AbortController();
  private wakeApplier: (() => void) | null = null;
  private wakeReceiver: (() => void) | null = null;
  private idleWaiters: Array<() => void> = [];
  private replaying = false;
  private busy = false;
  private closed = false;
  private sliceEvents = 0;
  private probeDue = false;
  private probeTimer: NodeJS.Timeout | null = null;
  /** The payload of the last applied batch (null: unknown, as after a restored snapshot). */
  private lastPayload: Buffer | null = null;
  /** The index is known to follow this engine process (see the header). */
  private continuous = false;
  /** The connection dropped since continuity was last known. */
  private disconnected = false;
  /** Reconnected: live batches wait for the probe (the next one in sequence could be a new process's). */
  private awaitingProbe = false;
  private blockSizeMismatch: SubscriberState['blockSizeMismatch'] = null;
  private mismatchDecodedAt = -Infinity;
  /** Why the rank must be cleared and rebuilt before the next step (resync), or null. */
  private resyncDue: string | null = null;
  private readonly loops: Promise<void>;
  private markCaughtUp!: () => void;
  private markJoined!: () => void;
  /**
   * Settles once the initial catch-up of a restored index is over (done, failed or closed);
   * at once without `resumeAfter`. Warm start waits on it before reporting the replica ready.
   */
  readonly caughtUp = new Promise<void>((resolve) => (this.markCaughtUp = resolve));
  /**
   * Settles once the first connection's join probe is over (or at the handshake without a replay
   * endpoint, or at close): from then on every batch the engine publishes reaches the index.
   */
  readonly joined = new Promise<void>((resolve) => (this.markJoined = resolve));

  constructor(private readonly opts: SubscriberOptions) {
    this.socket = new zmq.Subscriber({
      linger: 0,
      receiveHighWaterMark: opts.receiveHighWaterMark,
      maxMessageSize: opts.maxMessageBytes,
    });
    try {
      this.socket.events.on('handshake', () => this.connected());
      this.socket.events.on('disconnect', () => this.lostConnection());
      this.socket.connect(opts.endpoint);
      this.socket.subscribe(opts.topic);
    } catch (err) {
      this.socket.close();
      throw new RangeError(`cannot subscribe to KV events at ${opts.endpoint}: ${(err as Error).message}`);
    }
    this.loops = Promise.all([this.receiveLoop(), this.applyLoop()]).then(() => undefined);
  }

  state(): SubscriberState {
    return {
      dpRank: this.opts.dpRank,
      endpoint: this.opts.endpoint,
      replayEndpoint: this.opts.replayEndpoint ?? null,
      lastSeq: this.tracker.lastApplied,
      queued: this.queue.length,
      replaying: this.replaying,
      continuous: this.continuous,
      blockSizeMismatch: this.blockSizeMismatch,
    };
  }

  /**
   * The engine may have restarted without the event stream showing it (it was unreachable, or its
   * start time changed): clears the rank at once and rebuilds it from the engine's replay buffer
   * (a continuous engine's buffer gives back what it still holds).
   */
  resync(reason: string): void {
    if (this.closed) return;
    this.opts.applier.clear(this.opts.worker, this.opts.dpRank);
    this.continuous = false;
    this.resyncDue = reason;
    this.wakeApplier?.();
  }

  /** Resolves once every message received so far has been handled (nothing queued or running). */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Stops both loops; nothing is applied for this subscriber once this returns. */
  close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      this.abort.abort();
      if (this.probeTimer) clearTimeout(this.probeTimer);
      this.socket.close();
      this.queue.length = 0;
      this.wakeApplier?.();
      this.wakeReceiver?.();
      this.notifyIdle();
      this.markCaughtUp();
      this.markJoined();
    }
    return this.loops;
  }

  private joinedNow(): void {
    this.opts.counters.joins++;
    this.markJoined();
  }

  private lostConnection(): void {
    this.disconnected = true;
    this.continuous = false;
  }

  /** A connection to the publisher is up (the first or a reconnect): schedule its join probe. */
  private connected(): void {
    if (this.closed) return;
    if (!this.opts.replayEndpoint) {
      // Nothing can prove that the engine behind the new connection is the one that was indexed.
      if (this.disconnected && this.tracker.lastApplied !== null)
        this.resync('the event stream reconnected and there is no replay service to prove the engine did not restart');
      else this.continuous = true;
      this.disconnected = false;
      return this.joinedNow();
    }
    if (this.disconnected) this.awaitingProbe = true;
    if (this.probeTimer) clearTimeout(this.probeTimer);
    this.probeTimer = setTimeout(() => {
      this.probeTimer = null;
      this.probeDue = true;
      this.wakeApplier?.();
    }, JOIN_PROBE_DELAY_MS);
    this.probeTimer.unref();
  }

  private async receiveLoop(): Promise<void> {
    let burst = 0;
    try {
      for await (const frames of this.socket) {
        if (this.closed) return;
        this.queue.push(frames);
        this.wakeApplier?.();
        if (this.queue.length >= this.opts.queueLimit) {
          await new Promise<void>((resolve) => (this.wakeReceiver = resolve));
          this.wakeReceiver = null;
          burst = 0;
        } else if (++burst >= RECEIVE_BURST) {
          burst = 0;
          await yieldToEventLoop();
        }
      }
    } catch (err) {
      if (!this.closed) this.opts.onError?.(err);
    }
  }

  private async applyLoop(): Promise<void> {
    // guarded() sets busy before its first await: idle() waits for the catch-up.
    if (this.opts.resumeAfter !== undefined) await this.guarded(() => this.catchUp(this.opts.resumeAfter!));
    this.markCaughtUp();
    while (!this.closed) {
      if (this.resyncDue !== null) {
        // Cleared again here, between batches: one applying when resync() was called may have added blocks.
        const reason = this.resyncDue;
        this.resyncDue = null;
        this.report({ kind: 'index_cleared', reason });
        this.clearIndex();
        this.continuous = !this.opts.replayEndpoint;
        if (this.opts.replayEndpoint) this.probeDue = true;
        continue;
      }
      if (this.probeDue) {
        this.probeDue = false;
        await this.guarded(() => this.probeMissed());
        this.joinedNow();
        continue;
      }
      const frames = this.awaitingProbe ? undefined : this.queue.shift();
      if (!frames) {
        this.notifyIdle();
        await new Promise<void>((resolve) => (this.wakeApplier = resolve));
        this.wakeApplier = null;
        continue;
      }
      if (this.queue.length < this.opts.queueLimit) this.wakeReceiver?.();
      await this.guarded(() => this.handleMessage(frames));
    }
  }

  /** Runs one step of the apply loop: busy meanwhile, failures reported rather than thrown. */
  private async guarded(step: () => Promise<void>): Promise<void> {
    this.busy = true;
    try {
      await step();
    } catch (err) {
      if (!this.closed) this.opts.onError?.(err);
    } finally {
      this.busy = false;
    }
  }

  private async handleMessage(frames: Buffer[]): Promise<void> {
    const { counters } = this.opts;
    const parsed = parseEventMessage(frames);
    if (!parsed.ok) {
      counters.decodeErrors++;
      return;
    }
    const { seq, payload } = parsed.value;
    let verdict = this.tracker.classify(seq);
    if (verdict.kind === 'duplicate') {
      counters.duplicates++;
      return;
    }
    if (verdict.kind === 'restart') {
      // The engine process started again: whatever it held is gone, and numbering restarts at 0.
      counters.restarts++;
      this.report({ kind: 'restart', via: 'sequence', seq, lastSeq: this.tracker.lastApplied });
      this.clearIndex();
      verdict = this.tracker.classify(seq);
    }
    if (verdict.kind === 'gap') {
      counters.gaps++;
      this.report({ kind: 'gap', from: verdict.from, to: seq });
      await this.recover(verdict.from, seq, payload);
    } else {
      await this.applyPayload(seq, payload);
    }
  }

  /** Applies one batch (decoded natively), then records its sequence number (applied or undecodable). */
  private async applyPayload(seq: bigint, payload: Buffer): Promise<void> {
    const refusedBefore = this.opts.counters.rejected.blockSize ?? 0;
    const appliedBefore = this.opts.counters.applied;
    const events = await this.opts.applier.applyPayload(this.opts.worker, this.opts.dpRank, payload, this.opts.counters);
    if (this.closed) return;
    if ((this.opts.counters.rejected.blockSize ?? 0) > refusedBefore) this.blockSizeRefused(payload);
    else if (this.blockSizeMismatch !== null && this.opts.counters.applied > appliedBefore && acceptsStored(payload, this.opts.applier.indexer.blockSize)) {
      this.blockSizeMismatch = null;
      this.report({ kind: 'block_size_ok', routerBlockSize: this.opts.applier.indexer.blockSize });
    }
    this.sliceEvents += events + 1;
    this.tracker.applied(seq);
    this.lastPayload = payload;
    if (this.sliceEvents >= this.opts.eventsPerSlice) {
      this.sliceEvents = 0;
      await yieldToEventLoop();
    }
  }

  /**
   * Batches [from, liveSeq) were lost. Replays from `from`; the live batch `liveSeq` is applied in
   * its turn (from the replay or after it). When the replay cannot give the missing batches (no
   * replay endpoint, failure, or they are older than the engine's buffer), the worker's index is
   * cleared: it would otherwise keep blocks whose removal was lost.
   */
  private async recover(from: bigint, liveSeq: bigint, livePayload: Buffer): Promise<void> {
    const { counters, replayEndpoint } = this.opts;
    if (!replayEndpoint) {
      counters.replayFailures++;
      this.report({ kind: 'index_cleared', reason: 'no replay endpoint to repair the gap' });
      return this.restartFrom(liveSeq, livePayload);
    }
    counters.replays++;
    this.replaying = true;
    let received: boolean;
    try {
      received = await this.applyReplay(replayEndpoint, from, "the gap's start");
    } catch (err) {
      if (this.closed) return;
      if (!(err instanceof ReplayError)) throw err;
      counters.replayFailures++;
      this.report({ kind: 'index_cleared', reason: `replay failed: ${err.message}` });
      return this.restartFrom(liveSeq, livePayload);
    } finally {
      this.replaying = false;
    }
    if (this.closed) return;
    if (!received) {
      // Nothing buffered from `from` on, not even the live batch: the buffer was reset (restart).
      counters.replayTooOld++;
      this.report({ kind: 'index_cleared', reason: 'the replay buffer holds nothing from the gap on' });
      return this.restartFrom(liveSeq, livePayload);
    }
    const lastApplied = this.tracker.lastApplied ?? -1n;
    if (lastApplied >= liveSeq) {
      this.tracker.replayedThrough(liveSeq);
      this.report({ kind: 'replayed', from, to: liveSeq });
    } else if (lastApplied === liveSeq - 1n) {
      await this.applyPayload(liveSeq, livePayload);
      this.report({ kind: 'replayed', from, to: liveSeq });
    } else {
      // The replay ended before reaching the live batch: the engine's numbering moved under us.
      counters.replayFailures++;
      this.report({ kind: 'index_cleared', reason: `the replay ended at ${lastApplied}, before the live batch ${liveSeq}` });
      await this.restartFrom(liveSeq, livePayload);
    }
  }

  /**
   * Applies the engine's buffered batches from `from` (the batch after the last applied one) on,
   * in order; true when it sent any. The request starts at the last applied batch, the anchor,
   * which must come back as it was applied: otherwise the engine restarted (see the header), and
   * the rank is cleared and rebuilt from the new process's buffer. When the buffer no longer holds
   * the anchor (`what`: what `from` is, for the report), the history in between is lost: the
   * rank is cleared and rebuilt from what the buffer holds.
   * Throws ReplayError when the replay fails or skips a batch.
   */
  private async applyReplay(endpoint: string, from: bigint, what: string): Promise<boolean> {
    const { counters } = this.opts;
    const anchor = this.tracker.lastApplied !== null && this.tracker.lastApplied === from - 1n ? this.tracker.lastApplied : null;
    let verified = anchor === null;
    let first = true;
    for await (const batch of replayBatches(endpoint, anchor ?? from, { timeoutMs: this.opts.replayTimeoutMs, signal: this.abort.signal })) {
      if (this.closed) return !first;
      if (!verified) {
        // A buffer that answers from below the anchor (vLLM answers from it on): decided at the anchor.
        if (batch.seq < anchor!) continue;
        if (batch.seq === anchor) {
          if (this.lastPayload !== null && !batch.payload.equals(this.lastPayload))
            return this.restarted(endpoint, anchor, `the replay buffer holds another batch ${anchor} than the one applied`);
          verified = true;
          continue;
        }
        verified = true; // the anchor aged out of the buffer: handled below as a buffer starting late
      }
      if (first) {
        first = false;
        if (batch.seq > from && this.tracker.lastApplied === null) {
          // Joining an engine whose buffer no longer starts at its first batch: this rank's index
          // holds nothing yet (or was just cleared), so nothing is lost.
          this.tracker.resumeAt(batch.seq - 1n);
        } else if (batch.seq > from) {
          // The engine no longer buffers the start: rebuild from what it still has.
          counters.replayTooOld++;
          this.report({ kind: 'index_cleared', reason: `the replay buffer starts at ${batch.seq}, after ${what} ${from}` });
          this.clearIndex();
          this.tracker.resumeAt(batch.seq - 1n);
        }
      }
      const lastApplied = this.tracker.lastApplied ?? -1n;
      if (batch.seq <= lastApplied) continue; // already applied
      if (batch.seq !== lastApplied + 1n) throw new ReplayError(`the replay skipped from ${lastApplied} to ${batch.seq}`);
      await this.applyPayload(batch.seq, batch.payload);
      if (this.closed) return true;
      counters.replayedBatches++;
    }
    if (!verified && !this.closed) return this.restarted(endpoint, anchor!, `the replay buffer holds nothing from batch ${anchor} on`);
    if (!this.closed) this.continuous = true;
    return !first;
  }

  /**
   * The replay showed that the engine is another process than the one indexed: clears the rank
   * and rebuilds it from everything the new process buffers (numbered from 0 again).
   */
  private async restarted(endpoint: string, lastSeq: bigint, reason: string): Promise<boolean> {
    this.opts.counters.restarts++;
    this.report({ kind: 'restart', via: 'replay', seq: null, lastSeq, reason });
    this.clearIndex();
    const received = await this.applyReplay(endpoint, 0n, "the restarted engine's first batch");
    // Live batches of the new process queued meanwhile were applied by this replay: not another restart.
    this.tracker.replayedThrough(-1n);
    return received;
  }

  /**
   * A restored index holds everything through `after`: replay what came since, so the index is
   * current before the first live batch (which otherwise would be a gap from 0 and, past the
   * engine's buffer, clear the restored blocks). Live batches the replay already applied are
   * then skipped as duplicates.
   */
  private async catchUp(after: bigint): Promise<void> {
    this.tracker.resumeAt(after);
    // Without a replay service the next live batch shows the gap, and the index is cleared then.
    if (!this.opts.replayEndpoint) return;
    this.opts.counters.replays++;
    const failure = await this.replayAfter(after, "the restored snapshot's next batch");
    if (this.closed) return;
    if (failure !== null) this.report({ kind: 'catch_up_failed', reason: failure });
    else this.report({ kind: 'caught_up', from: after + 1n, to: this.tracker.lastApplied === after ? null : this.tracker.lastApplied });
  }

  /**
   * The join probe: applies what the engine published after the last applied batch and before
   * this subscription took effect (usually nothing). A failed probe loses nothing known to be
   * missing: the next live batch still shows a gap if there is one.
   */
  private async probeMissed(): Promise<void> {
    const after = this.tracker.lastApplied ?? -1n;
    const reconnected = this.disconnected;
    this.disconnected = false;
    this.awaitingProbe = false;
    const failure = await this.replayAfter(after, 'the next expected batch');
    if (this.closed) return;
    if (failure !== null) {
      // A first join has nothing to lose; after a reconnect the engine may be another process.
      if (reconnected && after >= 0n) this.resync(`the event stream reconnected and the replay could not prove the engine did not restart: ${failure}`);
      return;
    }
    const last = this.tracker.lastApplied ?? -1n;
    if (last > after) this.report({ kind: 'joined', from: after + 1n, to: last });
  }

  /**
   * Replays every buffered batch after `after`; live batches the replay overtook are then skipped
   * as duplicates. Returns why the replay failed (counted), or null.
   */
  private async replayAfter(after: bigint, what: string): Promise<string | null> {
    this.replaying = true;
    try {
      await this.applyReplay(this.opts.replayEndpoint!, after + 1n, what);
    } catch (err) {
      if (this.closed) return null;
      if (!(err instanceof ReplayError)) throw err;
      this.opts.counters.replayFailures++;
      return err.message;
    } finally {
      this.replaying = false;
    }
    if (!this.closed) this.tracker.replayedThrough(after);
    return null;
  }

  /** Unrecoverable history: clear the worker's blocks and continue from the live batch. */
  private async restartFrom(liveSeq: bigint, livePayload: Buffer): Promise<void> {
    this.clearIndex();
    this.continuous = true;
    this.tracker.resumeAt(liveSeq - 1n);
    await this.applyPayload(liveSeq, livePayload);
  }

  /**
   * Stored events were refused for their block size: names the engine's size (decoding the
   * payload in TypeScript, at most once a second) and reports it the first time and when it
   * changes, never per batch.
   */
  private blockSizeRefused(payload: Buffer): void {
    const now = performance.now();
    if (this.blockSizeMismatch !== null && now - this.mismatchDecodedAt < MISMATCH_DECODE_MS) return;
    this.mismatchDecodedAt = now;
    const routerBlockSize = this.opts.applier.indexer.blockSize;
    const decoded = decodeEventBatch(payload);
    if (!decoded.ok) return;
    const stored = decoded.batch.events.find((e) => e.kind === 'stored' && e.blockSize !== routerBlockSize);
    if (!stored || stored.kind !== 'stored') return;
    if (this.blockSizeMismatch?.engineBlockSize === stored.blockSize) return;
    this.blockSizeMismatch = { engineBlockSize: stored.blockSize, routerBlockSize };
    this.report({ kind: 'block_size_mismatch', engineBlockSize: stored.blockSize, routerBlockSize });
  }

  private report(what: IngestIncident['what']): void {
    if (!this.opts.onIncident) return;
    try {
      this.opts.onIncident({ worker: this.opts.worker, dpRank: this.opts.dpRank, what });
    } catch (err) {
      this.opts.onError?.(err);
    }
  }

  private clearIndex(): void {
    this.opts.applier.clear(this.opts.worker, this.opts.dpRank);
    this.tracker.reset();
    this.lastPayload = null;
  }

  private isIdle(): boolean {
    return this.closed || (this.queue.length === 0 && !this.busy);
  }

  private notifyIdle(): void {
    if (!this.isIdle()) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }
}

/** The payload holds a stored event of the index's block size (the engine now agrees with the router). */
function acceptsStored(payload: Buffer, blockSize: number): boolean {
  const decoded = decodeEventBatch(payload);
  return decoded.ok && decoded.batch.events.some((e) => e.kind === 'stored' && e.blockSize === blockSize);
}
