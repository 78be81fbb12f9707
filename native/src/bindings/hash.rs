use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::errors::{range_error, Result};
use crate::hash::{self, BlockHasher, MmBlocks, Window};

/// Largest block size accepted: engines use 16..1024 tokens per block.
pub const MAX_BLOCK_SIZE: u32 = 1 << 16;

pub fn check_block_size(block_size: u32) -> Result<usize> {
  if block_size == 0 || block_size > MAX_BLOCK_SIZE {
    return Err(range_error(format!("blockSize must be an integer in 1..={MAX_BLOCK_SIZE}, got {block_size}")));
  }
  Ok(block_size as usize)
}

/// A u64 from a BigInt (seeds, hashes).
pub fn to_u64(v: &BigInt, name: &str) -> Result<u64> {
  let (negative, value, lossless) = v.get_u64();
  if negative || !lossless {
    return Err(range_error(format!("{name} must fit in 64 unsigned bits")));
  }
  Ok(value)
}

/// The multimodal CSR pair of a call (both or neither).
pub fn mm_blocks<'a>(offsets: Option<&'a [u32]>, hashes: Option<&'a [u64]>) -> Result<Option<MmBlocks<'a>>> {
  match (offsets, hashes) {
    (None, None) => Ok(None),
    (Some(o), Some(h)) => MmBlocks::new(o, h).map(Some).map_err(range_error),
    _ => Err(super::errors::type_error("mmOffsets and mmHashes go together")),
  }
}

/// Seed of the local block hash for a LoRA adapter name and cache namespace.
#[napi]
pub fn block_hash_seed(lora_name: Option<String>, cache_namespace: Option<String>) -> BigInt {
  BigInt::from(hash::block_seed(lora_name.as_deref(), cache_namespace.as_deref()))
}

/// The u64 a multimodal identifier contributes to its block's hash.
#[napi]
pub fn mm_identifier_hash(id: String) -> BigInt {
  BigInt::from(hash::mm_identifier_hash(&id))
}

/// One prompt's block hashing with its arguments checked: the same work for the sync and async forms.
struct BlockHashJob {
  block_size: usize,
  seed: u64,
  window: Window,
}

impl BlockHashJob {
  fn new(
    tokens: &[u32],
    block_size: u32,
    seed: &BigInt,
    mm_offsets: Option<&[u32]>,
    mm_hashes: Option<&[u64]>,
    out: &[u64],
    eagle: Option<bool>,
  ) -> Result<Self> {
    let job = Self { block_size: check_block_size(block_size)?, seed: to_u64(seed, "seed")?, window: Window::from_eagle(eagle == Some(true)) };
    let blocks = job.hasher(mm_blocks(mm_offsets, mm_hashes)?).blocks_in(tokens.len());
    if out.len() < blocks {
      return Err(range_error(format!("out must hold at least {blocks} entries, got {}", out.len())));
    }
    Ok(job)
  }

  fn hasher<'a>(&self, mm: Option<MmBlocks<'a>>) -> BlockHasher<'a> {
    BlockHasher::new(self.block_size, self.seed).window(self.window).multimodal(mm)
  }

  /// Hashes into `out`; the multimodal pair was checked by `new`.
  fn run(&self, tokens: &[u32], mm_offsets: Option<&[u32]>, mm_hashes: Option<&[u64]>, out: &mut [u64]) -> u32 {
    let mm = mm_blocks(mm_offsets, mm_hashes).expect("multimodal offsets checked when the job was made");
    self.hasher(mm).hash_into(tokens, out) as u32
  }
}

/// Local hashes of the complete blocks of `tokens` (read in place, never copied), written into
/// `out` (at least as many entries as complete blocks; the caller allocates it, so no external
/// ArrayBuffer is created: V8 frees those only when the event loop turns, which a synchronous
/// hot loop never does). `mm_offsets`/`mm_hashes` (CSR): block i's multimodal hashes are
/// mm_hashes[mm_offsets[i]..mm_offsets[i+1]]. `eagle`: EAGLE windows of blockSize + 1 tokens.
/// Returns the number of hashes written.
#[napi]
pub fn compute_block_hashes_into(
  tokens: &[u32],
  block_size: u32,
  seed: BigInt,
  mm_offsets: Option<&[u32]>,
  mm_hashes: Option<BigUint64ArraySlice>,
  mut out: BigUint64ArraySlice,
  eagle: Option<bool>,
) -> Result<u32> {
  let mm_hashes = mm_hashes.as_ref().map(|h| h.as_ref());
  let job = BlockHashJob::new(tokens, block_size, &seed, mm_offsets, mm_hashes, out.as_ref(), eagle)?;
  // SAFETY: a synchronous call: no JavaScript runs while the slice lives, and `out` is a fresh
  // array of the wrapper's (src/core/hashing.ts), never one of the inputs.
  Ok(job.run(tokens, mm_offsets, mm_hashes, unsafe { out.as_mut() }))
}

/// `compute_block_hashes_into` on a libuv thread. The arguments are checked before the work is
/// queued, so bad ones throw exactly as in the sync form.
pub struct BlockHashTask {
  job: BlockHashJob,
  tokens: Uint32Array,
  mm_offsets: Option<Uint32Array>,
  mm_hashes: Option<BigUint64Array>,
  out: BigUint64Array,
}

impl Task for BlockHashTask {
  type Output = u32;
  type JsValue = u32;

  fn compute(&mut self) -> napi::Result<u32> {
    // SAFETY: the wrapper (src/core/hashing.ts) allocated `out` for this call and hands it to
    // JavaScript only once the promise settles; the inputs are held by reference (the caller must
    // not change or transfer them until then, as with Node's own async buffer APIs).
    let out = unsafe { self.out.as_mut() };
    Ok(self.job.run(&self.tokens, self.mm_offsets.as_deref(), self.mm_hashes.as_deref(), out))
  }

  fn resolve(&mut self, _env: Env, written: u32) -> napi::Result<u32> {
    Ok(written)
  }
}

/// The async form of `compute_block_hashes_into`: a Promise of the number of hashes written.
#[napi(ts_return_type = "Promise<number>")]
pub fn compute_block_hashes_into_async(
  tokens: Uint32Array,
  block_size: u32,
  seed: BigInt,
  mm_offsets: Option<Uint32Array>,
  mm_hashes: Option<BigUint64Array>,
  out: BigUint64Array,
  eagle: Option<bool>,
) -> Result<AsyncTask<BlockHashTask>> {
  let job = BlockHashJob::new(&tokens, block_size, &seed, mm_offsets.as_deref(), mm_hashes.as_deref(), &out, eagle)?;
  Ok(AsyncTask::new(BlockHashTask { job, tokens, mm_offsets, mm_hashes, out }))
}

/// Chained sequence hashes of a run of local block hashes, written into `out` (same length).
#[napi]
pub fn compute_sequence_hashes_into(block_hashes: BigUint64ArraySlice, mut out: BigUint64ArraySlice) -> Result<()> {
  let local = block_hashes.as_ref();
  // SAFETY: synchronous; `out` is a fresh array of the wrapper's, distinct from the input.
  let out = unsafe { out.as_mut() };
  if out.len() != local.len() {
    return Err(range_error(format!("out must hold {} entries, got {}", local.len(), out.len())));
  }
  hash::sequence_hashes_into(local, out);
  Ok(())
}
