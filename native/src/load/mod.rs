//! Load booking: the active requests of a worker pool per (worker, dp_rank), their outstanding
//! prefill tokens and their decode blocks (deduplicated per rank by the prefix they name). Pure:
//! time is passed in. Invariants in README.md.

mod book;
mod chains;
mod drain;
mod origins;
mod rank_load;
mod rank_prefixes;

pub use book::{BookError, BookRequest, BookStats, LoadBook, RankId, RankSnapshot};
pub use drain::DEFAULT_RETRY_AFTER_MS;
pub use origins::RemoteStats;
pub use rank_load::{RankLoad, FULL_WEIGHT};
pub use rank_prefixes::PrefixWalk;

/// One data-parallel rank of one worker.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct WorkerKey {
  pub worker: u64,
  pub dp_rank: u32,
}
