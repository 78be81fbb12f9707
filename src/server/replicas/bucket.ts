// A JetStream KV bucket the replicas share state through (session pins, the fleet): each entry is
// JSON stamped with its writer's epoch, so a replica skips its own writes when they come back
// through the watch. Writes made while NATS is down (or refused) wait in `pending`, newest per
// key, and go out on return BEFORE the bucket is watched again, so the replay that reloads the
// others' state never undoes a change this replica made meanwhile.
import { Kvm, type KV, type KvWatchEntry } from '@nats-io/kv';
import type { NatsConnection, QueuedIterator } from '@nats-io/transport-node';
import type { Logger } from '../../util/logger.js';

export interface BucketOptions {
  name: string;
  /** Entries older than this are dropped by the server (absent: kept). */
  ttlMs?: number;
  /** This process's epoch: entries carrying it are this replica's own. */
  epoch: string;
  log: Logger;
  /** Another replica's entry (null when it was deleted), in the bucket's order. */
  onEntry(key: string, value: Record<string, unknown> | null): void;
  /** An entry that is not a JSON object: skipped and counted. */
  onInvalid(): void;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export class SharedBucket {
  private kv?: KV;
  private watcher?: QueuedIterator<KvWatchEntry>;
  private readonly pending = new Map<string, Record<string, unknown>>();
  private generation = 0;

  constructor(private readonly o: BucketOptions) {}

  /** Writes an entry: now when the bucket is open, otherwise (or when refused) on the next open. */
  put(key: string, value: Record<string, unknown>): void {
    const stamped = Object.assign({ epoch: this.o.epoch }, value);
    const kv = this.kv;
    if (!kv) {
      this.pending.set(key, stamped);
      return;
    }
    // A newer write supersedes one still waiting from an outage.
    this.pending.delete(key);
    kv.put(key, encoder.encode(JSON.stringify(stamped))).catch((err: unknown) => {
      this.o.log.debug({ bucket: this.o.name, key, err }, 'shared state write refused: kept for the next connection');
      if (!this.pending.has(key)) this.pending.set(key, stamped);
    });
  }

  /** (Re)opens the bucket on `nc`: pending writes first, then a watch that replays every current entry. */
  async open(nc: NatsConnection): Promise<void> {
    const generation = ++this.generation;
    this.close();
    const kv = await new Kvm(nc).create(this.o.name, this.o.ttlMs === undefined ? { history: 1 } : { history: 1, ttl: this.o.ttlMs });
    if (generation !== this.generation) return;
    // New writes go straight out from here; those of the outage follow, then the replay.
    this.kv = kv;
    for (const [key, value] of [...this.pending]) {
      if (this.pending.get(key) !== value) continue;
      this.pending.delete(key);
      try {
        await kv.put(key, encoder.encode(JSON.stringify(value)));
      } catch (err) {
        if (!this.pending.has(key)) this.pending.set(key, value);
        throw err;
      }
    }
    if (generation !== this.generation) return;
    const watcher = await kv.watch();
    if (generation !== this.generation) {
      watcher.stop();
      return;
    }
    this.watcher = watcher;
    void this.follow(watcher);
  }

  /** Stops watching; writes wait for the next open. */
  close(): void {
    this.kv = undefined;
    this.watcher?.stop();
    this.watcher = undefined;
  }

  /** Called when the connection is lost: writes queue up until the next open. */
  suspend(): void {
    this.generation++;
    this.close();
  }

  private async follow(watcher: QueuedIterator<KvWatchEntry>): Promise<void> {
    try {
      for await (const e of watcher) {
        if (e.operation !== 'PUT') {
          this.o.onEntry(e.key, null);
          continue;
        }
        let value: unknown;
        try {
          value = JSON.parse(decoder.decode(e.value));
        } catch {
          value = undefined;
        }
        if (typeof value !== 'object' || value === null || Array.isArray(value)) {
          this.o.onInvalid();
          continue;
        }
        if ((value as { epoch?: unknown }).epoch === this.o.epoch) continue;
        this.o.onEntry(e.key, value as Record<string, unknown>);
      }
    } catch (err) {
      this.o.log.warn({ bucket: this.o.name, err }, 'shared state watch ended: it restarts when NATS is back');
    }
  }
}
