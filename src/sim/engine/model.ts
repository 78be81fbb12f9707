// EngineModel: a vLLM-like engine as a pure state machine. Time is passed in; step(now) plans one
// forward pass, computes its modelled duration, and returns the tokens and KV events that pass
// produces. The caller (a real-time driver or a virtual-time simulator) waits durationMs and then
// delivers them. No clocks, no I/O, no randomness but the seeded hashes: same inputs, same outputs.
import { expectInteger, expectUint32Array, describe } from '../../util/validate.js';
import { BlockTables } from './block-table.js';
import { type ResolvedEngineConfig, type EngineConfig, resolveEngineConfig, type SchedulingPolicy } from './config.js';
import { EventLog, type KvEvent } from './events.js';
import { KvCache } from './kv-cache.js';
import { OffloadTier } from './offload-tier.js';
import { type FinishReason, Sequence, type SimRequest, type TokenOutput } from './request.js';
import { TokenSampler } from './rng.js';
import { Scheduler } from './scheduler.js';
import { idlePollMs, stepMs } from './timing.js';

export interface StepResult {
  startMs: number;
  durationMs: number;
  outputs: TokenOutput[];
  events: KvEvent[];
}

export interface EngineMetrics {
  /** Fraction of KV blocks referenced by requests (cached free blocks count as free, as in vLLM). */
  kvUsage: number;
  usedBlocks: number;
  totalBlocks: number;
  running: number;
  /** Waiting requests, including those receiving KV by transfer. */
  waiting: number;
  /** cachedTokens / promptTokens. */
  prefixHitRate: number;
  preemptions: number;
  promptTokens: number;
  cachedTokens: number;
  generatedTokens: number;
  /** Blocks registered in the prefix cache (referenced or not). */
  cachedBlocks: number;
  evictions: number;
  /** The CPU offload tier (all 0 without one): blocks it holds, blocks moved there, blocks it evicted. */
  offloadedBlocks: number;
  offloadStores: number;
  offloadEvictions: number;
  /** Of cachedTokens, those reloaded from the CPU tier instead of found on the GPU. */
  reloadedTokens: number;
  /** Finished prefills whose blocks are held for a decode worker. */
  heldRequests: number;
  steps: number;
}

export class EngineModel {
  readonly config: ResolvedEngineConfig;
  private readonly cache: KvCache;
  private readonly offload: OffloadTier | null;
  private readonly tables: BlockTables;
  private readonly scheduler: Scheduler;
  private readonly sampler: TokenSampler;
  /** The events of the step being planned and committed. */
  private readonly log: EventLog;
  /** Live requests: waiting, transferring, running or held. */
  private readonly requests = new Map<string, Sequence>();
  /** Held prefills in hold-expiry order (time only moves forward). */
  private readonly held = new Map<string, Sequence>();
  private readonly capacityTokens: number;
  private generatedTokens = 0;
  private steps = 0;

  constructor(cfg?: EngineConfig) {
    this.config = resolveEngineConfig(cfg);
    this.log = new EventLog(this.config.kvEvents);
    const { kvBlocks, blockSize, offloadBlocks } = this.config;
    this.offload = offloadBlocks > 0 ? new OffloadTier(offloadBlocks, kvBlocks, blockSize) : null;
    this.cache = new KvCache(kvBlocks, this.offload);
    this.tables = new BlockTables(this.cache, blockSize, this.offload);
    this.scheduler = new Scheduler(this.config, this.cache, this.tables, this.offload);
    this.sampler = new TokenSampler(this.config.seed);
    this.capacityTokens = this.config.kvBlocks * this.config.blockSize;
  }

  /** Queues a request. TypeError/RangeError on a malformed request, a duplicate id, or a prompt the cache can never hold. */
  submit(req: SimRequest, nowMs: number): void {
    expectTime(nowMs);
    const r = validateRequest(req, this.capacityTokens, this.config.schedulingPolicy);
    if (this.requests.has(r.id)) throw new RangeError(`request id '${r.id}' is already in use`);
    this.expireHolds(nowMs);
    const seq = new Sequence(r, this.sampler.streamKey(r.id), this.config.blockSize);
    this.requests.set(r.id, seq);
    this.scheduler.enqueue(seq);
  }

  /** Drops a request wherever it is (its blocks are freed; cached ones stay cached). False when unknown. */
  abort(id: string, nowMs: number): boolean {
    expectTime(nowMs);
    const seq = this.requests.get(id);
    if (seq === undefined) return false;
    this.requests.delete(id);
    if (seq.state === 'held') this.held.delete(id);
    else this.scheduler.remove(seq);
    this.tables.free(seq);
    this.expireHolds(nowMs);
    return true;
  }

  /**
   * Frees the blocks a finished prefill holds. For a request still in flight, cancels the hold so its
   * blocks are freed when it finishes. False when the request is unknown or holds nothing.
   */
  release(id: string): boolean {
    const seq = this.requests.get(id);
    if (seq === undefined) return false;
    if (seq.state === 'held') {
      this.dropHeld(seq);
      return true;
    }
    if (!seq.holdAfterFinish || seq.holdReleased) return false;
    seq.holdReleased = true;
    return true;
  }

  hasWork(): boolean {
    const s = this.scheduler;
    return s.running.length > 0 || s.waiting.size > 0 || s.transferring.length > 0;
  }

  /** Runs one scheduler step starting at `nowMs`; null when there is nothing to do. */
  step(nowMs: number): StepResult | null {
    expectTime(nowMs);
    this.expireHolds(nowMs);
    if (!this.hasWork()) return null;
    const log = this.log;
    const plan = this.scheduler.plan(nowMs, log);
    this.steps++;
    if (plan.count === 0) {
      const events = log.take();
      return { startMs: nowMs, durationMs: this.idleWaitMs(nowMs), outputs: [], events };
    }
    const usage = this.cache.usedBlocks / this.cache.totalBlocks;
    const durationMs = stepMs(this.config, plan.prefillTokens, plan.decodeTokens, usage);
    const endMs = nowMs + durationMs;
    // The outputs' array at its final size: grown by push, a decode step's array of a hundred
    // outputs was reallocated four times (the largest share of a replay's garbage).
    let finishing = 0;
    for (let i = 0; i < plan.count; i++) if (plan.seqs[i].numComputed + plan.newTokens[i] === plan.seqs[i].numTokens) finishing++;
    const outputs = new Array<TokenOutput>(finishing);
    let n = 0;
    for (let i = 0; i < plan.count; i++) {
      const seq = plan.seqs[i];
      seq.numComputed += plan.newTokens[i];
      this.tables.commitFull(seq, log);
      if (seq.numComputed === seq.numTokens) outputs[n++] = this.sample(seq, endMs);
    }
    outputs.length = n;
    this.scheduler.pruneRunning();
    return { startMs: nowMs, durationMs, outputs, events: log.take() };
  }

  /** Drops the prefix cache and the CPU tier (vLLM's reset_prefix_cache). Requests keep running on their blocks. */
  reset(): KvEvent[] {
    this.cache.clear();
    this.offload?.clear();
    // Blocks already in tables are no longer cached: later blocks of those tables cannot be chained.
    for (const seq of this.requests.values()) if (seq.committedBlocks > 0) seq.chainBroken = true;
    return this.config.kvEvents ? [{ type: 'AllBlocksCleared' }] : [];
  }

  metrics(): EngineMetrics {
    const s = this.scheduler;
    return {
      kvUsage: this.cache.usedBlocks / this.cache.totalBlocks,
      usedBlocks: this.cache.usedBlocks,
      totalBlocks: this.cache.totalBlocks,
      running: s.running.length,
      waiting: s.waiting.size + s.transferring.length,
      prefixHitRate: s.promptTokens === 0 ? 0 : s.cachedTokens / s.promptTokens,
      preemptions: s.preemptions,
      promptTokens: s.promptTokens,
      cachedTokens: s.cachedTokens,
      generatedTokens: this.generatedTokens,
      cachedBlocks: this.cache.cachedBlocks,
      evictions: this.cache.evictions,
      offloadedBlocks: this.offload?.size ?? 0,
      offloadStores: this.offload?.stored ?? 0,
      offloadEvictions: this.offload?.evicted ?? 0,
      reloadedTokens: s.reloadedTokens,
      heldRequests: this.held.size,
      steps: this.steps,
    };
  }

  /** The hashes currently in the prefix cache (what a consumer of the events should hold). */
  cachedBlockHashes(): Set<bigint> {
    return new Set(this.cache.cachedHashes());
  }

  /** The hashes currently on the CPU tier (what a consumer of the CPU events should hold). */
  offloadedBlockHashes(): Set<bigint> {
    return new Set(this.offload?.hashes() ?? []);
  }

  private sample(seq: Sequence, endMs: number): TokenOutput {
    const index = seq.generated;
    const tokenId = this.sampler.tokenId(seq.streamKey, index);
    seq.appendToken(tokenId);
    this.generatedTokens++;
    let finishReason: FinishReason | undefined;
    // As current vLLM's check_stop: an end-of-sequence token first, then the length caps
    // (max_tokens, or the longest context the whole cache can hold).
    const eos = this.config.eosProbability;
    if (!seq.ignoreEos && eos > 0 && this.sampler.eosDraw(seq.streamKey, index) < eos) finishReason = 'stop';
    else if (seq.generated >= seq.maxTokens || seq.numTokens >= this.capacityTokens) finishReason = 'length';
    const out: TokenOutput = { id: seq.id, tokenId, index, promptTokens: seq.promptLen, cachedTokens: seq.cachedTokens };
    if (finishReason !== undefined) {
      out.finishReason = finishReason;
      this.finish(seq, endMs);
    }
    return out;
  }

  private finish(seq: Sequence, endMs: number): void {
    if (seq.holdAfterFinish && !seq.holdReleased) {
      seq.state = 'held';
      seq.holdUntilMs = endMs + this.config.prefillHoldMs;
      this.held.set(seq.id, seq);
      return;
    }
    seq.state = 'finished';
    this.requests.delete(seq.id);
    this.tables.free(seq);
  }

  private dropHeld(seq: Sequence): void {
    this.held.delete(seq.id);
    this.requests.delete(seq.id);
    seq.state = 'finished';
    this.tables.free(seq);
  }

  private expireHolds(nowMs: number): void {
    for (const seq of this.held.values()) {
      if (seq.holdUntilMs > nowMs) break;
      this.dropHeld(seq);
    }
  }

  /**
   * Nothing could be scheduled: requests wait for a KV transfer or for held blocks. Wait until the
   * next of those deadlines, but no longer than an idle poll, so new arrivals are not held up.
   */
  private idleWaitMs(nowMs: number): number {
    const s = this.scheduler;
    const blockedByHolds = s.waiting.size > 0 && this.held.size > 0;
    if (s.transferring.length === 0 && !blockedByHolds) {
      // With no transfer and no hold, every block is free or evictable and any request fits alone.
      throw new Error('engine model invariant violated: waiting requests cannot be scheduled on an empty engine');
    }
    let next = s.nextTransferMs();
    if (blockedByHolds) next = Math.min(next, this.held.values().next().value!.holdUntilMs);
    return Math.min(Math.max(next - nowMs, 0), idlePollMs(this.config)) || idlePollMs(this.config);
  }
}

function expectTime(nowMs: unknown): void {
  if (typeof nowMs !== 'number' || !Number.isFinite(nowMs)) {
    throw new TypeError(`nowMs must be a finite number, got ${describe(nowMs)}`);
  }
}

type ValidRequest = ConstructorParameters<typeof Sequence>[0];

function validateRequest(req: unknown, capacityTokens: number, policy: SchedulingPolicy): ValidRequest {
  if (req === null || typeof req !== 'object' || Array.isArray(req)) throw new TypeError(`a request must be an object, got ${describe(req)}`);
  const r = req as Record<string, unknown>;
  if (typeof r.id !== 'string' || r.id.length === 0) throw new TypeError(`request id must be a non-empty string, got ${describe(r.id)}`);
  const prompt = expectUint32Array(r.promptTokens, 'promptTokens');
  if (prompt.length === 0) throw new RangeError('promptTokens must not be empty');
  if (prompt.length >= capacityTokens) {
    throw new RangeError(`a prompt of ${prompt.length} tokens can never fit this engine's KV cache (${capacityTokens} tokens, including one generated token)`);
  }
  const maxTokens = expectInteger(r.maxTokens, 'maxTokens', 1, Number.MAX_SAFE_INTEGER);
  if (r.loraName !== undefined && r.loraName !== null && typeof r.loraName !== 'string') {
    throw new TypeError(`loraName must be a string, got ${describe(r.loraName)}`);
  }
  const transferred = r.kvTransferredTokens === undefined ? 0 : expectInteger(r.kvTransferredTokens, 'kvTransferredTokens', 0, prompt.length);
  const priority = r.priority === undefined ? 0 : expectInteger(r.priority, 'priority', Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
  // As vLLM: a priority means nothing to an FCFS scheduler, so it is refused rather than ignored.
  if (priority !== 0 && policy !== 'priority') throw new RangeError(`priority ${priority} needs schedulingPolicy 'priority' (this engine schedules fcfs)`);
  return {
    id: r.id,
    promptTokens: prompt,
    maxTokens,
    loraName: typeof r.loraName === 'string' ? r.loraName : null,
    kvTransferredTokens: transferred,
    holdBlocksAfterFinish: optionalBoolean(r.holdBlocksAfterFinish, 'holdBlocksAfterFinish'),
    ignoreEos: optionalBoolean(r.ignoreEos, 'ignoreEos'),
    priority,
  };
}

function optionalBoolean(value: unknown, name: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw new TypeError(`${name} must be a boolean, got ${describe(value)}`);
  return value;
}
