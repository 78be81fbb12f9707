//! KV cache events from the engines (PROTOCOLS.md section 2), decoded from their msgpack payload
//! and applied to the index in one pass: no JavaScript object per event or per token.
//!
//! - msgpack.rs  a reader over the payload bytes (markers by the `rmp` crate)
//! - decode.rs   batches and events, every encoding the engines use
//! - apply.rs    validation, hashing, the medium policy and the counts of one batch

pub mod apply;
pub mod decode;
mod msgpack;

#[cfg(test)]
mod tests;
