//! N-API bindings: argument checks and conversions only, no routing logic.

mod errors;
mod hash;
mod indexer;
mod routing;
