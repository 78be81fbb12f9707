//! kvroute's native core: block hashing, the KV radix indexer, load booking and selection, and
//! the preprocessing of text prompts (tokenizers, chat templates).
//! The modules below `bindings` are plain Rust (no N-API types) and unit-tested with cargo;
//! `bindings` holds the thin N-API layer the TypeScript `src/core` classes call.

pub mod chat;
pub mod events;
pub mod hash;
pub mod indexer;
pub mod load;
pub mod prefix;
pub mod prompt;
pub mod select;
pub mod sim_cache;
pub mod sim_hash;
pub mod sim_pages;
pub mod sim_prompt;
pub mod tiers;
pub mod tokenize;

mod bindings;
