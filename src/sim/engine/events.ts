// KV cache events as the model reports them (the fields of vLLM's BlockStored / BlockRemoved /
// AllBlocksCleared; the worker encodes them to msgpack). Replaying them in order reproduces the
// model's set of cached blocks exactly.

export type KvEvent =
  | {
      type: 'BlockStored';
      blockHashes: bigint[];
      parentBlockHash: bigint | null;
      tokenIds: number[];
      blockSize: number;
      loraName: string | null;
      medium: 'GPU';
    }
  | { type: 'BlockRemoved'; blockHashes: bigint[]; medium: 'GPU' }
  | { type: 'AllBlocksCleared' };

export type BlockStoredEvent = Extract<KvEvent, { type: 'BlockStored' }>;
export type BlockRemovedEvent = Extract<KvEvent, { type: 'BlockRemoved' }>;

/** Appends a removal, merged into the previous event when that is a removal too (order is kept). */
export function pushRemoved(events: KvEvent[], hash: bigint): void {
  const last = events[events.length - 1];
  if (last !== undefined && last.type === 'BlockRemoved') last.blockHashes.push(hash);
  else events.push({ type: 'BlockRemoved', blockHashes: [hash], medium: 'GPU' });
}

/** Applies events to a set of block hashes: the consumer's view of the cache. */
export function applyEventsToSet(set: Set<bigint>, events: readonly KvEvent[]): void {
  for (const ev of events) {
    if (ev.type === 'BlockStored') for (const h of ev.blockHashes) set.add(h);
    else if (ev.type === 'BlockRemoved') for (const h of ev.blockHashes) set.delete(h);
    else set.clear();
  }
}
