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
mod ttft;

pub use config::{Policy, RoutingConfig, DEFAULT_TIER_CREDIT};
pub use decision::{CandidateCost, Decision, Mode, Multimodal, PrefixIndex, RouteError, RouteRequest, Timings, MAX_EXPLAINED};
pub use pool::{WorkerSpec, MAX_CANDIDATES, MAX_DP_SIZE};
pub use router::{RemoteBooking, RoutingCore, Totals};
pub use ttft::{estimate as estimate_ttft, TtftEstimate, TtftInput, TtftModel, DEFAULT_RELOAD_BANDWIDTH, KV_BYTES_PER_TOKEN};
