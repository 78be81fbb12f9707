// Shared by the engine model tests: run a model in virtual time and collect what it produced.
import { EngineModel, type EngineConfig, type KvEvent, type StepResult, type TokenOutput } from '../../../src/sim/engine/index.js';

export interface Trace {
  steps: StepResult[];
  outputs: TokenOutput[];
  events: KvEvent[];
  /** Virtual time after the last step. */
  endMs: number;
}

/** Steps the model back to back from `startMs` until it is idle (bounded, so a livelock fails the test). */
export function runToIdle(model: EngineModel, startMs = 0, maxSteps = 100_000): Trace {
  const trace: Trace = { steps: [], outputs: [], events: [], endMs: startMs };
  let now = startMs;
  for (let i = 0; i < maxSteps; i++) {
    const r = model.step(now);
    if (r === null) {
      trace.endMs = now;
      return trace;
    }
    trace.steps.push(r);
    trace.outputs.push(...r.outputs);
    trace.events.push(...r.events);
    now = r.startMs + r.durationMs;
  }
  throw new Error(`the model did not go idle within ${maxSteps} steps`);
}

export function prompt(length: number, offset = 0): Uint32Array {
  return Uint32Array.from({ length }, (_, i) => 1000 + offset + i);
}

/** The outputs of one request, in order. */
export function outputsOf(trace: Trace, id: string): TokenOutput[] {
  return trace.outputs.filter((o) => o.id === id);
}

export function model(cfg: EngineConfig = {}): EngineModel {
  return new EngineModel({ blockSize: 4, kvBlocks: 64, ...cfg });
}

export function storedHashes(events: readonly KvEvent[]): bigint[] {
  return events.flatMap((e) => (e.type === 'BlockStored' ? [...e.blockHashes] : []));
}

export function removedHashes(events: readonly KvEvent[]): bigint[] {
  return events.flatMap((e) => (e.type === 'BlockRemoved' ? [...e.blockHashes] : []));
}
