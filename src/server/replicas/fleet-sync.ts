// Fleet changes made through any replica's admin API (add, drain, activate, remove) shared through
// a KV bucket, one entry per worker holding its latest state: every replica applies the others'
// changes to its own registry, and a replica that starts (or returns after a NATS outage) replays
// the bucket, so the cluster's latest word wins over a replica's startup configuration.
import { parseWorkerConfig, workerToInput, type WorkerConfig } from '../config/config.js';
import type { FleetChange } from '../fleet/registry.js';
import type { Logger } from '../../util/logger.js';
import type { SharedBucket } from './bucket.js';
import type { FleetPort } from './ports.js';

type WorkerState = 'active' | 'draining' | 'removed';
const STATE_OF: Record<FleetChange['op'], WorkerState> = { add: 'active', activate: 'active', drain: 'draining', remove: 'removed' };

export class FleetSync {
  private fleet?: FleetPort;
  /** Set while applying another replica's change: the registry reports it, and it must not echo. */
  private applying = false;
  /** Entries that arrived before the registry was attached, newest per key. */
  private readonly early = new Map<string, Record<string, unknown> | null>();

  constructor(
    private readonly bucket: SharedBucket,
    private readonly log: Logger,
    private readonly invalid: () => void,
  ) {}

  /** The registry, once it holds the configured workers (the entries received so far apply now). */
  attach(fleet: FleetPort): void {
    this.fleet = fleet;
    for (const [key, value] of this.early) this.received(key, value);
    this.early.clear();
  }

  /** A change made through this replica (the registry's onChange). */
  changed(c: FleetChange): void {
    if (this.applying || !this.fleet) return;
    this.bucket.put(`w${c.worker.id}`, { state: STATE_OF[c.op], worker: workerToInput(c.worker) });
  }

  /** Another replica's entry from the bucket. */
  received(key: string, value: Record<string, unknown> | null): void {
    const fleet = this.fleet;
    if (!fleet) {
      this.early.set(key, value);
      return;
    }
    if (value === null) return;
    let worker: WorkerConfig;
    try {
      worker = parseWorkerConfig(value.worker, `fleet entry ${key}`);
      if (key !== `w${worker.id}` || !['active', 'draining', 'removed'].includes(value.state as string))
        throw new TypeError(`fleet entry ${key} is not a worker's state`);
    } catch (err) {
      this.invalid();
      this.log.warn({ key, err }, 'shared fleet entry refused');
      return;
    }
    const state = value.state as WorkerState;
    this.applying = true;
    try {
      this.apply(fleet, worker, state);
    } catch (err) {
      this.log.warn({ worker: worker.id, state, err }, "another replica's fleet change could not be applied here");
    } finally {
      this.applying = false;
    }
  }

  private apply(fleet: FleetPort, worker: WorkerConfig, state: WorkerState): void {
    const id = worker.id;
    if (state === 'removed') {
      if (!fleet.has(id)) return;
      fleet.remove(id);
      this.log.info({ worker: id }, 'worker removed through another replica');
      return;
    }
    if (!fleet.has(id)) {
      fleet.add(worker);
      this.log.info({ worker: id }, 'worker added through another replica');
    }
    if (state === 'draining' && !fleet.isDraining(id)) {
      fleet.drain(id);
      this.log.info({ worker: id }, 'worker drained through another replica');
    } else if (state === 'active' && fleet.isDraining(id)) {
      fleet.activate(id);
      this.log.info({ worker: id }, 'worker activated through another replica');
    }
  }
}
