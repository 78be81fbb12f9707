//! Errors thrown to JavaScript. Each carries a stable `code` (the JS error's `code` property):
//! src/core/errors.ts turns `ERR_KVROUTE_INVALID_TYPE` into a TypeError, `ERR_KVROUTE_OUT_OF_RANGE`
//! into a RangeError and the routing refusals into their RoutingError classes, by code alone
//! (messages are for people, never parsed).

use napi::bindgen_prelude::*;

/// The `code` of every error the addon throws.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
  /// An argument of the wrong type (TypeError).
  InvalidType,
  /// An argument out of its range (RangeError).
  OutOfRange,
  /// A call the indexer's mode does not allow (events call on an approximate index or back).
  WrongMode,
  /// A re-entrant call while the index is in use, or an index being snapshotted or restored.
  Busy,
  /// Snapshot bytes that are damaged, truncated, of an unknown version or inconsistent.
  InvalidSnapshot,
  /// A tokenizer.json that cannot load, or text it cannot encode / ids it cannot decode.
  Tokenizer,
  /// A chat template that does not compile, or refuses to render the messages (raise_exception).
  ChatTemplate,
  /// Routing refusals (src/core/routing-errors.ts).
  NoEligibleWorker,
  Backpressure,
  MissingRoutingHint,
  DuplicateRequest,
}

impl Code {
  pub const ALL: [Code; 11] = [
    Code::InvalidType,
    Code::OutOfRange,
    Code::WrongMode,
    Code::Busy,
    Code::InvalidSnapshot,
    Code::Tokenizer,
    Code::ChatTemplate,
    Code::NoEligibleWorker,
    Code::Backpressure,
    Code::MissingRoutingHint,
    Code::DuplicateRequest,
  ];

  pub fn as_str(self) -> &'static str {
    match self {
      Code::InvalidType => "ERR_KVROUTE_INVALID_TYPE",
      Code::OutOfRange => "ERR_KVROUTE_OUT_OF_RANGE",
      Code::WrongMode => "ERR_KVROUTE_WRONG_MODE",
      Code::Busy => "ERR_KVROUTE_BUSY",
      Code::InvalidSnapshot => "ERR_KVROUTE_INVALID_SNAPSHOT",
      Code::Tokenizer => "ERR_KVROUTE_TOKENIZER",
      Code::ChatTemplate => "ERR_KVROUTE_CHAT_TEMPLATE",
      Code::NoEligibleWorker => "ERR_KVROUTE_NO_ELIGIBLE_WORKER",
      Code::Backpressure => "ERR_KVROUTE_BACKPRESSURE",
      Code::MissingRoutingHint => "ERR_KVROUTE_MISSING_ROUTING_HINT",
      Code::DuplicateRequest => "ERR_KVROUTE_DUPLICATE_REQUEST",
    }
  }
}

impl AsRef<str> for Code {
  fn as_ref(&self) -> &str {
    self.as_str()
  }
}

/// An error with its code.
pub type CodedError = Error<Code>;
/// What every binding returns (napi-rs throws the error with `code` set to the Code's string).
pub type Result<T> = std::result::Result<T, CodedError>;

pub fn coded(code: Code, msg: impl Into<String>) -> CodedError {
  Error::new(code, msg.into())
}

pub fn type_error(msg: impl Into<String>) -> CodedError {
  coded(Code::InvalidType, msg)
}

pub fn range_error(msg: impl Into<String>) -> CodedError {
  coded(Code::OutOfRange, msg)
}

/// The codes, for the TypeScript side to check it knows every one (`errorCodes()`).
// Only the JavaScript side calls it: unused in the crate's own test build.
#[cfg_attr(test, allow(dead_code))]
#[napi_derive::napi]
pub fn error_codes() -> Vec<String> {
  Code::ALL.iter().map(|c| c.as_str().to_string()).collect()
}
