// Fault switches of a simulated worker, for tests of everything that must survive a bad engine:
// fail the next N requests (500, OpenAI-style), hang (stop answering until released), slow
// (every engine step takes factor x longer), drop the next N event batches (a sequence gap),
// restart (engine state reset, event sequence numbers from 0). Settable in code or through
// POST /admin/faults. The switches are test knobs, independent of the engine: a restart leaves them
// as they are.
import { invalidRequest } from './errors.js';

export interface FaultCommand {
  fail_next?: number;
  hang?: boolean;
  slow?: number;
  drop_events?: number;
  restart?: boolean;
}

export class FaultState {
  private failRemaining = 0;
  private injected = 0;
  hung = false;
  slowFactor = 1;

  failNext(n: number): void {
    expectCount(n, 'failNext');
    this.failRemaining += n;
  }

  /** True (and counted) when this request must fail. */
  takeFailure(): boolean {
    if (this.failRemaining === 0) return false;
    this.failRemaining--;
    this.injected++;
    return true;
  }

  setSlow(factor: number): void {
    if (typeof factor !== 'number' || !Number.isFinite(factor) || factor <= 0) {
      throw new RangeError(`slow factor must be a finite number > 0, got ${factor}`);
    }
    this.slowFactor = factor;
  }

  get pendingFailures(): number {
    return this.failRemaining;
  }

  get injectedFailures(): number {
    return this.injected;
  }
}

export function expectCount(n: unknown, name: string): number {
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > 1e9) {
    throw new RangeError(`${name} must be an integer in [0, 1e9], got ${String(n)}`);
  }
  return n;
}

/** Validates an admin command completely before anything is applied. */
export function parseFaultCommand(body: Record<string, unknown>): FaultCommand {
  const known = new Set(['fail_next', 'hang', 'slow', 'drop_events', 'restart']);
  for (const k of Object.keys(body)) {
    if (!known.has(k)) throw invalidRequest(`unknown fault '${k}' (known: ${[...known].join(', ')})`, 'unknown_fault');
  }
  const cmd: FaultCommand = {};
  try {
    if (body.fail_next !== undefined) cmd.fail_next = expectCount(body.fail_next, 'fail_next');
    if (body.drop_events !== undefined) cmd.drop_events = expectCount(body.drop_events, 'drop_events');
  } catch (err) {
    throw invalidRequest((err as Error).message);
  }
  if (body.hang !== undefined) {
    if (typeof body.hang !== 'boolean') throw invalidRequest('hang must be a boolean');
    cmd.hang = body.hang;
  }
  if (body.slow !== undefined) {
    if (typeof body.slow !== 'number' || !Number.isFinite(body.slow) || body.slow <= 0)
      throw invalidRequest('slow must be a number > 0 (a factor on step times)');
    cmd.slow = body.slow;
  }
  if (body.restart !== undefined) {
    if (typeof body.restart !== 'boolean') throw invalidRequest('restart must be a boolean');
    cmd.restart = body.restart;
  }
  return cmd;
}
