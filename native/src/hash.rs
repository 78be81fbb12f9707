//! Dynamo-compatible block hashing (PROTOCOLS.md section 1).
//!
//! Local hash: XXH3-64 of a block's tokens as little-endian u32, seeded with 1337 (plus the
//! LoRA / namespace offsets). Sequence hash: XXH3-64 of (previous sequence hash, local hash) as
//! two little-endian u64, always seeded with 1337.

use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};

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

/// Local hash of one block of tokens.
#[inline]
pub fn hash_block(tokens: &[u32], seed: u64) -> u64 {
  xxh3_64_with_seed(tokens_as_le_bytes(tokens), seed)
}

/// Local hash of a block with multimodal content: its sorted multimodal hashes follow the tokens.
pub fn hash_block_with_mm(tokens: &[u32], mm_hashes: &[u64], seed: u64) -> u64 {
  if mm_hashes.is_empty() {
    return hash_block(tokens, seed);
  }
  let mut sorted = mm_hashes.to_vec();
  sorted.sort_unstable();
  let mut bytes = Vec::with_capacity(tokens.len() * 4 + sorted.len() * 8);
  bytes.extend_from_slice(tokens_as_le_bytes(tokens));
  for h in sorted {
    bytes.extend_from_slice(&h.to_le_bytes());
  }
  xxh3_64_with_seed(&bytes, seed)
}

/// Local hashes of the complete blocks of `tokens`, written into `out` (cleared first).
/// The partial last block is never hashed.
pub fn block_hashes_into(tokens: &[u32], block_size: usize, seed: u64, out: &mut Vec<u64>) {
  out.clear();
  out.extend(tokens.chunks_exact(block_size).map(|block| hash_block(block, seed)));
}

pub fn block_hashes(tokens: &[u32], block_size: usize, seed: u64) -> Vec<u64> {
  let mut out = Vec::with_capacity(tokens.len() / block_size.max(1));
  block_hashes_into(tokens, block_size, seed, &mut out);
  out
}

/// Block hashes where `mm[i]` lists the multimodal hashes inside block `i` (missing = none).
pub fn block_hashes_with_mm(tokens: &[u32], block_size: usize, seed: u64, mm: &[Vec<u64>]) -> Vec<u64> {
  tokens
    .chunks_exact(block_size)
    .enumerate()
    .map(|(i, block)| match mm.get(i) {
      Some(hashes) => hash_block_with_mm(block, hashes, seed),
      None => hash_block(block, seed),
    })
    .collect()
}

#[inline]
pub fn chain_hash(parent: u64, local: u64) -> u64 {
  let mut buf = [0u8; 16];
  buf[..8].copy_from_slice(&parent.to_le_bytes());
  buf[8..].copy_from_slice(&local.to_le_bytes());
  xxh3_64_with_seed(&buf, HASH_SEED)
}

/// Chained sequence hashes: seq[0] = local[0], seq[i] = H(seq[i-1], local[i]).
pub fn sequence_hashes(local: &[u64]) -> Vec<u64> {
  let mut out = Vec::with_capacity(local.len());
  let mut prev = 0u64;
  for (i, &h) in local.iter().enumerate() {
    prev = if i == 0 { h } else { chain_hash(prev, h) };
    out.push(prev);
  }
  out
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
  fn mm_hashes_are_order_independent() {
    let t = [1u32, 2, 3, 4];
    assert_eq!(hash_block_with_mm(&t, &[5, 3], 1337), hash_block_with_mm(&t, &[3, 5], 1337));
    assert_ne!(hash_block_with_mm(&t, &[3], 1337), hash_block(&t, 1337));
    assert_eq!(hash_block_with_mm(&t, &[], 1337), hash_block(&t, 1337));
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
}
