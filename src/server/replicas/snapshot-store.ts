// The replicas' latest index snapshot, one object in a JetStream object store bucket
// (kvroute_<cluster>_snapshots, object "index"): a put replaces the previous one, chunked by the
// client; a get checks the object's SHA-256 digest.
import { Objm, StorageType, type ObjectStore } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/transport-node';

const OBJECT = 'index';
/** Chunks of the object (NATS' default max payload is 1 MiB). */
const CHUNK_BYTES = 512 * 1024;

export interface StoredSnapshot {
  bytes: Uint8Array;
  /** When the store received it (ms since the epoch). */
  storedAt: number;
}

export class SnapshotStore {
  private constructor(private readonly os: ObjectStore) {}

  /** Opens (creating when absent) the cluster's bucket on `nc`. */
  static async open(nc: NatsConnection, cluster: string): Promise<SnapshotStore> {
    return new SnapshotStore(
      await new Objm(nc).create(`kvroute_${cluster}_snapshots`, {
        storage: StorageType.File,
        description: 'kvroute router replicas: the latest index snapshot (warm start)',
      }),
    );
  }

  /** When the latest snapshot was stored (ms since the epoch); null when there is none. */
  async storedAt(): Promise<number | null> {
    const info = await this.os.info(OBJECT);
    return info && !info.deleted ? Date.parse(info.mtime) : null;
  }

  async put(bytes: Uint8Array): Promise<void> {
    await this.os.putBlob({ name: OBJECT, options: { max_chunk_size: CHUNK_BYTES } }, bytes);
  }

  /** The latest snapshot, or null when none was published. */
  async get(): Promise<StoredSnapshot | null> {
    const info = await this.os.info(OBJECT);
    if (!info || info.deleted) return null;
    const bytes = await this.os.getBlob(OBJECT);
    return bytes && { bytes, storedAt: Date.parse(info.mtime) };
  }
}
