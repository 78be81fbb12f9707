//! Hand-written N-API entry points for the direct event API's common case (fast.rs explains
//! why): a BlockStored or BlockRemoved of the device tier, without a LoRA or multimodal content.
//! A trace replay feeds its index this way, an event per engine step (about 80k per policy of
//! the synthetic trace), where napi-derive's glue cost about 0.5 us a call. `KvIndexer`
//! (src/core/indexer.ts) takes this path for such events after its own checks; the calls check
//! their arguments again, as every fast call does.

use std::ffi::CStr;

use napi::sys;

use super::errors::Code;
use super::fast::{arg_now_ms, arg_u32, call_args, count_call, type_fail, typed_array, with_registered, Fail, FastFn};
use super::indexer::MAX_BLOCKS_PER_CALL;
use crate::hash::{BlockHasher, HASH_SEED};
use crate::indexer::{IndexerMode, RadixIndexer, RejectReason, WorkerKey};

pub const FAST_CALLS: [(&CStr, FastFn); 2] = [(c"applyStoredFast", apply_stored_fast), (c"applyRemovedFast", apply_removed_fast)];

fn check_blocks(n: usize, name: &str) -> Result<(), Fail> {
  if n > MAX_BLOCKS_PER_CALL {
    return Err(Fail(Code::OutOfRange, format!("{name} holds {n} blocks, more than the {MAX_BLOCKS_PER_CALL} accepted per call")));
  }
  Ok(())
}

fn wrong_mode(call: &str, mode: IndexerMode) -> Fail {
  Fail(Code::WrongMode, format!("{call} needs an indexer in 'events' mode, this one is in '{}' mode", mode.name()))
}

/// Runs `f` on the index of `handle` (and its local-hash scratch) once it is in events mode.
fn with_events_index<R>(handle: u32, call: &str, f: impl FnOnce(&mut RadixIndexer, &mut Vec<u64>) -> Result<R, Fail>) -> Result<R, Fail> {
  with_registered(handle, |indexer, local| {
    if indexer.mode() != IndexerMode::Events {
      return Err(wrong_mode(call, indexer.mode()));
    }
    f(indexer, local)
  })
}

/// The (worker, dpRank) of arguments `w`, `d`: a worker id below 2^32 and a rank below 2^16.
unsafe fn arg_key(env: sys::napi_env, w: sys::napi_value, d: sys::napi_value) -> Result<WorkerKey, Fail> {
  let worker = unsafe { arg_u32(env, w, "worker") }?;
  let dp_rank = unsafe { arg_u32(env, d, "dpRank") }?;
  if dp_rank > 65_535 {
    return Err(Fail(Code::OutOfRange, format!("dpRank must be an integer in [0, 65535], got {dp_rank}")));
  }
  Ok(WorkerKey { worker: u64::from(worker), dp_rank })
}

/// applyStoredFast(handle, worker, dpRank, blockHashes: BigUint64Array, tokenIds: Uint32Array,
/// parent: BigUint64Array (empty: a root block; else its first entry), nowMs): as
/// NativeIndexer.applyStored without a LoRA, multimodal content or medium. Returns 1 when
/// applied, 0 when refused (the reason counted).
unsafe extern "C" fn apply_stored_fast(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
  unsafe { count_call(env, info, "applyStored", stored_body) }
}

unsafe fn stored_body(env: sys::napi_env, info: sys::napi_callback_info) -> Result<u32, Fail> {
  let argv =
    unsafe { call_args::<7>(env, info, 7) }.ok_or_else(|| type_fail("applyStoredFast takes (handle, worker, dpRank, blockHashes, tokenIds, parent, nowMs)"))?;
  let handle = unsafe { arg_u32(env, argv[0], "handle") }?;
  let key = unsafe { arg_key(env, argv[1], argv[2]) }?;
  let (hashes, n) = unsafe { typed_array::<u64>(env, argv[3], sys::TypedarrayType::biguint64_array, "blockHashes") }?;
  let (tokens, t) = unsafe { typed_array::<u32>(env, argv[4], sys::TypedarrayType::uint32_array, "tokenIds") }?;
  let (parent, p) = unsafe { typed_array::<u64>(env, argv[5], sys::TypedarrayType::biguint64_array, "parent") }?;
  let now_ms = unsafe { arg_now_ms(env, argv[6]) }?;
  check_blocks(n, "blockHashes")?;
  // SAFETY: a synchronous call on the JavaScript thread: no JavaScript runs while these slices live.
  let (hashes, tokens) = unsafe { (std::slice::from_raw_parts(hashes, n), std::slice::from_raw_parts(tokens, t)) };
  // SAFETY: as above; read before anything else runs.
  let parent = (p > 0).then(|| unsafe { *parent });
  with_events_index(handle, "applyStored", |indexer, local| {
    let bs = indexer.block_size() as usize;
    let window = indexer.window();
    let want = window.tokens_for(n, bs);
    if t != want {
      let plus = if window.is_eagle() && n > 0 { " + 1 (EAGLE)" } else { "" };
      return Err(Fail(Code::OutOfRange, format!("tokenIds must hold blockHashes.length x blockSize{plus} = {n} x {bs}{plus} = {want} tokens, got {t}")));
    }
    local.clear();
    BlockHasher::new(bs, HASH_SEED).window(window).hash_extend(tokens, local);
    match indexer.apply_stored(key, parent, hashes, local, now_ms) {
      Ok(()) => Ok(1),
      Err(RejectReason::WrongMode) => Err(wrong_mode("applyStored", indexer.mode())),
      Err(_) => Ok(0),
    }
  })
}

/// applyRemovedFast(handle, worker, dpRank, blockHashes: BigUint64Array, nowMs): as
/// NativeIndexer.applyRemoved of the device tier. Returns the number of blocks removed.
unsafe extern "C" fn apply_removed_fast(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
  unsafe { count_call(env, info, "applyRemoved", removed_body) }
}

unsafe fn removed_body(env: sys::napi_env, info: sys::napi_callback_info) -> Result<u32, Fail> {
  let argv = unsafe { call_args::<5>(env, info, 5) }.ok_or_else(|| type_fail("applyRemovedFast takes (handle, worker, dpRank, blockHashes, nowMs)"))?;
  let handle = unsafe { arg_u32(env, argv[0], "handle") }?;
  let key = unsafe { arg_key(env, argv[1], argv[2]) }?;
  let (hashes, n) = unsafe { typed_array::<u64>(env, argv[3], sys::TypedarrayType::biguint64_array, "blockHashes") }?;
  let now_ms = unsafe { arg_now_ms(env, argv[4]) }?;
  check_blocks(n, "blockHashes")?;
  // SAFETY: a synchronous call on the JavaScript thread: no JavaScript runs while the slice lives.
  let hashes = unsafe { std::slice::from_raw_parts(hashes, n) };
  with_events_index(handle, "applyRemoved", |indexer, _| Ok(indexer.apply_removed(key, hashes, now_ms) as u32))
}
