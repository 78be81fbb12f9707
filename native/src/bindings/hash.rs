use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::errors::range_error;
use crate::hash;

/// Largest block size accepted: engines use 16..1024 tokens per block.
pub const MAX_BLOCK_SIZE: u32 = 1 << 16;

pub fn check_block_size(block_size: u32) -> Result<usize> {
  if block_size == 0 || block_size > MAX_BLOCK_SIZE {
    return Err(range_error(format!("blockSize must be an integer in 1..={MAX_BLOCK_SIZE}, got {block_size}")));
  }
  Ok(block_size as usize)
}

pub fn check_seed(seed: &BigInt) -> Result<u64> {
  let (sign, seed, lossless) = seed.get_u64();
  if sign || !lossless {
    return Err(range_error("seed must be a u64"));
  }
  Ok(seed)
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

/// One prompt's block hashing, its arguments checked: the same work for the sync and async forms.
struct BlockHashJob {
  block_size: usize,
  seed: u64,
  /// Block i's multimodal hashes (blocks past the end have none).
  mm: Option<Vec<Vec<u64>>>,
}

impl BlockHashJob {
  fn new(
    tokens: &[u32],
    block_size: u32,
    seed: &BigInt,
    mm_offsets: Option<&[u32]>,
    mm_hashes: Option<&[u64]>,
    out: &[u64],
  ) -> Result<Self> {
    let block_size = check_block_size(block_size)?;
    let seed = check_seed(seed)?;
    let blocks = tokens.len() / block_size;
    if out.len() < blocks {
      return Err(range_error(format!("out must hold at least {blocks} entries, got {}", out.len())));
    }
    let mm = match (mm_offsets, mm_hashes) {
      (Some(offsets), Some(values)) => Some(split_csr(offsets, values)?),
      _ => None,
    };
    Ok(Self { block_size, seed, mm })
  }

  fn run(&self, tokens: &[u32], out: &mut [u64]) -> u32 {
    let blocks = tokens.chunks_exact(self.block_size);
    let count = blocks.len();
    match &self.mm {
      Some(per_block) => {
        for (i, (slot, block)) in out.iter_mut().zip(blocks).enumerate() {
          *slot = match per_block.get(i) {
            Some(hashes) => hash::hash_block_with_mm(block, hashes, self.seed),
            None => hash::hash_block(block, self.seed),
          };
        }
      }
      None => {
        for (slot, block) in out.iter_mut().zip(blocks) {
          *slot = hash::hash_block(block, self.seed);
        }
      }
    }
    count as u32
  }
}

/// Local hashes of the complete blocks of `tokens` (read in place, never copied), written into
/// `out` (at least tokens.len() / block_size entries; the caller allocates it, so no external
/// ArrayBuffer is created: V8 frees those only when the event loop turns, which a synchronous
/// hot loop never does). `mm_offsets`/`mm_hashes` (CSR): block i's multimodal hashes are
/// mm_hashes[mm_offsets[i]..mm_offsets[i+1]]. Returns the number of hashes written.
#[napi]
pub fn compute_block_hashes_into(
  tokens: &[u32],
  block_size: u32,
  seed: BigInt,
  mm_offsets: Option<&[u32]>,
  mm_hashes: Option<BigUint64ArraySlice>,
  mut out: BigUint64ArraySlice,
) -> Result<u32> {
  let job = BlockHashJob::new(tokens, block_size, &seed, mm_offsets, mm_hashes.as_ref().map(|h| h.as_ref()), out.as_ref())?;
  // SAFETY: a synchronous call: no JavaScript runs while the slice lives, and `out` is a fresh
  // array of the wrapper's (src/core/hashing.ts), never one of the inputs.
  Ok(job.run(tokens, unsafe { out.as_mut() }))
}

/// `compute_block_hashes_into` on a libuv thread. The arguments are checked here, before the
/// work is queued, so bad ones throw exactly as in the sync form.
pub struct BlockHashTask {
  job: BlockHashJob,
  tokens: Uint32Array,
  out: BigUint64Array,
}

impl Task for BlockHashTask {
  type Output = u32;
  type JsValue = u32;

  fn compute(&mut self) -> Result<u32> {
    // SAFETY: the wrapper (src/core/hashing.ts) allocated `out` for this call and hands it to
    // JavaScript only once the promise settles; `tokens` is held by reference (the caller must not
    // change or transfer it until then, as with Node's own async buffer APIs).
    let out = unsafe { self.out.as_mut() };
    Ok(self.job.run(&self.tokens, out))
  }

  fn resolve(&mut self, _env: Env, written: u32) -> Result<u32> {
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
) -> Result<AsyncTask<BlockHashTask>> {
  let job = BlockHashJob::new(&tokens, block_size, &seed, mm_offsets.as_deref(), mm_hashes.as_deref(), &out)?;
  Ok(AsyncTask::new(BlockHashTask { job, tokens, out }))
}

fn split_csr(offsets: &[u32], values: &[u64]) -> Result<Vec<Vec<u64>>> {
  let mut out = Vec::with_capacity(offsets.len().saturating_sub(1));
  for w in offsets.windows(2) {
    let (a, b) = (w[0] as usize, w[1] as usize);
    if a > b || b > values.len() {
      return Err(range_error("multimodal offsets must be non-decreasing and within the hashes"));
    }
    out.push(values[a..b].to_vec());
  }
  Ok(out)
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
  let mut prev = 0u64;
  for (i, (&h, slot)) in local.iter().zip(out.iter_mut()).enumerate() {
    prev = if i == 0 { h } else { hash::chain_hash(prev, h) };
    *slot = prev;
  }
  Ok(())
}
