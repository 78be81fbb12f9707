//! N-API bindings: argument checks and conversions only, no routing logic.

// napi-derive registers the exports only outside `cfg(test)`, so a `cargo test` build sees every
// binding as unused: silence that there alone (the addon build still warns about dead code).
#![cfg_attr(test, allow(dead_code))]

mod chat;
mod errors;
mod events;
mod fast;
mod fast_events;
mod hash;
mod hash_batch;
mod indexer;
mod layout;
mod layout_probe;
mod prompt;
mod routing;
mod sim_cache;
mod sim_hash;
mod sim_prompt;
mod tokenize;
