// The replica sync as the rest of the router sees it: types only, so the router's public
// declarations never reach the NATS client's.
import type { WorkerConfig } from '../config/config.js';
import type { FleetChange } from '../fleet/registry.js';
import type { ReplicaSyncStats } from './counters.js';
import type { PeerSummary } from './peers.js';

export interface ReplicaStatus {
  id: string;
  cluster: string;
  /** False: NATS is unreachable and this replica routes on its own view. */
  connected: boolean;
  /** Since when the current connected/degraded state holds (ms since the epoch). */
  since: number;
  peers: PeerSummary[];
  /** Publish-to-apply delay of the last batches received (up to 4096), in ms; null before any. */
  syncLagMs: ReplicaSyncStats['lagMs'];
}

/** What the fleet sync needs of the router's WorkerRegistry. */
export interface FleetPort {
  has(id: number): boolean;
  isDraining(id: number): boolean;
  add(worker: WorkerConfig): void;
  drain(id: number): void;
  activate(id: number): void;
  remove(id: number): void;
}

/** What the router (app/router.ts) uses of the replica sync. */
export interface ReplicaPort {
  status(): ReplicaStatus;
  /** The registry, once it holds the configured workers: the shared fleet applies to it from now on. */
  attachFleet(fleet: FleetPort): void;
  /** A change made through this replica's admin API (the registry's onChange). */
  fleetChanged(change: FleetChange): void;
}

/** How a warm start's attempt to load a snapshot ended. */
export type RestoreOutcome = 'restored' | 'absent' | 'rejected' | 'mismatch' | 'stale' | 'unavailable';

export type WarmState = 'loading' | 'catching_up' | 'ready';

/** /health's view of the warm start. */
export interface WarmStartStatus {
  state: WarmState;
  /** How the snapshot load ended; 'off' when warm start is off. */
  outcome: RestoreOutcome | 'off';
  reason?: string;
  /** Streams still replaying what came after the snapshot. */
  pending: number;
  /** From startup to ready, once ready. */
  readyAfterMs?: number;
  /** A catch-up that outlasted warmStartTimeoutMs: ready was reported anyway. */
  timedOut?: boolean;
}

/** What the router uses: readiness and /health. */
export interface WarmStartPort {
  ready(): boolean;
  status(): WarmStartStatus;
  /** The registry holds the configured workers (and they are subscribed): start waiting. */
  workersLoaded(): void;
}

/** A snapshot published on demand. */
export interface Published {
  bytes: number;
  encodeMs: number;
  putMs: number;
}
