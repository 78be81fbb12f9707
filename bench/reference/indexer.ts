// A plain TypeScript KV indexer: the reference the native KvIndexer is measured against. Dynamo's
// radix tree as a JavaScript developer would write it: nodes with a Map of children keyed by the
// block's local hash and a Set of the (worker, dpRank) pairs holding it, plus one Map per pair
// from the engine's block hashes to nodes (parents and removals). Tokens are hashed with the
// plain TypeScript XXH3, so every step is TypeScript.
import { blockHashesReference } from './xxh3.js';

interface RefNode {
  parent: RefNode | null;
  /** The block's local hash (its key in the parent's children). */
  local: bigint;
  children: Map<bigint, RefNode>;
  /** (worker, dpRank) pairs holding the block, as worker * 65536 + dpRank. */
  holders: Set<number>;
}

export interface RefMatch {
  worker: number;
  dpRank: number;
  blocks: number;
}

const key = (worker: number, dpRank: number) => worker * 65536 + dpRank;

export class ReferenceIndexer {
  readonly blockSize: number;
  readonly #seed: bigint;
  readonly #root: RefNode = { parent: null, local: 0n, children: new Map(), holders: new Set() };
  readonly #byEngineHash = new Map<number, Map<bigint, RefNode>>();
  #blocks = 0;
  #nodes = 0;
  #eventsApplied = 0;
  #rejected = 0;

  constructor(blockSize: number, seed = 1337n) {
    this.blockSize = blockSize;
    this.#seed = seed;
  }

  /** A BlockStored event; false (and nothing applied) for an unknown parent or a repeated hash. */
  applyStored(worker: number, dpRank: number, parentHash: bigint | null, blockHashes: BigUint64Array, tokenIds: Uint32Array): boolean {
    if (tokenIds.length !== blockHashes.length * this.blockSize) throw new RangeError('tokenIds must hold blockHashes.length x blockSize tokens');
    const k = key(worker, dpRank);
    let own = this.#byEngineHash.get(k);
    if (!own) {
      own = new Map();
      this.#byEngineHash.set(k, own);
    }
    let node = parentHash === null ? this.#root : own.get(parentHash);
    const fresh = new Set<bigint>();
    for (const h of blockHashes) {
      if (own.has(h) || fresh.has(h) || h === parentHash) node = undefined;
      fresh.add(h);
    }
    if (!node) {
      this.#rejected++;
      return false;
    }
    const locals = blockHashesReference(tokenIds, this.blockSize, this.#seed);
    let at: RefNode = node;
    for (let i = 0; i < locals.length; i++) {
      let child: RefNode | undefined = at.children.get(locals[i]);
      if (!child) {
        child = { parent: at, local: locals[i], children: new Map(), holders: new Set() };
        at.children.set(locals[i], child);
        this.#nodes++;
      }
      if (!child.holders.has(k)) {
        child.holders.add(k);
        this.#blocks++;
      }
      own.set(blockHashes[i], child);
      at = child;
    }
    this.#eventsApplied++;
    return true;
  }

  /** A BlockRemoved event: the number of blocks removed. */
  applyRemoved(worker: number, dpRank: number, blockHashes: BigUint64Array): number {
    const k = key(worker, dpRank);
    const own = this.#byEngineHash.get(k);
    let removed = 0;
    for (const h of blockHashes) {
      const node = own?.get(h);
      if (!node || !own) continue;
      own.delete(h);
      if (node.holders.delete(k)) {
        this.#blocks--;
        removed++;
      }
      this.#prune(node);
    }
    this.#eventsApplied++;
    return removed;
  }

  /** Drops nodes nobody holds and nothing hangs from, walking up. */
  #prune(start: RefNode): void {
    let node: RefNode | null = start;
    while (node?.parent && node.holders.size === 0 && node.children.size === 0) {
      node.parent.children.delete(node.local);
      this.#nodes--;
      node = node.parent;
    }
  }

  /** Leading blocks of the prompt each (worker, dpRank) holds, best first. */
  findMatches(localHashes: BigUint64Array): RefMatch[] {
    const depth = new Map<number, number>();
    let active: Set<number> | null = null;
    let node = this.#root;
    let i = 0;
    for (; i < localHashes.length; i++) {
      const child = node.children.get(localHashes[i]);
      if (!child) break;
      if (active === null) {
        active = new Set(child.holders);
      } else {
        for (const k of active) {
          if (!child.holders.has(k)) {
            depth.set(k, i);
            active.delete(k);
          }
        }
      }
      if (active.size === 0) break;
      node = child;
    }
    if (active) for (const k of active) depth.set(k, i);
    const out: RefMatch[] = [];
    for (const [k, blocks] of depth) if (blocks > 0) out.push({ worker: Math.floor(k / 65536), dpRank: k % 65536, blocks });
    return out.sort((a, b) => b.blocks - a.blocks || a.worker - b.worker || a.dpRank - b.dpRank);
  }

  stats(): { blocks: number; nodes: number; eventsApplied: number; rejected: number } {
    return { blocks: this.#blocks, nodes: this.#nodes, eventsApplied: this.#eventsApplied, rejected: this.#rejected };
  }
}
