//! N-API bindings: argument checks and conversions only, no routing logic.

mod chat;
mod errors;
mod events;
mod fast;
mod fast_events;
mod hash;
mod hash_batch;
mod indexer;
mod prompt;
mod routing;
mod sim_cache;
mod sim_hash;
mod sim_prompt;
mod tokenize;
