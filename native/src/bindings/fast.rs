//! Hand-written N-API entry points for the calls on the request path. napi-derive's generated
//! glue tracks every receiver and typed-array borrow in a global table (a mutex, a hash map entry
//! and an allocation per call): about 0.5 us per class-method call on the reference machine, more
//! than a whole 8k-token prefix walk. These few functions read their arguments straight through
//! Node-API instead (about 0.1 us), and find their object through a handle: each `NativeIndexer`
//! (and each `NativeRoutingCore`) registers its state in this thread's table and unregisters it
//! when collected.
//!
//! Every argument is checked (types, lengths, the handle); failures throw a TypeError or
//! RangeError carrying the same codes as errors.rs. Panics never cross into JavaScript.

use std::cell::RefCell;
use std::ffi::{c_char, CStr};
use std::ptr;

use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;

use super::errors::{Code, CodedError};
use super::layout::matched;
use super::routing::SharedCore;
use crate::indexer::WorkerKey;
use crate::select::Mode;

struct Registered {
  indexer: super::indexer::SharedIndex,
  /// The last findMatches result (best first) when the caller's buffer was too small for it.
  matches: Vec<(WorkerKey, u32)>,
  /// Scratch for a stored event's local hashes (fast_events.rs).
  local: Vec<u64>,
}

thread_local! {
  static REGISTRY: RefCell<Vec<Option<Registered>>> = const { RefCell::new(Vec::new()) };
  static CORES: RefCell<Vec<Option<SharedCore>>> = const { RefCell::new(Vec::new()) };
}

/// Puts `entry` in the first free place of `table`: its handle.
pub(super) fn insert<T>(table: &mut Vec<Option<T>>, entry: T) -> u32 {
  match table.iter().position(Option::is_none) {
    Some(i) => {
      table[i] = Some(entry);
      i as u32
    }
    None => {
      table.push(Some(entry));
      (table.len() - 1) as u32
    }
  }
}

pub(super) fn remove<T>(table: &'static std::thread::LocalKey<RefCell<Vec<Option<T>>>>, handle: u32) {
  // A collected object of a thread being torn down may find the table gone: nothing to do.
  let _ = table.try_with(|r| {
    if let Ok(mut r) = r.try_borrow_mut() {
      if let Some(slot) = r.get_mut(handle as usize) {
        *slot = None;
      }
    }
  });
}

/// Registers a tree; the handle identifies it in the fast calls of this thread.
pub fn register(indexer: super::indexer::SharedIndex) -> u32 {
  REGISTRY.with_borrow_mut(|r| insert(r, Registered { indexer, matches: Vec::new(), local: Vec::new() }))
}

/// Runs `f` on the locked index of `handle` and its local-hash scratch.
pub(super) fn with_registered<R>(
  handle: u32,
  f: impl FnOnce(&mut crate::indexer::RadixIndexer, &mut Vec<u64>) -> std::result::Result<R, Fail>,
) -> std::result::Result<R, Fail> {
  REGISTRY.with_borrow_mut(|r| {
    let entry = r.get_mut(handle as usize).and_then(Option::as_mut).ok_or_else(|| Fail(Code::OutOfRange, format!("no indexer has handle {handle}")))?;
    let mut indexer = super::indexer::lock(&entry.indexer);
    f(&mut indexer, &mut entry.local)
  })
}

pub fn unregister(handle: u32) {
  remove(&REGISTRY, handle);
}

/// Registers a routing core; the handle identifies it in `routeFast`.
pub fn register_core(core: SharedCore) -> u32 {
  CORES.with_borrow_mut(|r| insert(r, core))
}

pub fn unregister_core(handle: u32) {
  remove(&CORES, handle);
}

/// Copies the last result of `handle` into `out` (MATCH_INTS per match); false if too small.
pub fn copy_matches(handle: u32, out: &mut [i32]) -> bool {
  REGISTRY.with_borrow(|r| {
    let Some(e) = r.get(handle as usize).and_then(Option::as_ref) else { return false };
    if out.len() < e.matches.len() * MATCH_INTS {
      return false;
    }
    for (i, &(key, blocks)) in e.matches.iter().enumerate() {
      put_match(out, i, key, blocks);
    }
    true
  })
}

/// Int32s per match in a findMatchesFast result (layout.rs's `matched`).
pub const MATCH_INTS: usize = matched::LEN;

/// Writes match `i` into `out` (which has room for it), as layout.rs lays it out.
#[inline(always)]
pub(super) fn put_match(out: &mut [i32], i: usize, key: WorkerKey, blocks: u32) {
  let m = &mut out[i * MATCH_INTS..i * MATCH_INTS + MATCH_INTS];
  m[matched::WORKER_LOW] = key.worker as u32 as i32;
  m[matched::WORKER_HIGH] = (key.worker >> 32) as i32;
  m[matched::DP_RANK] = key.dp_rank as i32;
  m[matched::BLOCKS] = blocks as i32;
}

/// A failure to throw: its class (TypeError or RangeError, else Error) and code.
pub(super) struct Fail(pub(super) Code, pub(super) String);

unsafe fn throw(env: sys::napi_env, fail: Fail) -> sys::napi_value {
  let code = std::ffi::CString::new(fail.0.as_str()).expect("codes have no NUL");
  let msg = std::ffi::CString::new(fail.1.replace('\0', " ")).expect("NULs replaced");
  unsafe {
    match fail.0 {
      Code::InvalidType => sys::napi_throw_type_error(env, code.as_ptr(), msg.as_ptr()),
      Code::OutOfRange => sys::napi_throw_range_error(env, code.as_ptr(), msg.as_ptr()),
      _ => sys::napi_throw_error(env, code.as_ptr(), msg.as_ptr()),
    };
  }
  ptr::null_mut()
}

/// The call's first `N` arguments (those not passed read as undefined), or None when fewer than
/// `required` were passed: every hand-written function's prologue.
pub(super) unsafe fn call_args<const N: usize>(env: sys::napi_env, info: sys::napi_callback_info, required: usize) -> Option<[sys::napi_value; N]> {
  let mut argc = N;
  let mut argv = [ptr::null_mut(); N];
  unsafe { sys::napi_get_cb_info(env, info, &mut argc, argv.as_mut_ptr(), ptr::null_mut(), ptr::null_mut()) };
  (argc >= required).then_some(argv)
}

pub(super) fn type_fail(msg: impl Into<String>) -> Fail {
  Fail(Code::InvalidType, msg.into())
}

/// A typed array argument of the given element type: (data, length).
pub(super) unsafe fn typed_array<T>(env: sys::napi_env, value: sys::napi_value, kind: i32, name: &str) -> std::result::Result<(*mut T, usize), Fail> {
  let (mut ty, mut len, mut data, mut offset) = (0, 0usize, ptr::null_mut(), 0usize);
  // One Node-API call on the way that works (it fails on anything but a typed array); which
  // failure it was is asked only to word the error.
  let status = unsafe { sys::napi_get_typedarray_info(env, value, &mut ty, &mut len, &mut data, ptr::null_mut(), &mut offset) };
  if status != sys::Status::napi_ok || ty != kind {
    let mut is = false;
    if unsafe { sys::napi_is_typedarray(env, value, &mut is) } != sys::Status::napi_ok || !is {
      return Err(type_fail(format!("{name} must be a typed array")));
    }
    return Err(type_fail(format!("{name} has the wrong element type")));
  }
  if len == 0 || data.is_null() {
    // An empty (or detached) array: a dangling but aligned pointer makes an empty slice.
    return Ok((ptr::NonNull::<T>::dangling().as_ptr(), 0));
  }
  Ok((data as *mut T, len))
}

pub(super) unsafe fn arg_u32(env: sys::napi_env, value: sys::napi_value, name: &str) -> std::result::Result<u32, Fail> {
  let mut v = 0u32;
  match unsafe { sys::napi_get_value_uint32(env, value, &mut v) } {
    sys::Status::napi_ok => Ok(v),
    _ => Err(type_fail(format!("{name} must be a number"))),
  }
}

/// A clock reading in ms: a finite number (NaN or an infinity would corrupt the LRU ages).
pub(super) unsafe fn arg_now_ms(env: sys::napi_env, value: sys::napi_value) -> std::result::Result<f64, Fail> {
  let mut v = 0f64;
  match unsafe { sys::napi_get_value_double(env, value, &mut v) } {
    sys::Status::napi_ok if v.is_finite() => Ok(v),
    sys::Status::napi_ok => Err(Fail(Code::OutOfRange, format!("the clock must return a finite number of ms, got {v}"))),
    _ => Err(type_fail("nowMs must be a number")),
  }
}

unsafe fn arg_bool(env: sys::napi_env, value: sys::napi_value, name: &str) -> std::result::Result<bool, Fail> {
  let mut v = false;
  match unsafe { sys::napi_get_value_bool(env, value, &mut v) } {
    sys::Status::napi_ok => Ok(v),
    _ => Err(type_fail(format!("{name} must be a boolean"))),
  }
}

/// findMatchesFast(handle, localHashes: BigUint64Array, out: Int32Array, nowMs = 0, earlyExit = false):
/// as NativeIndexer.findMatches (best first, MATCH_INTS per match written into `out` when it
/// fits). Returns count * 2 + wide: wide (1) when some worker id is 2^31 or more, so that the
/// caller must read its high int.
unsafe extern "C" fn find_matches_fast(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
  unsafe { count_call(env, info, "findMatches", find_matches_body) }
}

/// Runs `body`, a call returning a count: the count as a number, or its failure thrown. Panics
/// never cross into JavaScript.
pub(super) unsafe fn count_call(
  env: sys::napi_env,
  info: sys::napi_callback_info,
  what: &str,
  body: unsafe fn(sys::napi_env, sys::napi_callback_info) -> std::result::Result<u32, Fail>,
) -> sys::napi_value {
  let outcome = std::panic::catch_unwind(|| unsafe { body(env, info) });
  match outcome {
    Ok(Ok(n)) => {
      let mut result = ptr::null_mut();
      unsafe { sys::napi_create_uint32(env, n, &mut result) };
      result
    }
    Ok(Err(fail)) => unsafe { throw(env, fail) },
    Err(_) => unsafe { throw(env, Fail(Code::Busy, format!("{what} failed (a bug: please report it)"))) },
  }
}

unsafe fn find_matches_body(env: sys::napi_env, info: sys::napi_callback_info) -> std::result::Result<u32, Fail> {
  // Its own prologue: the count of arguments passed says which optional ones came.
  let mut argc = 5usize;
  let mut argv = [ptr::null_mut(); 5];
  unsafe { sys::napi_get_cb_info(env, info, &mut argc, argv.as_mut_ptr(), ptr::null_mut(), ptr::null_mut()) };
  if argc < 3 {
    return Err(type_fail("findMatchesFast takes (handle, localHashes, out, nowMs?, earlyExit?)"));
  }
  let handle = unsafe { arg_u32(env, argv[0], "handle") }?;
  let (hashes, n) = unsafe { typed_array::<u64>(env, argv[1], sys::TypedarrayType::biguint64_array, "localHashes") }?;
  let (out, out_len) = unsafe { typed_array::<i32>(env, argv[2], sys::TypedarrayType::int32_array, "out") }?;
  // The common call (events mode, no clock, no options) passes neither: each argument read
  // through Node-API costs a call.
  let now_ms = if argc > 3 { unsafe { arg_now_ms(env, argv[3]) }? } else { 0.0 };
  let early_exit = if argc > 4 { unsafe { arg_bool(env, argv[4], "earlyExit") }? } else { false };
  if n > super::indexer::MAX_BLOCKS_PER_CALL {
    return Err(Fail(Code::OutOfRange, format!("localHashes holds {n} blocks, more than the {} accepted per call", super::indexer::MAX_BLOCKS_PER_CALL)));
  }
  // SAFETY: a synchronous call on the JavaScript thread: no JavaScript runs while these slices
  // live. `out` is the wrapper's own buffer (src/core/indexer.ts), never the hashes' memory.
  let hashes = unsafe { std::slice::from_raw_parts(hashes, n) };
  let out = unsafe { std::slice::from_raw_parts_mut(out, out_len) };
  REGISTRY.with_borrow_mut(|r| {
    let entry = r.get_mut(handle as usize).and_then(Option::as_mut).ok_or_else(|| Fail(Code::OutOfRange, format!("no indexer has handle {handle}")))?;
    let mut indexer = super::indexer::lock(&entry.indexer);
    let n = indexer.walk_matches(hashes, early_exit, now_ms);
    entry.matches.clear();
    if n * MATCH_INTS > out.len() {
      // Too small a buffer: the result waits here, the wrapper grows its buffer and calls
      // copyMatches (which reads the high bits whatever they are).
      entry.matches.resize(n, (WorkerKey { worker: 0, dp_rank: 0 }, 0));
      indexer.emit_sorted(|i, key, blocks| entry.matches[i] = (key, blocks));
      return Ok((n as u32) << 1 | 1);
    }
    // Straight into the caller's buffer: no intermediate list.
    let out = &mut out[..n * MATCH_INTS];
    let mut wide = 0u64;
    indexer.emit_sorted(|i, key, blocks| {
      put_match(out, i, key, blocks);
      wide |= key.worker;
    });
    Ok((n as u32) << 1 | (wide > i32::MAX as u64) as u32)
  })
}

/// Request ids up to this many bytes are read without an allocation.
const INLINE_ID: usize = 256;

/// A string argument, read into `inline` when it fits, else into `heap`.
unsafe fn arg_str<'b>(
  env: sys::napi_env,
  value: sys::napi_value,
  name: &str,
  inline: &'b mut [u8; INLINE_ID],
  heap: &'b mut Vec<u8>,
) -> std::result::Result<&'b str, Fail> {
  let not_string = || type_fail(format!("{name} must be a string"));
  let mut len = 0usize;
  let status = unsafe { sys::napi_get_value_string_utf8(env, value, inline.as_mut_ptr() as *mut c_char, INLINE_ID, &mut len) };
  if status != sys::Status::napi_ok {
    return Err(not_string());
  }
  // Room left for a whole character: the string was not cut.
  let bytes: &[u8] = if len + 4 < INLINE_ID {
    &inline[..len]
  } else {
    unsafe { sys::napi_get_value_string_utf8(env, value, ptr::null_mut(), 0, &mut len) };
    heap.resize(len + 1, 0);
    let status = unsafe { sys::napi_get_value_string_utf8(env, value, heap.as_mut_ptr() as *mut c_char, len + 1, &mut len) };
    if status != sys::Status::napi_ok {
      return Err(not_string());
    }
    &heap[..len]
  };
  std::str::from_utf8(bytes).map_err(|_| not_string())
}

/// routeFast(handle, tokens: Uint32Array, requestId: string, nowMs, out: Float64Array, book):
/// NativeRoutingCore.route (book true) or query (false) for a request without a seed or options,
/// the decision written into `out`; returns the number of candidates explained.
unsafe extern "C" fn route_fast(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
  unsafe { count_call(env, info, "route", route_body) }
}

unsafe fn route_body(env: sys::napi_env, info: sys::napi_callback_info) -> std::result::Result<u32, Fail> {
  let argv = unsafe { call_args::<6>(env, info, 6) }.ok_or_else(|| type_fail("routeFast takes (handle, tokens, requestId, nowMs, out, book)"))?;
  let handle = unsafe { arg_u32(env, argv[0], "handle") }?;
  let (tokens, n) = unsafe { typed_array::<u32>(env, argv[1], sys::TypedarrayType::uint32_array, "tokens") }?;
  let (mut inline, mut heap) = ([0u8; INLINE_ID], Vec::new());
  let request_id = unsafe { arg_str(env, argv[2], "requestId", &mut inline, &mut heap) }?;
  let now_ms = unsafe { arg_now_ms(env, argv[3]) }?;
  let (out, out_len) = unsafe { typed_array::<f64>(env, argv[4], sys::TypedarrayType::float64_array, "out") }?;
  let book = unsafe { arg_bool(env, argv[5], "book") }?;
  // SAFETY: a synchronous call on the JavaScript thread: no JavaScript runs while these slices
  // live. `out` is the wrapper's own buffer (src/core/routing-core.ts), never the tokens' memory.
  let tokens = unsafe { std::slice::from_raw_parts(tokens, n) };
  let out = unsafe { std::slice::from_raw_parts_mut(out, out_len) };
  let mode = if book { Mode::Book } else { Mode::Query };
  with_core(handle, |state| state.decide(tokens, request_id, now_ms, out, None, None, mode).map_err(|e: CodedError| Fail(e.status, e.reason)))
}

/// bookingFast(handle, requestId: string, nowMs, op): NativeRoutingCore.markPrefillCompleted
/// (op 0) or free (op 1), the two booking calls every request makes; 1 when it changed the
/// booking (the first time), else 0. The id is read into a stack buffer, not a String, and `nowMs`
/// as the generated methods read it (any number).
unsafe extern "C" fn booking_fast(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
  unsafe { count_call(env, info, "booking", booking_body) }
}

/// bookingFast's operations.
const MARK_PREFILL_COMPLETED: u32 = 0;
const FREE: u32 = 1;

unsafe fn booking_body(env: sys::napi_env, info: sys::napi_callback_info) -> std::result::Result<u32, Fail> {
  let argv = unsafe { call_args::<4>(env, info, 4) }.ok_or_else(|| type_fail("bookingFast takes (handle, requestId, nowMs, op)"))?;
  let handle = unsafe { arg_u32(env, argv[0], "handle") }?;
  let (mut inline, mut heap) = ([0u8; INLINE_ID], Vec::new());
  let request_id = unsafe { arg_str(env, argv[1], "requestId", &mut inline, &mut heap) }?;
  let mut now_ms = 0f64;
  if unsafe { sys::napi_get_value_double(env, argv[2], &mut now_ms) } != sys::Status::napi_ok {
    return Err(type_fail("nowMs must be a number"));
  }
  let op = unsafe { arg_u32(env, argv[3], "op") }?;
  with_core(handle, |state| {
    let changed = match op {
      MARK_PREFILL_COMPLETED => state.core.mark_prefill_completed(request_id, now_ms),
      FREE => state.core.free(request_id, now_ms),
      _ => return Err(Fail(Code::OutOfRange, format!("op must be 0 (markPrefillCompleted) or 1 (free), got {op}"))),
    };
    Ok(changed as u32)
  })
}

/// Runs `f` on the routing core registered under `handle`, borrowed for the call.
fn with_core<R>(handle: u32, f: impl FnOnce(&mut super::routing::CoreState) -> std::result::Result<R, Fail>) -> std::result::Result<R, Fail> {
  let core = CORES
    .with_borrow(|r| r.get(handle as usize).and_then(Option::clone))
    .ok_or_else(|| Fail(Code::OutOfRange, format!("no routing core has handle {handle}")))?;
  let mut state = core.try_borrow_mut().map_err(|_| Fail(Code::Busy, "the routing core is in use".into()))?;
  f(&mut state)
}

/// A hand-written Node-API function.
pub(super) type FastFn = unsafe extern "C" fn(sys::napi_env, sys::napi_callback_info) -> sys::napi_value;

/// Installs the hand-written functions (these, sim_cache.rs's and fast_events.rs's) next to the generated ones.
#[napi(module_exports)]
pub fn install_fast_calls(exports: Object, env: Env) -> napi::Result<()> {
  let functions: [(&CStr, FastFn); 3] = [(c"findMatchesFast", find_matches_fast), (c"routeFast", route_fast), (c"bookingFast", booking_fast)];
  for (name, cb) in functions.into_iter().chain(super::sim_cache::FAST_CALLS).chain(super::fast_events::FAST_CALLS) {
    let mut f = ptr::null_mut();
    let status =
      unsafe { sys::napi_create_function(env.raw(), name.as_ptr() as *const c_char, name.to_bytes().len() as isize, Some(cb), ptr::null_mut(), &mut f) };
    if status != sys::Status::napi_ok {
      return Err(napi::Error::from_reason("cannot create the fast calls"));
    }
    let status = unsafe { sys::napi_set_named_property(env.raw(), exports.raw(), name.as_ptr() as *const c_char, f) };
    if status != sys::Status::napi_ok {
      return Err(napi::Error::from_reason("cannot export the fast calls"));
    }
  }
  Ok(())
}
