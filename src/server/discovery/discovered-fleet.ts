// Keeps the registry's discovered workers equal to the pods that are workers (pod-worker.ts): a
// Ready pod is added, a pod that is no longer Ready leaves selection (its requests in flight
// finish), Ready again comes back, a restarted engine (new pod IP, container restart, changed
// keys) is removed and added afresh (its index cleared), a deleted pod is removed. It touches only
// the workers it added. Fed by the informer (kubernetes.ts); pure otherwise, so tests drive it.
import type { Discovered, WorkerRegistry } from '../fleet/registry.js';
import type { Logger } from '../../util/logger.js';
import { podName, readPod, type PodLike, type PodVerdict } from './pod-worker.js';

/** What discovery needs of the registry. */
export type DiscoveryFleetPort = Pick<WorkerRegistry, 'add' | 'setReady' | 'removeDiscovered' | 'has'>;

export interface DiscoveredFleetOptions {
  fleet: DiscoveryFleetPort;
  /** The served model names (a pod naming another model is skipped). */
  models: readonly string[];
  log: Logger;
  source: Discovered['source'];
}

export interface DiscoveredCounts {
  /** Pods that are workers, in selection. */
  ready: number;
  /** Pods that are workers, out of selection while not Ready. */
  notReady: number;
  /** Pods seen that are not workers yet (no pod IP, never Ready). */
  waiting: number;
  /** Pods that cannot be workers as they are (a bad key, no http port, another model). */
  skipped: number;
  added: number;
  removed: number;
  /** Workers removed and added afresh: their engine restarted. */
  restarted: number;
}

interface Known {
  id: number;
  /** Changes when the worker it describes changes (pod-worker's incarnation and the whole config). */
  incarnation: string;
  ready: boolean;
}

export class DiscoveredFleet {
  private readonly workers = new Map<string, Known>();
  /** Pods that are not workers, with the verdict last logged (one line per change, not per event). */
  private readonly others = new Map<string, PodVerdict>();
  private added = 0;
  private removed = 0;
  private restarted = 0;

  constructor(private readonly o: DiscoveredFleetOptions) {}

  /** A pod was listed, added or changed. */
  upsert(pod: PodLike): void {
    const name = podName(pod);
    const verdict = readPod(pod, { models: this.o.models });
    const known = this.workers.get(name);
    const incarnation = verdict.kind === 'worker' ? `${verdict.incarnation}|${JSON.stringify(verdict.config)}` : '';
    let restarted = false;
    if (known && (verdict.kind !== 'worker' || known.incarnation !== incarnation)) {
      restarted = verdict.kind === 'worker' && verdict.config.id === known.id;
      this.drop(
        name,
        known,
        restarted ? 'its engine restarted (new pod IP, container restart or changed keys): its index is cleared' : 'the pod no longer describes this worker',
      );
      if (restarted) this.restarted++;
    }
    if (verdict.kind !== 'worker') {
      this.noted(name, verdict);
      return;
    }
    this.others.delete(name);
    const current = this.workers.get(name);
    if (current) {
      if (current.ready !== verdict.ready) {
        current.ready = verdict.ready;
        if (this.o.fleet.has(current.id)) this.o.fleet.setReady(current.id, verdict.ready);
      }
      return;
    }
    // A pod becomes a worker once Ready; a restarted one waits for Ready again.
    if (!verdict.ready) {
      this.noted(name, { kind: 'waiting', why: restarted ? 'restarted, not Ready yet' : 'not Ready yet' });
      return;
    }
    try {
      this.o.fleet.add(verdict.config, { source: this.o.source, pod: name });
    } catch (err) {
      this.noted(name, { kind: 'skipped', key: 'worker', why: (err as Error).message });
      return;
    }
    this.workers.set(name, { id: verdict.config.id, incarnation, ready: true });
    this.added++;
  }

  /** A pod was deleted (or is gone from a fresh list). */
  delete(pod: PodLike): void {
    const name = podName(pod);
    this.others.delete(name);
    const known = this.workers.get(name);
    if (known) this.drop(name, known, 'the pod was deleted');
  }

  /** The discovered workers by pod, for tests and /health. */
  workerIds(): Map<string, number> {
    return new Map([...this.workers].map(([pod, k]) => [pod, k.id]));
  }

  counts(): DiscoveredCounts {
    let ready = 0;
    for (const k of this.workers.values()) if (k.ready) ready++;
    let skipped = 0;
    for (const v of this.others.values()) if (v.kind === 'skipped') skipped++;
    return {
      ready,
      notReady: this.workers.size - ready,
      waiting: this.others.size - skipped,
      skipped,
      added: this.added,
      removed: this.removed,
      restarted: this.restarted,
    };
  }

  private drop(name: string, known: Known, why: string): void {
    this.workers.delete(name);
    this.removed++;
    if (!this.o.fleet.has(known.id)) return;
    this.o.log.info({ pod: name, worker: known.id, why }, 'discovered worker leaves');
    this.o.fleet.removeDiscovered(known.id);
  }

  /** Remembers a pod that is not a worker; a skip is logged once per distinct reason. */
  private noted(name: string, verdict: Exclude<PodVerdict, { kind: 'worker' }>): void {
    const before = this.others.get(name);
    this.others.set(name, verdict);
    if (verdict.kind !== 'skipped') return;
    if (before?.kind === 'skipped' && before.key === verdict.key && before.why === verdict.why) return;
    this.o.log.warn({ pod: name, key: verdict.key, why: verdict.why }, 'pod skipped: not a worker until this is fixed');
  }
}
