// Continuous batching like vLLM v1: each step spends a token budget on the running requests'
// decode tokens first, then on prefill chunks of running requests (FCFS), then admits waiting
// requests (FCFS, head-of-line: the first that does not fit stops admission). A running request
// that cannot get a block preempts the most recently admitted request not yet scheduled in this
// step (possibly itself): its blocks are freed (cached ones stay cached) and it goes back to the
// front of the waiting queue, to be recomputed later (with whatever prefix is still cached).
// Under schedulingPolicy 'priority' (vLLM's priority scheduling) the waiting queue is ordered by
// priority (lower first) then submission, a preempted request goes back to its place in that
// order, and the victim of a preemption is the lowest-priority running request not yet scheduled
// in the step (the latest submitted among equals).
import type { BlockTables } from './block-table.js';
import type { ResolvedEngineConfig } from './config.js';
import { Deque } from './deque.js';
import type { EventLog } from './events.js';
import type { KvCache } from './kv-cache.js';
import type { OffloadTier } from './offload-tier.js';
import type { Sequence } from './request.js';
import { reloadMs, transferMs } from './timing.js';

/** What one step computes: `newTokens[i]` tokens of `seqs[i]` for i in [0, count), in order. */
export interface StepPlan {
  count: number;
  /** Entries past `count` are left from earlier steps: the arrays keep their capacity. */
  seqs: Sequence[];
  newTokens: number[];
  /** Tokens computed in prefill chunks (the N of the prefill formula). */
  prefillTokens: number;
  /** One-token chunks completing a sequence (decode work). */
  decodeTokens: number;
}

const NO_SLOTS: readonly number[] = [];

export class Scheduler {
  readonly waiting = new Deque<Sequence>();
  running: Sequence[] = [];
  transferring: Sequence[] = [];
  preemptions = 0;
  /** Prompt tokens and prefix-cache hits, counted at each request's first admission. */
  promptTokens = 0;
  cachedTokens = 0;
  /** Of the cached tokens, those reloaded from the CPU tier. */
  reloadedTokens = 0;
  private stepNo = 0;
  private submitted = 0;
  /** The plan of the current step and the running queue's order at its start, reused step after step. */
  // (Counted, not truncated: setting an array's length to 0 drops its backing store, and every
  // step would grow a new one.)
  private readonly stepPlan: StepPlan = { count: 0, seqs: [], newTokens: [], prefillTokens: 0, decodeTokens: 0 };
  private readonly order: Sequence[] = [];

  constructor(
    private readonly cfg: ResolvedEngineConfig,
    private readonly cache: KvCache,
    private readonly tables: BlockTables,
    private readonly offload: OffloadTier | null = null,
  ) {}

  /**
   * Plans the step starting at `nowMs`; evictions and completed transfers append to `events`. The
   * plan is valid until the next call (its object and arrays are reused).
   */
  plan(nowMs: number, events: EventLog): StepPlan {
    this.stepNo++;
    this.completeTransfers(nowMs, events);
    const plan = this.stepPlan;
    plan.count = 0;
    plan.prefillTokens = 0;
    plan.decodeTokens = 0;
    let budget = this.cfg.maxNumBatchedTokens;
    // A copy: preemption takes requests out of the running queue while it is walked.
    const order = this.order;
    const runningAtStart = this.running.length;
    for (let i = 0; i < runningAtStart; i++) order[i] = this.running[i];
    // Decode tokens first: one per running request that has sampled its last token.
    for (let i = 0; i < runningAtStart; i++) {
      const s = order[i];
      if (budget === 0) break;
      if (s.state !== 'running' || s.numTokens - s.numComputed !== 1) continue;
      if (this.scheduleRunning(s, 1, plan, events)) budget--;
    }
    // Then prefill chunks of running requests (chunked prefill, or recompute after preemption).
    for (let i = 0; i < runningAtStart; i++) {
      const s = order[i];
      if (budget === 0) break;
      if (s.state !== 'running' || s.scheduledStep === this.stepNo) continue;
      const n = Math.min(s.numTokens - s.numComputed, budget);
      if (this.scheduleRunning(s, n, plan, events)) budget -= n;
    }
    this.admitWaiting(nowMs, budget, plan, events);
    return plan;
  }

  /** The earliest time at which a pending KV transfer completes (Infinity when none). */
  nextTransferMs(): number {
    let t = Infinity;
    for (const s of this.transferring) t = Math.min(t, s.readyAtMs);
    return t;
  }

  /** Queues a newly submitted sequence: at the back (fcfs), or at its place by priority. */
  enqueue(s: Sequence): void {
    s.arrivalSeq = this.submitted++;
    if (this.cfg.schedulingPolicy === 'priority') this.waiting.insert(this.placeOf(s), s);
    else this.waiting.pushBack(s);
  }

  /** Where `s` goes in a priority-ordered waiting queue: after every sequence that goes before it. */
  private placeOf(s: Sequence): number {
    let i = this.waiting.size;
    while (i > 0 && goesBefore(s, this.waiting.at(i - 1))) i--;
    return i;
  }

  /** Removes a sequence from whichever queue holds it. */
  remove(s: Sequence): void {
    if (s.state === 'waiting') this.waiting.remove(s);
    else if (s.state === 'running') this.running.splice(this.running.indexOf(s), 1);
    else if (s.state === 'transferring') this.transferring.splice(this.transferring.indexOf(s), 1);
  }

  /** Drops the sequences that finished in the last step from the running queue. */
  pruneRunning(): void {
    if (this.running.some((s) => s.state !== 'running')) this.running = this.running.filter((s) => s.state === 'running');
  }

  private scheduleRunning(s: Sequence, n: number, plan: StepPlan, events: EventLog): boolean {
    while (!this.tables.grow(s, s.numComputed + n, events)) {
      const victim = this.preemptionVictim(s);
      this.preempt(victim);
      if (victim === s) return false;
    }
    this.add(plan, s, n);
    return true;
  }

  /**
   * The most recently admitted running request not yet scheduled in this step, other than `s`;
   * else `s`. Under priority scheduling, the lowest-priority such request (or `s`, if lower).
   */
  private preemptionVictim(s: Sequence): Sequence {
    if (this.cfg.schedulingPolicy === 'priority') {
      let victim = s;
      for (const r of this.running) if (r !== s && r.scheduledStep !== this.stepNo && goesBefore(victim, r)) victim = r;
      return victim;
    }
    for (let i = this.running.length - 1; i >= 0; i--) {
      const r = this.running[i];
      if (r !== s && r.scheduledStep !== this.stepNo) return r;
    }
    return s;
  }

  private preempt(s: Sequence): void {
    this.running.splice(this.running.indexOf(s), 1);
    this.tables.free(s);
    s.state = 'waiting';
    if (this.cfg.schedulingPolicy === 'priority') this.waiting.insert(this.placeOf(s), s);
    else this.waiting.pushFront(s);
    this.preemptions++;
  }

  private admitWaiting(nowMs: number, budget: number, plan: StepPlan, events: EventLog): void {
    const bs = this.cfg.blockSize;
    while (this.waiting.size > 0) {
      // A request receiving KV holds a seat from admission: every block holder but a held prefill
      // is then running or about to run, so preemption can always make room for a lone request.
      if (this.running.length + this.transferring.length >= this.cfg.maxNumSeqs) return;
      const s = this.waiting.peek()!;
      const needsTransfer = !s.transferDone && s.transferTokens > 0;
      if (!needsTransfer && budget === 0) return;
      const matched = this.tables.matchPrefix(s);
      const start = matched.length * bs;
      const available = this.cache.availableBlocks - this.tables.lastMatchEvictable();
      // Blocks past the GPU prefix found on the CPU tier are reloaded, not computed.
      const offloaded = this.offload === null ? NO_SLOTS : this.tables.matchOffloaded(s, matched.length);
      const reloadEnd = start + offloaded.length * bs;
      if (needsTransfer || reloadEnd > start) {
        const end = needsTransfer ? Math.max(reloadEnd, Math.min(s.transferTokens, s.numTokens - 1)) : reloadEnd;
        if (end > start) {
          if (this.tables.blocksNeeded(s, end, matched.length) > available) return;
          this.waiting.shift();
          this.countAdmission(s, reloadEnd, reloadEnd - start);
          // Read now, before the allocation below can push other blocks out of the CPU tier (tail
          // first: a prefix's head stays the most recently used).
          for (let i = offloaded.length - 1; i >= 0; i--) this.offload!.touch(offloaded[i]);
          this.tables.adoptPrefix(s, matched);
          this.tables.grow(s, end, events);
          if (needsTransfer) s.transferDone = true;
          s.transferEnd = end;
          // Both cross the GPU's PCIe link: the reload, then what the prefill worker sends.
          s.readyAtMs = nowMs + reloadMs(this.cfg, reloadEnd - start) + transferMs(this.cfg, end - reloadEnd);
          s.state = 'transferring';
          this.transferring.push(s);
          continue;
        }
        s.transferDone = true; // the local prefix cache already holds what would be transferred
        if (budget === 0) return;
      }
      const n = Math.min(s.numTokens - start, budget);
      if (this.tables.blocksNeeded(s, start + n, matched.length) > available) return;
      this.waiting.shift();
      this.countAdmission(s, start);
      this.tables.adoptPrefix(s, matched);
      this.tables.grow(s, start + n, events);
      s.state = 'running';
      this.running.push(s);
      this.add(plan, s, n);
      budget -= n;
    }
  }

  private add(plan: StepPlan, s: Sequence, n: number): void {
    s.scheduledStep = this.stepNo;
    plan.seqs[plan.count] = s;
    plan.newTokens[plan.count] = n;
    plan.count++;
    if (n === 1 && s.numComputed + 1 === s.numTokens) plan.decodeTokens++;
    else plan.prefillTokens += n;
  }

  /** `reloadedTokens` of the `cachedTokens` come from the CPU tier. */
  private countAdmission(s: Sequence, cachedTokens: number, reloadedTokens = 0): void {
    if (s.admitted) return;
    s.admitted = true;
    s.cachedTokens = cachedTokens;
    this.promptTokens += s.promptLen;
    this.cachedTokens += cachedTokens;
    this.reloadedTokens += reloadedTokens;
  }

  /** Transfers and reloads done by `nowMs`: their complete blocks become cached and they join the running batch. */
  private completeTransfers(nowMs: number, events: EventLog): void {
    if (this.transferring.length === 0) return;
    const still: Sequence[] = [];
    for (const s of this.transferring) {
      if (s.readyAtMs > nowMs) {
        still.push(s);
        continue;
      }
      s.numComputed = s.transferEnd;
      this.tables.commitFull(s, events);
      s.state = 'running';
      this.running.push(s);
    }
    this.transferring = still;
  }
}

/** Priority order: lower priority first, then earlier submission. */
function goesBefore(a: Sequence, b: Sequence): boolean {
  return a.priority < b.priority || (a.priority === b.priority && a.arrivalSeq < b.arrivalSeq);
}
