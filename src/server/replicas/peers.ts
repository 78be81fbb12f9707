// The other replicas this one hears from: when each was last heard, under which epoch (a process
// incarnation), and the sequence of its booking batches. Pure bookkeeping over a clock; the sync
// layer decides what a verdict means (drop bookings, ask for an announcement).

export type PeerVerdict =
  /** Never heard, or heard again after it went silent past the TTL. */
  | 'new'
  /** Known, but under a new epoch: it restarted, what it booked before is gone. */
  | 'restarted'
  | 'known';

interface Peer {
  epoch: string;
  lastHeard: number;
  /** Sequence of its last booking batch; -1 before the first. */
  seq: number;
}

export interface PeerSummary {
  replica: string;
  epoch: string;
  silentMs: number;
}

export class Peers {
  private readonly peers = new Map<string, Peer>();

  constructor(private readonly ttlMs: number) {}

  get size(): number {
    return this.peers.size;
  }

  /** Records that `replica` spoke (any message). */
  heard(replica: string, epoch: string, now: number): PeerVerdict {
    const p = this.peers.get(replica);
    if (!p) {
      this.peers.set(replica, { epoch, lastHeard: now, seq: -1 });
      return 'new';
    }
    p.lastHeard = now;
    if (p.epoch === epoch) return 'known';
    p.epoch = epoch;
    p.seq = -1;
    return 'restarted';
  }

  /**
   * Records a booking batch's sequence number; false when batches between the last one and this
   * were lost. An announcement (`reset`) starts the count afresh.
   */
  sequence(replica: string, seq: number, reset: boolean): boolean {
    const p = this.peers.get(replica);
    if (!p) return true;
    const inOrder = reset || p.seq === -1 || seq === p.seq + 1;
    p.seq = seq;
    return inOrder;
  }

  /** Forgets the replicas silent for the TTL and returns them. */
  expire(now: number): string[] {
    const gone: string[] = [];
    for (const [replica, p] of this.peers) {
      if (now - p.lastHeard >= this.ttlMs) {
        gone.push(replica);
        this.peers.delete(replica);
      }
    }
    return gone;
  }

  list(now: number): PeerSummary[] {
    return [...this.peers].map(([replica, p]) => ({ replica, epoch: p.epoch, silentMs: Math.max(0, now - p.lastHeard) }));
  }
}
