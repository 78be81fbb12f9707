// A pool of simulated engines in virtual time with the routing state that serves it: the pool's
// KvIndexer (fed by its engines' KV events, as the live router's event ingest would) and its
// RoutingCore (whose workers the fleet's WorkerPool adds). Step completions go through one event
// queue shared by every pool of a fleet.
import type { KvEvent, StepResult, TokenOutput } from '../engine/index.js';
import { EngineModel } from '../engine/model.js';
import type { EngineConfig } from '../engine/index.js';
import type { EventQueue } from './event-queue.js';
import type { PolicySetup } from './policies.js';

export interface StepDone {
  pool: VirtualPool;
  /** The engine's index in its pool. */
  index: number;
}

export class VirtualPool {
  readonly engines: EngineModel[];
  private readonly pending: Array<StepResult | null>;
  /** Each engine's entry in the step queue, one object per engine (an engine has one step at a time). */
  private readonly stepDone: StepDone[];

  constructor(
    readonly name: string,
    workers: number,
    engine: EngineConfig & { kvBlocks: number },
    readonly routing: PolicySetup,
    private readonly steps: EventQueue<StepDone>,
    seed: number,
    /** The router's id of each engine (its index by default). */
    private readonly workerIds: readonly number[] = Array.from({ length: workers }, (_, i) => i),
  ) {
    // Engines whose events nothing reads (a policy that never looks at the index) build none.
    this.engines = Array.from({ length: workers }, (_, w) => new EngineModel({ ...engine, kvEvents: routing.consumesEvents, seed: seed * 1000 + w }));
    this.pending = this.engines.map(() => null);
    this.stepDone = this.engines.map((_, index) => ({ pool: this, index }));
  }

  /** Starts a step on an idle engine after new work arrived. */
  kick(index: number, now: number): void {
    if (!this.pending[index]) this.startStep(index, now);
  }

  /** Delivers a finished step (events into the index) and starts the next one. */
  completeStep(index: number, now: number): readonly TokenOutput[] {
    const result = this.pending[index]!;
    if (this.routing.consumesEvents) this.applyEvents(index, result.events);
    this.startStep(index, now);
    return result.outputs;
  }

  private startStep(index: number, now: number): void {
    const result = this.engines[index].step(now);
    this.pending[index] = result;
    if (result) this.steps.push(now + result.durationMs, this.stepDone[index]);
  }

  private applyEvents(index: number, events: readonly KvEvent[]): void {
    const indexer = this.routing.indexer;
    const worker = this.workerIds[index];
    for (const ev of events) {
      // An index without lower tiers passes over the CPU tier's events (the live ingest counts them).
      if (ev.type !== 'AllBlocksCleared' && ev.medium !== 'GPU' && !indexer.lowerTiers) continue;
      if (ev.type === 'BlockStored') {
        // The GPU's events as before (no medium: the device); the CPU tier's name their medium.
        const opts =
          ev.medium === 'GPU' ? (ev.loraName === null ? undefined : { loraName: ev.loraName }) : { loraName: ev.loraName ?? undefined, medium: ev.medium };
        indexer.applyStored(worker, 0, ev.parentBlockHash, ev.blockHashes, ev.tokenIds, opts);
      } else if (ev.type === 'BlockRemoved') {
        if (ev.medium === 'GPU') indexer.applyRemoved(worker, 0, ev.blockHashes);
        else indexer.applyRemoved(worker, 0, ev.blockHashes, { medium: ev.medium });
      } else {
        indexer.applyCleared(worker, 0);
      }
    }
  }
}

/** Mean over time of max / mean booked prefill tokens across a pool's workers. */
export class LoadSpreadSampler {
  private nextSampleMs = 0;
  private sum = 0;
  private samples = 0;

  constructor(private readonly periodMs: number) {}

  maybeSample(now: number, pool: VirtualPool): void {
    if (now < this.nextSampleMs) return;
    this.nextSampleMs = now + this.periodMs;
    let max = 0;
    let total = 0;
    for (const l of pool.routing.core.load()) {
      max = Math.max(max, l.prefillTokens);
      total += l.prefillTokens;
    }
    if (total > 0) {
      this.sum += max / (total / pool.engines.length);
      this.samples++;
    }
  }

  value(): number {
    return this.samples ? this.sum / this.samples : 1;
  }
}
