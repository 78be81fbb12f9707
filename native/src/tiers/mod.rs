//! Lower storage tiers: KV blocks the engines report on host memory, disk or an external pool
//! (the `medium` of their events), indexed beside the device index so a worker that can reload a
//! prefix instead of recomputing it gets partial credit for it. Invariants in README.md.
//!
//! - medium.rs   which tier an event's medium names (Dynamo's mapping)
//! - index.rs    per (worker, dp_rank): engine hash -> sequence hash and tiers; a prompt's
//!   reloadable extension beyond each worker's device prefix

mod index;
mod medium;

pub use index::{LowerTierIndex, TierExtension};
pub use medium::{medium_tier, LowerTier, Medium, LOWER_TIERS};
