//! The simulated engine's KV cache (crate::sim_cache) for src/sim/engine/kv-cache.ts. The calls
//! an engine makes per step and per request (allocate, acquire, release, commit, match: runs of
//! blocks in typed arrays) are hand-written Node-API functions that find their cache by handle,
//! as fast.rs's are (about a fifth of napi-derive's per-call cost, and a replay makes a few
//! hundred thousand of them); the rest (construction, lookups for tests, reset) are ordinary
//! class methods. Every call that changes the cache writes its counters into the caller's
//! `stats` (STATS_LEN numbers: used, available, cached, evictions, the last match's evictable
//! blocks), so reading them costs the engine no call.

use std::cell::RefCell;
use std::ffi::CStr;

use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;

use super::errors::{range_error, Code, Result};
use super::fast::{arg_u32, call_args, count_call, insert, remove, type_fail, typed_array, Fail, FastFn};
use crate::sim_cache::{CacheError, SimKvCache};

const STATS_LEN: usize = 5;

thread_local! {
  static CACHES: RefCell<Vec<Option<SimKvCache>>> = const { RefCell::new(Vec::new()) };
}

fn fail(e: CacheError) -> Fail {
  match e {
    CacheError::Range(m) | CacheError::State(m) => Fail(Code::OutOfRange, m),
  }
}

fn write_stats(c: &SimKvCache, evictable: usize, stats: &mut [f64]) {
  stats[0] = f64::from(c.used());
  stats[1] = f64::from(c.available());
  stats[2] = f64::from(c.cached());
  stats[3] = c.evictions();
  stats[4] = evictable as f64;
}

/// Runs `f` on the cache `handle`, its counters then written to `stats`.
fn with_cache<T>(handle: u32, stats: &mut [f64], f: impl FnOnce(&mut SimKvCache) -> std::result::Result<(T, usize), Fail>) -> std::result::Result<T, Fail> {
  if stats.len() < STATS_LEN {
    return Err(Fail(Code::OutOfRange, format!("stats must hold {STATS_LEN} numbers, got {}", stats.len())));
  }
  CACHES.with_borrow_mut(|t| {
    let c = t.get_mut(handle as usize).and_then(Option::as_mut).ok_or_else(|| Fail(Code::OutOfRange, format!("no KV cache has handle {handle}")))?;
    let out = f(c);
    write_stats(c, out.as_ref().map_or(0, |o| o.1), stats);
    out.map(|o| o.0)
  })
}

/// The arguments of a fast call, `N` of them at least.
unsafe fn args<const N: usize>(env: sys::napi_env, info: sys::napi_callback_info, usage: &str) -> std::result::Result<[sys::napi_value; N], Fail> {
  unsafe { call_args::<N>(env, info, N) }.ok_or_else(|| type_fail(format!("{usage} takes {N} arguments")))
}

/// (handle, stats) of a fast call: its first two arguments.
unsafe fn target(env: sys::napi_env, argv: &[sys::napi_value]) -> std::result::Result<(u32, &'static mut [f64]), Fail> {
  let handle = unsafe { arg_u32(env, argv[0], "handle") }?;
  let (p, n) = unsafe { typed_array::<f64>(env, argv[1], sys::TypedarrayType::float64_array, "stats") }?;
  // SAFETY: a synchronous call: the slice does not outlive it, and no JavaScript runs meanwhile.
  Ok((handle, unsafe { std::slice::from_raw_parts_mut(p, n) }))
}

/// blocks[from, to) of an Int32Array argument, as block ids.
unsafe fn block_range(env: sys::napi_env, value: sys::napi_value, from: u32, to: u32) -> std::result::Result<&'static mut [u32], Fail> {
  let (p, n) = unsafe { typed_array::<u32>(env, value, sys::TypedarrayType::int32_array, "blocks") }?;
  let (from, to) = (from as usize, to as usize);
  if from > to || to > n {
    return Err(Fail(Code::OutOfRange, format!("blocks [{from}, {to}) out of an array of {n}")));
  }
  // SAFETY: as in `target`; block ids are non-negative, so i32 and u32 agree.
  Ok(unsafe { &mut std::slice::from_raw_parts_mut(p, n)[from..to] })
}

unsafe fn hashes_arg(env: sys::napi_env, value: sys::napi_value, name: &str) -> std::result::Result<&'static mut [u64], Fail> {
  let (p, n) = unsafe { typed_array::<u64>(env, value, sys::TypedarrayType::biguint64_array, name) }?;
  // SAFETY: as in `target`.
  Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

/// simCacheAllocate(handle, stats, count, blocks: Int32Array, at, removed: BigUint64Array):
/// `count` fresh blocks into blocks[at, at + count); the evicted ones (a suffix) have their hashes
/// written to `removed` (unless it is empty); returns how many were evicted.
unsafe extern "C" fn allocate(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
  unsafe { count_call(env, info, "simCacheAllocate", allocate_body) }
}

unsafe fn allocate_body(env: sys::napi_env, info: sys::napi_callback_info) -> std::result::Result<u32, Fail> {
  let argv = unsafe { args::<6>(env, info, "simCacheAllocate") }?;
  let (handle, stats) = unsafe { target(env, &argv) }?;
  let count = unsafe { arg_u32(env, argv[2], "count") }?;
  let at = unsafe { arg_u32(env, argv[4], "at") }?;
  let out = unsafe { block_range(env, argv[3], at, at.saturating_add(count)) }?;
  let removed = unsafe { hashes_arg(env, argv[5], "removed") }?;
  if !removed.is_empty() && removed.len() < count as usize {
    return Err(Fail(Code::OutOfRange, format!("removed must hold {count} hashes, got {}", removed.len())));
  }
  let removed = if removed.is_empty() { None } else { Some(removed) };
  with_cache(handle, stats, |c| c.allocate(out, removed).map(|n| (n as u32, 0)).map_err(fail))
}

/// simCacheAcquire(handle, stats, blocks: Int32Array, from, to): a reference on each block.
unsafe extern "C" fn acquire(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
  unsafe { count_call(env, info, "simCacheAcquire", acquire_body) }
}

unsafe fn acquire_body(env: sys::napi_env, info: sys::napi_callback_info) -> std::result::Result<u32, Fail> {
  unsafe { each_block(env, info, "simCacheAcquire", false) }
}

/// simCacheRelease(handle, stats, blocks: Int32Array, from, to): drops a reference on each block,
/// last block first (a table's tail is then evicted before its head).
unsafe extern "C" fn release(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
  unsafe { count_call(env, info, "simCacheRelease", release_body) }
}

unsafe fn release_body(env: sys::napi_env, info: sys::napi_callback_info) -> std::result::Result<u32, Fail> {
  unsafe { each_block(env, info, "simCacheRelease", true) }
}

unsafe fn each_block(env: sys::napi_env, info: sys::napi_callback_info, usage: &str, release: bool) -> std::result::Result<u32, Fail> {
  let argv = unsafe { args::<5>(env, info, usage) }?;
  let (handle, stats) = unsafe { target(env, &argv) }?;
  let from = unsafe { arg_u32(env, argv[3], "from") }?;
  let to = unsafe { arg_u32(env, argv[4], "to") }?;
  let blocks = unsafe { block_range(env, argv[2], from, to) }?;
  with_cache(handle, stats, |c| {
    if release { blocks.iter().rev().try_for_each(|b| c.release(*b)) } else { blocks.iter().try_for_each(|b| c.acquire(*b)) }.map(|()| (0, 0)).map_err(fail)
  })
}

/// simCacheCommit(handle, stats, blocks: Int32Array, hashes: BigUint64Array, first, end,
/// fresh: Uint8Array): offers blocks[first, end) under hashes[first, end) to the prefix cache
/// (duplicates swapped in `blocks` for the cached copy); fresh[i - first] is 1 for each block
/// registered; returns how many were.
unsafe extern "C" fn commit(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
  unsafe { count_call(env, info, "simCacheCommit", commit_body) }
}

unsafe fn commit_body(env: sys::napi_env, info: sys::napi_callback_info) -> std::result::Result<u32, Fail> {
  let argv = unsafe { args::<7>(env, info, "simCacheCommit") }?;
  let (handle, stats) = unsafe { target(env, &argv) }?;
  let first = unsafe { arg_u32(env, argv[4], "first") }? as usize;
  let end = unsafe { arg_u32(env, argv[5], "end") }?;
  let table = unsafe { block_range(env, argv[2], 0, end) }?;
  let hashes = unsafe { hashes_arg(env, argv[3], "hashes") }?;
  let (p, n) = unsafe { typed_array::<u8>(env, argv[6], sys::TypedarrayType::uint8_array, "fresh") }?;
  let end = end as usize;
  if first > end || hashes.len() < end || n < end - first {
    return Err(Fail(Code::OutOfRange, format!("blocks [{first}, {end}) need as many hashes (got {}) and flags (got {n})", hashes.len())));
  }
  // SAFETY: as in `target`; `fresh` is the caller's scratch, never the blocks' or hashes' memory.
  let fresh = unsafe { std::slice::from_raw_parts_mut(p, n) };
  with_cache(handle, stats, |c| c.commit(table, &hashes[..end], first, fresh).map(|n| (n as u32, 0)).map_err(fail))
}

/// simCacheMatch(handle, stats, hashes: BigUint64Array, limit, out: Int32Array): the longest run
/// of hashes[0, limit) that is cached, its blocks into `out`; returns its length (stats[4]: how
/// many of them are unreferenced).
unsafe extern "C" fn match_prefix(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
  unsafe { count_call(env, info, "simCacheMatch", match_body) }
}

unsafe fn match_body(env: sys::napi_env, info: sys::napi_callback_info) -> std::result::Result<u32, Fail> {
  let argv = unsafe { args::<5>(env, info, "simCacheMatch") }?;
  let (handle, stats) = unsafe { target(env, &argv) }?;
  let hashes = unsafe { hashes_arg(env, argv[2], "hashes") }?;
  let limit = unsafe { arg_u32(env, argv[3], "limit") }?;
  let out = unsafe { block_range(env, argv[4], 0, limit) }?;
  if hashes.len() < limit as usize {
    return Err(Fail(Code::OutOfRange, format!("hashes holds {} of the {limit} asked for", hashes.len())));
  }
  with_cache(handle, stats, |c| {
    let (n, evictable) = c.match_prefix(&hashes[..limit as usize], out);
    Ok((n as u32, evictable))
  })
}

pub const FAST_CALLS: [(&CStr, FastFn); 5] = [
  (c"simCacheAllocate", allocate),
  (c"simCacheAcquire", acquire),
  (c"simCacheRelease", release),
  (c"simCacheCommit", commit),
  (c"simCacheMatch", match_prefix),
];

fn call<T>(handle: u32, stats: &mut [f64], f: impl FnOnce(&mut SimKvCache) -> std::result::Result<(T, usize), Fail>) -> Result<T> {
  with_cache(handle, stats, f).map_err(|Fail(code, msg)| super::errors::coded(code, msg))
}

/// A simulated engine's KV cache of `totalBlocks` blocks; the fast calls find it by `handle`. Its
/// memory is reported to V8 as external memory: a load sweep builds hundreds of engines, whose
/// caches (megabytes each, invisible to the heap) would otherwise wait for a GC that nothing
/// prompts.
#[napi(custom_finalize)]
pub struct NativeSimKvCache {
  handle: u32,
  bytes: i64,
}

impl ObjectFinalize for NativeSimKvCache {
  fn finalize(self, env: Env) -> napi::Result<()> {
    env.adjust_external_memory(-self.bytes)?;
    Ok(())
  }
}

impl Drop for NativeSimKvCache {
  fn drop(&mut self) {
    remove(&CACHES, self.handle);
  }
}

#[napi]
impl NativeSimKvCache {
  #[napi(constructor)]
  pub fn new(env: Env, total_blocks: u32) -> Result<Self> {
    if total_blocks == 0 || total_blocks > 1 << 30 {
      return Err(range_error(format!("totalBlocks must be in [1, 2^30], got {total_blocks}")));
    }
    let cache = SimKvCache::new(total_blocks);
    let bytes = cache.bytes() as i64;
    env.adjust_external_memory(bytes).map_err(|e| super::errors::coded(Code::Busy, e.reason))?;
    Ok(Self { handle: CACHES.with_borrow_mut(|t| insert(t, cache)), bytes })
  }

  #[napi(getter)]
  pub fn handle(&self) -> u32 {
    self.handle
  }

  /// Writes the counters into `stats`.
  #[napi]
  pub fn stats(&self, mut stats: Float64ArraySlice) -> Result<()> {
    call(self.handle, unsafe { stats.as_mut() }, |_| Ok(((), 0)))
  }

  /// The block registered under the hash with halves (hi, lo), or -1.
  #[napi]
  pub fn lookup(&self, hi: u32, lo: u32) -> Result<i32> {
    let hash = (u64::from(hi) << 32) | u64::from(lo);
    call(self.handle, &mut [0.0; STATS_LEN], |c| Ok((c.lookup(hash).map_or(-1, |b| b as i32), 0)))
  }

  #[napi]
  pub fn ref_count(&self, block: u32) -> Result<u32> {
    call(self.handle, &mut [0.0; STATS_LEN], |c| c.ref_count(block).map(|r| (r, 0)).map_err(fail))
  }

  #[napi]
  pub fn is_registered(&self, block: u32) -> Result<bool> {
    call(self.handle, &mut [0.0; STATS_LEN], |c| c.is_registered(block).map(|r| (r, 0)).map_err(fail))
  }

  /// The block cached under (hi, lo), or -1 after registering `block` under it.
  #[napi]
  pub fn register_unless_cached(&self, block: u32, hi: u32, lo: u32, mut stats: Float64ArraySlice) -> Result<i32> {
    let hash = (u64::from(hi) << 32) | u64::from(lo);
    call(self.handle, unsafe { stats.as_mut() }, |c| c.register_unless_cached(block, hash).map(|r| (r.map_or(-1, |b| b as i32), 0)).map_err(fail))
  }

  /// Forgets every hash (reset_prefix_cache).
  #[napi]
  pub fn clear(&self, mut stats: Float64ArraySlice) -> Result<()> {
    call(self.handle, unsafe { stats.as_mut() }, |c| {
      c.clear();
      Ok(((), 0))
    })
  }

  /// The registered hashes, in block order.
  #[napi]
  pub fn cached_hashes(&self) -> Result<BigUint64Array> {
    call(self.handle, &mut [0.0; STATS_LEN], |c| Ok((BigUint64Array::new(c.cached_hashes()), 0)))
  }
}
