// A pool of simulated engines in virtual time with the routing state that serves it: the pool's
// KvIndexer (fed by its engines' KV events, as the live router's event ingest would) and its
// RoutingCore. Step completions go through one event queue shared by every pool of a fleet.
import type { KvEvent, StepResult, TokenOutput } from '../engine/index.js';
import { EngineModel } from '../engine/model.js';
import type { EngineConfig } from '../engine/index.js';
import type { EventQueue } from './event-queue.js';
import type { PolicySetup } from './policies.js';

export interface StepDone {
  pool: VirtualPool;
  worker: number;
}

export class VirtualPool {
  readonly engines: EngineModel[];
  private readonly pending: Array<StepResult | null>;

  constructor(
    readonly name: string,
    workers: number,
    engine: EngineConfig & { kvBlocks: number },
    readonly routing: PolicySetup,
    private readonly steps: EventQueue<StepDone>,
    seed: number,
  ) {
    this.engines = Array.from({ length: workers }, (_, w) => new EngineModel({ ...engine, seed: seed * 1000 + w }));
    this.pending = this.engines.map(() => null);
    routing.core.setWorkers(this.engines.map((_, w) => ({ worker: w, kvCapacityBlocks: engine.kvBlocks })));
  }

  /** Starts a step on an idle engine after new work arrived. */
  kick(worker: number, now: number): void {
    if (!this.pending[worker]) this.startStep(worker, now);
  }

  /** Delivers a finished step (events into the index) and starts the next one. */
  completeStep(worker: number, now: number): readonly TokenOutput[] {
    const result = this.pending[worker]!;
    if (this.routing.consumesEvents) this.applyEvents(worker, result.events);
    this.startStep(worker, now);
    return result.outputs;
  }

  private startStep(worker: number, now: number): void {
    const result = this.engines[worker].step(now);
    this.pending[worker] = result;
    if (result) this.steps.push(now + result.durationMs, { pool: this, worker });
  }

  private applyEvents(worker: number, events: readonly KvEvent[]): void {
    const indexer = this.routing.indexer;
    for (const ev of events) {
      if (ev.type === 'BlockStored') {
        indexer.applyStored(worker, 0, ev.parentBlockHash, BigUint64Array.from(ev.blockHashes), Uint32Array.from(ev.tokenIds), {
          loraName: ev.loraName ?? undefined,
        });
      } else if (ev.type === 'BlockRemoved') {
        indexer.applyRemoved(worker, 0, BigUint64Array.from(ev.blockHashes));
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
