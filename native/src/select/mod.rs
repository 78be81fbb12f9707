//! Worker selection: eligibility, cost, policies, sampling, and the one-call decision that
//! hashes, matches, selects and books. Pure (time is passed in). Invariants in README.md.

mod config;
mod cost;
mod decision;
mod eligibility;
mod policy;
mod pool;
mod router;
mod sample;

pub use config::{Policy, RoutingConfig};
pub use decision::{CandidateCost, Decision, Mode, Multimodal, PrefixIndex, RouteError, RouteRequest, Timings, MAX_EXPLAINED};
pub use pool::{WorkerSpec, MAX_CANDIDATES, MAX_DP_SIZE};
pub use router::{RemoteBooking, RoutingCore, Totals};
