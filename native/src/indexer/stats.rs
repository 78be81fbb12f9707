//! Counters and the stats report.

/// Why a stored event was refused. Nothing of a refused event is applied.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RejectReason {
  /// The parent hash is not a block this (worker, dp_rank) holds.
  UnknownParent,
  /// A hash appears twice in the event, or already names another block of this worker.
  DuplicateHash,
  /// A block hash equals the event's parent hash.
  SelfParent,
  /// Kept for the stats' shape: the compressed tree finds children under their parent, so no
  /// key can collide with another path's any more (always 0).
  HashCollision,
  /// The index reached its maximum number of nodes (2^31 - 1).
  IndexFull,
  /// Engine and local hash counts differ.
  Malformed,
  /// An events-mode call on an approximate-mode index (not counted).
  WrongMode,
}

impl RejectReason {
  pub fn name(self) -> &'static str {
    match self {
      Self::UnknownParent => "unknownParent",
      Self::DuplicateHash => "duplicateHash",
      Self::SelfParent => "selfParent",
      Self::HashCollision => "hashCollision",
      Self::IndexFull => "indexFull",
      Self::Malformed => "malformed",
      Self::WrongMode => "wrongMode",
    }
  }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rejections {
  pub unknown_parent: u64,
  pub duplicate_hash: u64,
  pub self_parent: u64,
  pub hash_collision: u64,
  pub index_full: u64,
  pub malformed: u64,
  /// Removed hashes that named no block of that worker (one per hash).
  pub unknown_removal: u64,
}

impl Rejections {
  pub fn count(&mut self, reason: RejectReason) {
    match reason {
      RejectReason::UnknownParent => self.unknown_parent += 1,
      RejectReason::DuplicateHash => self.duplicate_hash += 1,
      RejectReason::SelfParent => self.self_parent += 1,
      RejectReason::HashCollision => self.hash_collision += 1,
      RejectReason::IndexFull => self.index_full += 1,
      RejectReason::Malformed => self.malformed += 1,
      RejectReason::WrongMode => {}
    }
  }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
  /// Stored events accepted, removed and cleared events.
  pub events_applied: u64,
  pub rejected: Rejections,
  /// Approximate mode: routing decisions recorded.
  pub routings_recorded: u64,
  /// Blocks ((worker, dp_rank, block) pairs) dropped by a size cap.
  pub evictions: u64,
  /// Blocks dropped by the approximate mode's TTL.
  pub expired: u64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IndexerStats {
  /// (worker, dp_rank, block) pairs indexed.
  pub blocks: u64,
  /// Distinct blocks (the root excluded).
  pub nodes: u64,
  /// Edges of the compressed tree (runs of blocks).
  pub edges: u64,
  /// (worker, dp_rank) pairs holding at least one block.
  pub workers: u64,
  /// Heap bytes held by the index (allocated capacity, hash tables counted bucket by bucket).
  pub approx_bytes: u64,
  pub counters: Counters,
}

impl IndexerStats {
  /// Bytes per distinct block (0 when empty).
  pub fn bytes_per_node(&self) -> f64 {
    if self.nodes == 0 {
      0.0
    } else {
      self.approx_bytes as f64 / self.nodes as f64
    }
  }

  /// Bytes per (worker, dp_rank, block) pair (0 when empty).
  pub fn bytes_per_block(&self) -> f64 {
    if self.blocks == 0 {
      0.0
    } else {
      self.approx_bytes as f64 / self.blocks as f64
    }
  }
}
