//! Dynamo-compatible block hashing (PROTOCOLS.md section 1): the one hashing path of the crate,
//! used by `computeBlockHashes`, the hashing pool's batches, the indexer's stored events and the
//! routing decision alike.
//!
//! Local hash: XXH3-64 of a block's tokens as little-endian u32, seeded with 1337 (plus the
//! LoRA / namespace offsets), with the block's sorted multimodal hashes (u64 LE) appended when it
//! has any. Sequence hash: XXH3-64 of (previous sequence hash, local hash) as two little-endian
//! u64, always seeded with 1337.
//!
//! Windows: a block hashes its own `block_size` tokens, or, for EAGLE engines (Dynamo's
//! `is_eagle`), the `block_size + 1` tokens starting at it (its tokens and the first of the next
//! block): n tokens then give (n - 1) / block_size blocks.

use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed, Xxh3};

pub const HASH_SEED: u64 = 1337;

/// Seed of the local block hash for a request's LoRA adapter and cache namespace.
/// Empty strings count as unset.
pub fn block_seed(lora_name: Option<&str>, cache_namespace: Option<&str>) -> u64 {
  let mut seed = HASH_SEED;
  if let Some(lora) = lora_name.filter(|s| !s.is_empty()) {
    seed = seed.wrapping_add(xxh3_64_with_seed(lora.as_bytes(), 0));
  }
  if let Some(ns) = cache_namespace.filter(|s| !s.is_empty()) {
    seed = seed.wrapping_add(xxh3_64_with_seed(ns.as_bytes(), 1));
  }
  seed
}

/// Maps a multimodal content identifier to the u64 appended to its block's bytes: a 64-hex digest
/// is read from its first 16 hex characters, anything else is hashed.
pub fn mm_identifier_hash(id: &str) -> u64 {
  if id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
    u64::from_str_radix(&id[..16], 16).expect("16 hex digits fit a u64")
  } else {
    xxh3_64(id.as_bytes())
  }
}

/// Which tokens a block's hash covers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Window {
  /// The block's own `block_size` tokens.
  #[default]
  Plain,
  /// EAGLE: the block's tokens and the first token of the next block (`block_size + 1`).
  Eagle,
}

impl Window {
  pub fn from_eagle(eagle: bool) -> Self {
    if eagle {
      Self::Eagle
    } else {
      Self::Plain
    }
  }

  pub fn is_eagle(self) -> bool {
    self == Self::Eagle
  }

  /// Tokens one block's hash reads.
  pub fn span(self, block_size: usize) -> usize {
    block_size + (self == Self::Eagle) as usize
  }

  /// Complete blocks in `tokens` tokens (a partial last block, or one without the token after
  /// it in EAGLE mode, is never hashed).
  pub fn blocks_in(self, tokens: usize, block_size: usize) -> usize {
    if block_size == 0 {
      return 0;
    }
    match self {
      Self::Plain => tokens / block_size,
      Self::Eagle => tokens.saturating_sub(1) / block_size,
    }
  }

  /// Tokens a stored event of `blocks` blocks carries: exactly what hashing them reads.
  pub fn tokens_for(self, blocks: usize, block_size: usize) -> usize {
    if blocks == 0 {
      return 0;
    }
    blocks * block_size + (self == Self::Eagle) as usize
  }
}

/// The multimodal items of each block (CSR): block i's are hashes[offsets[i]..offsets[i + 1]];
/// blocks past the offsets have none.
#[derive(Clone, Copy, Debug)]
pub struct MmBlocks<'a> {
  offsets: &'a [u32],
  hashes: &'a [u64],
}

impl<'a> MmBlocks<'a> {
  pub fn new(offsets: &'a [u32], hashes: &'a [u64]) -> Result<Self, String> {
    let ok = offsets.windows(2).all(|w| w[0] <= w[1]) && offsets.last().is_none_or(|&end| end as usize <= hashes.len());
    if !ok {
      return Err("multimodal offsets must be non-decreasing and within the hashes".into());
    }
    Ok(Self { offsets, hashes })
  }

  /// Blocks the offsets describe.
  pub fn blocks(&self) -> usize {
    self.offsets.len().saturating_sub(1)
  }

  pub fn items(&self, block: usize) -> &'a [u64] {
    match (self.offsets.get(block), self.offsets.get(block + 1)) {
      (Some(&a), Some(&b)) => &self.hashes[a as usize..b as usize],
      _ => &[],
    }
  }
}

/// How a sequence of tokens is cut into blocks and each block hashed.
#[derive(Clone, Copy, Debug)]
pub struct BlockHasher<'a> {
  pub block_size: usize,
  pub seed: u64,
  pub window: Window,
  pub mm: Option<MmBlocks<'a>>,
}

impl<'a> BlockHasher<'a> {
  pub fn new(block_size: usize, seed: u64) -> Self {
    Self { block_size, seed, window: Window::Plain, mm: None }
  }

  pub fn window(self, window: Window) -> Self {
    Self { window, ..self }
  }

  pub fn multimodal(self, mm: Option<MmBlocks<'a>>) -> Self {
    Self { mm, ..self }
  }

  pub fn blocks_in(&self, tokens: usize) -> usize {
    self.window.blocks_in(tokens, self.block_size)
  }

  /// Local hashes of the complete blocks of `tokens` into `out` (which holds at least
  /// `blocks_in(tokens.len())` entries). Returns the number written.
  pub fn hash_into(&self, tokens: &[u32], out: &mut [u64]) -> usize {
    let n = self.blocks_in(tokens.len());
    let out = &mut out[..n];
    let (bs, span) = (self.block_size, self.window.span(self.block_size));
    match (self.window, self.mm) {
      (Window::Plain, None) => {
        for (slot, block) in out.iter_mut().zip(tokens.chunks_exact(bs)) {
          *slot = hash_block(block, self.seed);
        }
      }
      _ => {
        for (i, slot) in out.iter_mut().enumerate() {
          let window = &tokens[i * bs..i * bs + span];
          let items = self.mm.map_or(&[][..], |mm| mm.items(i));
          *slot = hash_block_with_mm(window, items, self.seed);
        }
      }
    }
    n
  }

  /// Appends the local hashes of the complete blocks of `tokens` to `out`.
  pub fn hash_extend(&self, tokens: &[u32], out: &mut Vec<u64>) {
    let start = out.len();
    let n = self.blocks_in(tokens.len());
    out.resize(start + n, 0);
    self.hash_into(tokens, &mut out[start..]);
  }

  pub fn hashes(&self, tokens: &[u32]) -> Vec<u64> {
    let mut out = Vec::new();
    self.hash_extend(tokens, &mut out);
    out
  }
}

#[inline]
fn tokens_as_le_bytes(tokens: &[u32]) -> &[u8] {
  // u32 tokens are already little-endian in memory on every target Node runs on.
  #[cfg(target_endian = "little")]
  {
    // SAFETY: a u32 slice reinterpreted as bytes: same memory, 4x the length, align 1.
    unsafe { std::slice::from_raw_parts(tokens.as_ptr() as *const u8, tokens.len() * 4) }
  }
  #[cfg(not(target_endian = "little"))]
  compile_error!("kvroute hashes tokens as little-endian bytes in place");
}

/// Local hash of one block (or EAGLE window) of tokens.
#[inline]
pub fn hash_block(tokens: &[u32], seed: u64) -> u64 {
  xxh3_64_with_seed(tokens_as_le_bytes(tokens), seed)
}

/// Local hash of a block with multimodal content: its sorted multimodal hashes follow the tokens.
pub fn hash_block_with_mm(tokens: &[u32], mm_hashes: &[u64], seed: u64) -> u64 {
  if mm_hashes.is_empty() {
    return hash_block(tokens, seed);
  }
  let mut inline = [0u64; 8];
  let mut spilled = Vec::new();
  let sorted: &mut [u64] = if mm_hashes.len() <= inline.len() {
    inline[..mm_hashes.len()].copy_from_slice(mm_hashes);
    &mut inline[..mm_hashes.len()]
  } else {
    spilled.extend_from_slice(mm_hashes);
    &mut spilled
  };
  sorted.sort_unstable();
  // Streaming XXH3 gives the one-shot digest of the concatenation without building it.
  let mut h = Xxh3::with_seed(seed);
  h.update(tokens_as_le_bytes(tokens));
  for v in sorted.iter() {
    h.update(&v.to_le_bytes());
  }
  h.digest()
}

#[inline]
pub fn chain_hash(parent: u64, local: u64) -> u64 {
  let mut buf = [0u8; 16];
  buf[..8].copy_from_slice(&parent.to_le_bytes());
  buf[8..].copy_from_slice(&local.to_le_bytes());
  xxh3_64_with_seed(&buf, HASH_SEED)
}

/// Chained sequence hashes into `out` (same length): seq[0] = local[0], seq[i] = H(seq[i-1], local[i]).
pub fn sequence_hashes_into(local: &[u64], out: &mut [u64]) {
  debug_assert_eq!(local.len(), out.len());
  let mut prev = 0u64;
  for (i, (&h, slot)) in local.iter().zip(out.iter_mut()).enumerate() {
    prev = if i == 0 { h } else { chain_hash(prev, h) };
    *slot = prev;
  }
}

/// Chained sequence hashes appended to `out` (cleared first).
pub fn sequence_hashes_to(local: &[u64], out: &mut Vec<u64>) {
  out.clear();
  out.resize(local.len(), 0);
  sequence_hashes_into(local, out);
}

pub fn sequence_hashes(local: &[u64]) -> Vec<u64> {
  let mut out = Vec::new();
  sequence_hashes_to(local, &mut out);
  out
}

/// Plain local hashes (no multimodal content, plain windows): tests and simple callers.
pub fn block_hashes(tokens: &[u32], block_size: usize, seed: u64) -> Vec<u64> {
  BlockHasher::new(block_size, seed).hashes(tokens)
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn protocol_vector() {
    assert_eq!(block_hashes(&[1, 2, 3, 4], 4, HASH_SEED), vec![14643705804678351452]);
  }

  #[test]
  fn partial_block_is_not_hashed() {
    assert_eq!(block_hashes(&[1, 2, 3, 4, 5, 6, 7], 4, HASH_SEED).len(), 1);
    assert!(block_hashes(&[1, 2, 3], 4, HASH_SEED).is_empty());
  }

  #[test]
  fn empty_strings_count_as_unset() {
    assert_eq!(block_seed(Some(""), Some("")), HASH_SEED);
    assert_ne!(block_seed(Some("a"), None), HASH_SEED);
    assert_ne!(block_seed(Some("a"), None), block_seed(None, Some("a")));
  }

  #[test]
  fn mm_hashes_are_order_independent_and_equal_the_concatenation() {
    let t = [1u32, 2, 3, 4];
    assert_eq!(hash_block_with_mm(&t, &[5, 3], 1337), hash_block_with_mm(&t, &[3, 5], 1337));
    assert_ne!(hash_block_with_mm(&t, &[3], 1337), hash_block(&t, 1337));
    assert_eq!(hash_block_with_mm(&t, &[], 1337), hash_block(&t, 1337));
    let mut bytes: Vec<u8> = t.iter().flat_map(|x| x.to_le_bytes()).collect();
    for h in [3u64, 5] {
      bytes.extend_from_slice(&h.to_le_bytes());
    }
    assert_eq!(hash_block_with_mm(&t, &[5, 3], 1337), xxh3_64_with_seed(&bytes, 1337));
    // More items than the inline buffer holds.
    let many: Vec<u64> = (0..20).rev().collect();
    let mut sorted = many.clone();
    sorted.sort_unstable();
    assert_eq!(hash_block_with_mm(&t, &many, 9), hash_block_with_mm(&t, &sorted, 9));
  }

  #[test]
  fn mm_identifier_digest_and_other() {
    let digest = "00000000000000ff".to_string() + &"a".repeat(48);
    assert_eq!(mm_identifier_hash(&digest), 255);
    assert_eq!(mm_identifier_hash("image-1"), xxh3_64(b"image-1"));
  }

  #[test]
  fn sequence_chain_starts_with_first_local() {
    let local = [10u64, 20, 30];
    let seq = sequence_hashes(&local);
    assert_eq!(seq[0], 10);
    assert_eq!(seq[1], chain_hash(10, 20));
    assert_eq!(seq[2], chain_hash(seq[1], 30));
  }

  #[test]
  fn mm_blocks_are_validated_and_blocks_past_them_have_none() {
    assert!(MmBlocks::new(&[0, 2, 1], &[1, 2]).is_err());
    assert!(MmBlocks::new(&[0, 3], &[1, 2]).is_err());
    let mm = MmBlocks::new(&[0, 1, 1], &[7]).unwrap();
    assert_eq!((mm.items(0), mm.items(1), mm.items(5), mm.blocks()), (&[7u64][..], &[][..], &[][..], 2));
    let t: Vec<u32> = (0..12).collect();
    let h = BlockHasher::new(4, HASH_SEED).multimodal(Some(mm)).hashes(&t);
    assert_eq!(h[0], hash_block_with_mm(&t[..4], &[7], HASH_SEED));
    assert_eq!(h[1..], block_hashes(&t, 4, HASH_SEED)[1..]);
  }

  #[test]
  fn eagle_windows_overlap_by_one_token() {
    let t: Vec<u32> = (1..=9).collect();
    let eagle = BlockHasher::new(4, HASH_SEED).window(Window::Eagle);
    assert_eq!(eagle.blocks_in(8), 1, "8 tokens: the second block lacks its lookahead token");
    assert_eq!(eagle.blocks_in(9), 2);
    assert_eq!(eagle.blocks_in(0), 0);
    let h = eagle.hashes(&t);
    assert_eq!(h, vec![hash_block(&t[0..5], HASH_SEED), hash_block(&t[4..9], HASH_SEED)]);
    // Dynamo 1.6.1's compute_block_hash_for_seq([1..=9], 4, is_eagle=True).
    assert_eq!(h, vec![1914873892905420881, 1929047464662796003]);
    assert_eq!(Window::Eagle.tokens_for(2, 4), 9);
    assert_eq!(Window::Plain.tokens_for(2, 4), 8);
    assert_eq!(Window::Eagle.tokens_for(0, 4), 0);
  }
}
