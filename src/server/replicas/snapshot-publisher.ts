// Publishes this replica's index to the cluster's object store every snapshotIntervalMs, for the
// next replica's warm start. Every ready replica runs one; a replica that finds a snapshot younger
// than half the interval in the store skips its turn, so N replicas publish about once per
// interval between them, not N times, and none has to be elected.
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../../util/logger.js';
import { encodeWarmSnapshot, type WarmSnapshot } from './snapshot-format.js';
import { SnapshotStore } from './snapshot-store.js';
import type { Published } from './ports.js';

export interface PublisherOptions {
  intervalMs: number;
  cluster: string;
  /** The replica sync's connection, while connected. */
  connection(): NatsConnection | undefined;
  /** False while this replica's own index is still warming up: it would publish less than it got. */
  canPublish(): boolean;
  /** The index and its streams' positions, now. */
  capture(): Promise<WarmSnapshot>;
  log: Logger;
  onPublished(createdAt: number, bytes: number): void;
  onFailed(): void;
}

export class SnapshotPublisher {
  private timer?: NodeJS.Timeout;
  private store?: { nc: NatsConnection; store: Promise<SnapshotStore> };
  private busy = false;
  private failing = false;

  constructor(private readonly o: PublisherOptions) {}

  start(): void {
    if (this.o.intervalMs === 0) return;
    this.timer = setInterval(() => void this.tick(), this.o.intervalMs);
    this.timer.unref();
  }

  close(): void {
    clearInterval(this.timer);
  }

  /** Publishes now, whatever the store holds; null when not connected or not allowed yet. */
  async publishNow(): Promise<Published | null> {
    const nc = this.o.connection();
    if (!nc || !this.o.canPublish()) return null;
    const started = performance.now();
    const snapshot = await this.o.capture();
    const bytes = encodeWarmSnapshot(snapshot);
    const encoded = performance.now();
    await (await this.storeOn(nc)).put(bytes);
    this.o.onPublished(snapshot.createdAt, bytes.length);
    return { bytes: bytes.length, encodeMs: encoded - started, putMs: performance.now() - encoded };
  }

  private async tick(): Promise<void> {
    const nc = this.o.connection();
    if (this.busy || !nc || !this.o.canPublish()) return;
    this.busy = true;
    try {
      const storedAt = await (await this.storeOn(nc)).storedAt();
      if (storedAt !== null && Date.now() - storedAt < this.o.intervalMs / 2) return;
      const p = await this.publishNow();
      if (p) this.o.log.debug({ bytes: p.bytes, encode_ms: Math.round(p.encodeMs), put_ms: Math.round(p.putMs) }, 'index snapshot published for warm starts');
      if (this.failing) this.o.log.info('index snapshots are published again');
      this.failing = false;
    } catch (err) {
      this.o.onFailed();
      // Once per failing stretch, not once per interval.
      if (!this.failing) this.o.log.warn({ err }, 'index snapshot not published (is JetStream on?); retrying every snapshotIntervalMs');
      this.failing = true;
      this.store = undefined;
    } finally {
      this.busy = false;
    }
  }

  private storeOn(nc: NatsConnection): Promise<SnapshotStore> {
    if (this.store?.nc !== nc) this.store = { nc, store: SnapshotStore.open(nc, this.o.cluster) };
    return this.store.store;
  }
}
