//! KV cache events from the engines (PROTOCOLS.md section 2), decoded from their msgpack payload
//! and applied to the index in one pass: no JavaScript object per event or per token.
//!
//! - msgpack.rs  a reader over the payload bytes (markers by the `rmp` crate)
//! - token_lengths.rs  what lets the reader take token ids two per step
//! - token_windows.rs  120-byte blocks with AVX-512 VBMI, one dependent step per block
//! - fields.rs   an event's fields, each from its msgpack value, with their error messages
//! - decode.rs   batches and events in one pass, every encoding the engines use: checked, hashed
//! - apply.rs    the decoded records applied to the index, and the counts of one batch

pub mod apply;
pub mod decode;
mod fields;
#[cfg(test)]
mod fuzz;
mod msgpack;
#[cfg(test)]
mod perf;
mod token_lengths;
mod token_windows;

#[cfg(test)]
mod tests;
