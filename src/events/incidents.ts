// What happened to a worker's KV event stream that an operator should know: the ingest reports
// these through a callback (EventIngestOptions.onIncident) and logs nothing itself; the server
// turns them into log lines.

export interface IngestIncident {
  worker: number;
  dpRank: number;
  what:
    | { kind: 'gap'; from: bigint; to: bigint } // batches [from, to) never arrived: a replay follows
    | { kind: 'replayed'; from: bigint; to: bigint } // the gap [from, to) was repaired from the replay service
    | { kind: 'index_cleared'; reason: string } // history lost for good: the worker's blocks were cleared, rebuilt from here on
    // The engine restarted, its blocks were cleared: a live sequence number went back ('sequence', seq
    // is it), or the replay buffer no longer held the last applied batch as applied ('replay', seq null).
    | { kind: 'restart'; via: 'sequence' | 'replay'; seq: bigint | null; lastSeq: bigint | null; reason?: string }
    | { kind: 'joined'; from: bigint; to: bigint } // batches [from, to] published before the subscription took effect were applied from the replay
    | { kind: 'caught_up'; from: bigint; to: bigint | null } // a restored index replayed [from, to] (to null: nothing newer was buffered)
    | { kind: 'catch_up_failed'; reason: string } // the restored index could not replay what it missed: the next live batch repairs or clears it
    // The engine's stored events carry another block size than the router's: all refused, the worker earns no cache credit (first time, and when the size changes).
    | { kind: 'block_size_mismatch'; engineBlockSize: number; routerBlockSize: number }
    | { kind: 'block_size_ok'; routerBlockSize: number }; // after a mismatch, stored events of the router's block size apply again
}
