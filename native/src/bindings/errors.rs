//! Errors thrown to JavaScript. napi-rs maps `Status::InvalidArg` to a TypeError; a RangeError
//! needs its own code, which `src/core` turns into a real RangeError.

use napi::{Error, Status};

pub fn type_error(msg: impl Into<String>) -> Error {
  Error::new(Status::InvalidArg, msg.into())
}

/// Thrown as a plain Error whose message starts with "RangeError: "; the TypeScript layer
/// rethrows it as a RangeError.
pub fn range_error(msg: impl Into<String>) -> Error {
  Error::new(Status::GenericFailure, format!("RangeError: {}", msg.into()))
}
