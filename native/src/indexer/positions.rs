//! Where each block id is: (edge, position), in chunks of fixed size that never move. A single
//! array of a million blocks, grown by an eighth at a time, was copied about eight times its size
//! while an index was built (a stored event's apply spent ~10% in those copies once the allocator
//! served them from its heap); grown by doubling it would leave up to half of it unused. Here a
//! full chunk stays where it is and the next one is allocated beside it, so nothing is copied
//! but the first chunk's few doublings, and at most one chunk is partly unused.

use super::tree::EdgeId;

/// Positions per chunk (64 KiB).
const CHUNK_BITS: u32 = 13;
const CHUNK: usize = 1 << CHUNK_BITS;
const MASK: usize = CHUNK - 1;

#[derive(Clone, Default)]
pub struct Positions {
  /// Every chunk but the last is full (CHUNK entries).
  chunks: Vec<Vec<(EdgeId, u32)>>,
  len: usize,
}

impl Positions {
  #[inline]
  pub fn len(&self) -> usize {
    self.len
  }

  #[inline(always)]
  pub fn get(&self, b: usize) -> Option<&(EdgeId, u32)> {
    self.chunks.get(b >> CHUNK_BITS)?.get(b & MASK)
  }

  /// The position of block id `b` (< len).
  #[inline(always)]
  pub fn at(&self, b: usize) -> (EdgeId, u32) {
    self.chunks[b >> CHUNK_BITS][b & MASK]
  }

  #[inline(always)]
  pub fn set(&mut self, b: usize, at: (EdgeId, u32)) {
    self.chunks[b >> CHUNK_BITS][b & MASK] = at;
  }

  /// Room in the last chunk, a new chunk when it is full (the first grows by doubling, so a
  /// small index keeps a small table).
  #[inline]
  fn room(&mut self) -> &mut Vec<(EdgeId, u32)> {
    if self.len & MASK == 0 && self.len >> CHUNK_BITS == self.chunks.len() {
      let first = if self.chunks.is_empty() { 64 } else { CHUNK };
      self.chunks.push(Vec::with_capacity(first));
    }
    let last = self.chunks.last_mut().expect("a chunk with room");
    if last.len() == last.capacity() {
      last.reserve_exact(last.len().min(CHUNK - last.len()));
    }
    last
  }

  pub fn push(&mut self, at: (EdgeId, u32)) {
    self.room().push(at);
    self.len += 1;
  }

  /// Appends (edge, start), (edge, start + 1), ... for `n` new blocks; returns the first's id.
  pub fn push_run(&mut self, edge: EdgeId, start: u32, n: usize) -> usize {
    let first = self.len;
    let mut done = 0;
    while done < n {
      let chunk = self.room();
      let take = (n - done).min(chunk.capacity() - chunk.len());
      chunk.extend((done..done + take).map(|i| (edge, start + i as u32)));
      done += take;
      self.len += take;
    }
    first
  }

  /// Allocated bytes.
  pub fn bytes(&self) -> usize {
    self.chunks.iter().map(|c| c.capacity() * std::mem::size_of::<(EdgeId, u32)>()).sum::<usize>()
      + self.chunks.capacity() * std::mem::size_of::<Vec<(EdgeId, u32)>>()
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn runs_and_single_pushes_cross_chunks_in_order() {
    let mut p = Positions::default();
    assert_eq!(p.get(0), None);
    p.push((1, 0));
    assert_eq!(p.push_run(2, 5, 100), 1);
    assert!(p.bytes() < 2_000, "a small index keeps a small table: {}", p.bytes());
    // Runs that end a chunk and start the next.
    let mut expected: Vec<(EdgeId, u32)> = std::iter::once((1, 0)).chain((0..100).map(|i| (2, 5 + i))).collect();
    for r in 0..80u32 {
      let n = 1 + (r as usize * 997) % 700;
      assert_eq!(p.push_run(3 + r, 0, n), expected.len());
      expected.extend((0..n as u32).map(|i| (3 + r, i)));
      p.push((99, r));
      expected.push((99, r));
    }
    assert!(expected.len() > 2 * CHUNK);
    assert_eq!(p.len(), expected.len());
    for (b, &at) in expected.iter().enumerate() {
      assert_eq!(p.get(b), Some(&at), "block {b}");
    }
    assert_eq!(p.get(expected.len()), None);
    p.set(CHUNK + 3, (7, 7));
    assert_eq!(p.get(CHUNK + 3), Some(&(7, 7)));
    // Full chunks were never regrown: all but the last hold exactly CHUNK.
    assert!(p.chunks[..p.chunks.len() - 1].iter().all(|c| c.len() == CHUNK && c.capacity() == CHUNK));
    assert!(p.bytes() <= (p.chunks.len()) * CHUNK * 8 + p.chunks.capacity() * 24);
  }
}
