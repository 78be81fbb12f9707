//! Bulk hashing for the hashing pool (src/hash-pool/hash-pool.ts) and the batch functions of
//! src/core/hashing.ts: many prompts per call, the results written into buffers the caller
//! allocated. No external ArrayBuffers: V8 frees those only once their thread's event loop turns,
//! which a busy pool worker (or any synchronous hot loop) may not do for a long time, so their
//! memory piles up.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::errors::{range_error, Result};
use super::hash::{check_block_size, to_u64};
use crate::hash::{self, BlockHasher};

fn byte_range<T>(s: &[T]) -> (usize, usize) {
  let start = s.as_ptr() as usize;
  (start, start + std::mem::size_of_val(s))
}

fn overlaps(a: (usize, usize), b: (usize, usize)) -> bool {
  a.0 < b.1 && b.0 < a.1
}

/// A batch's arguments, checked: the same work for the sync and async forms.
struct BatchJob {
  block_size: usize,
  seed: u64,
}

impl BatchJob {
  fn new(tokens: &[u32], offsets: &[u32], block_size: u32, seed: &BigInt, hashes: &[u64], hash_offsets: &[u32], sequence: Option<&[u64]>) -> Result<Self> {
    let bs = check_block_size(block_size)?;
    let seed = to_u64(seed, "seed")?;
    if offsets.is_empty() {
      return Err(range_error("offsets must hold at least one entry (prompts + 1)"));
    }
    let mut total = 0usize;
    for w in offsets.windows(2) {
      let (a, b) = (w[0] as usize, w[1] as usize);
      if a > b || b > tokens.len() {
        return Err(range_error("offsets must be non-decreasing and within the tokens"));
      }
      total += (b - a) / bs;
    }
    if offsets[0] as usize > tokens.len() {
      return Err(range_error("offsets must be non-decreasing and within the tokens"));
    }
    if total > u32::MAX as usize {
      return Err(range_error("a batch yields at most 2^32 - 1 hashes"));
    }
    if hashes.len() < total {
      return Err(range_error(format!("hashes must hold at least {total} entries, got {}", hashes.len())));
    }
    if hash_offsets.len() != offsets.len() {
      return Err(range_error(format!("hashOffsets must hold {} entries (one per offset), got {}", offsets.len(), hash_offsets.len())));
    }
    let mut ranges = vec![byte_range(tokens), byte_range(offsets), byte_range(hashes), byte_range(hash_offsets)];
    if let Some(s) = sequence {
      if s.len() < total {
        return Err(range_error(format!("sequence must hold at least {total} entries, got {}", s.len())));
      }
      ranges.push(byte_range(s));
    }
    for i in 2..ranges.len() {
      for j in 0..i {
        if ranges[i].0 != ranges[i].1 && ranges[j].0 != ranges[j].1 && overlaps(ranges[i], ranges[j]) {
          return Err(range_error("output buffers must not overlap each other or the inputs"));
        }
      }
    }
    Ok(Self { block_size: bs, seed })
  }

  fn run(&self, tokens: &[u32], offsets: &[u32], out: &mut [u64], out_offsets: &mut [u32], mut seq: Option<&mut [u64]>) -> u32 {
    let hasher = BlockHasher::new(self.block_size, self.seed);
    let mut n = 0usize;
    out_offsets[0] = 0;
    for (p, w) in offsets.windows(2).enumerate() {
      let start = n;
      n += hasher.hash_into(&tokens[w[0] as usize..w[1] as usize], &mut out[start..]);
      if let Some(s) = seq.as_deref_mut() {
        hash::sequence_hashes_into(&out[start..n], &mut s[start..n]);
      }
      out_offsets[p + 1] = n as u32;
    }
    n as u32
  }
}

/// Hashes the prompts tokens[offsets[i]..offsets[i+1]] (offsets non-decreasing, need not start
/// at 0): all local hashes in order into `hashes`, where prompt i's start into `hash_offsets`
/// (offsets.length entries, from 0), and with `sequence` also the chained sequence hashes,
/// restarting at each prompt. Returns the number of hashes written.
#[napi]
pub fn compute_block_hashes_batch_into(
  tokens: &[u32],
  offsets: &[u32],
  block_size: u32,
  seed: BigInt,
  mut hashes: BigUint64ArraySlice,
  mut hash_offsets: Uint32ArraySlice,
  sequence: Option<BigUint64ArraySlice>,
) -> Result<u32> {
  let job = BatchJob::new(tokens, offsets, block_size, &seed, &hashes, &hash_offsets, sequence.as_deref())?;
  let mut sequence = sequence;
  // SAFETY: a synchronous call: no JavaScript runs on this thread while the slices live, and the
  // output buffers were checked not to overlap each other or the tokens. (Another thread writing
  // into a shared token buffer meanwhile would only change what is hashed.)
  let out = unsafe { hashes.as_mut() };
  let out_offsets = unsafe { hash_offsets.as_mut() };
  let seq = sequence.as_mut().map(|s| unsafe { s.as_mut() });
  Ok(job.run(tokens, offsets, out, out_offsets, seq))
}

/// `compute_block_hashes_batch_into` on a libuv thread, its arguments checked before the work is
/// queued (bad ones throw exactly as in the sync form).
pub struct BatchHashTask {
  job: BatchJob,
  tokens: Uint32Array,
  offsets: Uint32Array,
  hashes: BigUint64Array,
  hash_offsets: Uint32Array,
  sequence: Option<BigUint64Array>,
}

impl Task for BatchHashTask {
  type Output = u32;
  type JsValue = u32;

  fn compute(&mut self) -> napi::Result<u32> {
    // SAFETY: the outputs were allocated by the caller (src/core/hash-batch.mjs) for this call and
    // are handed to JavaScript only once the promise settles; they were checked not to overlap
    // each other or the inputs. The inputs are held by reference: the caller must not change or
    // transfer them until then.
    let out = unsafe { self.hashes.as_mut() };
    let out_offsets = unsafe { self.hash_offsets.as_mut() };
    let seq = self.sequence.as_mut().map(|s| unsafe { s.as_mut() });
    Ok(self.job.run(&self.tokens, &self.offsets, out, out_offsets, seq))
  }

  fn resolve(&mut self, _env: Env, written: u32) -> napi::Result<u32> {
    Ok(written)
  }
}

/// The async form of `compute_block_hashes_batch_into`: a Promise of the number of hashes written.
#[napi(ts_return_type = "Promise<number>")]
pub fn compute_block_hashes_batch_into_async(
  tokens: Uint32Array,
  offsets: Uint32Array,
  block_size: u32,
  seed: BigInt,
  hashes: BigUint64Array,
  hash_offsets: Uint32Array,
  sequence: Option<BigUint64Array>,
) -> Result<AsyncTask<BatchHashTask>> {
  let job = BatchJob::new(&tokens, &offsets, block_size, &seed, &hashes, &hash_offsets, sequence.as_deref())?;
  Ok(AsyncTask::new(BatchHashTask { job, tokens, offsets, hashes, hash_offsets, sequence }))
}
