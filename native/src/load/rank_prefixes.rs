//! Every rank's active chains in one trie, for the decision's "how many leading blocks of this
//! prompt are already active on each rank".
//!
//! Asked rank by rank (each rank's own trie, `chains.rs`), that question costs a table probe in
//! every rank's table and a compare of the shared prefix (a system prompt, say) once per rank
//! holding it: for 64 ranks at 8k tokens, the largest part of selecting a worker after the
//! hashing. Here the chains of all ranks share one trie (the same segments and keys as a rank's:
//! a block is named by its path, then its hash), and each segment lists the ranks whose bookings
//! pass through it, with how many. One walk of the prompt then answers for every rank at once: a
//! rank's active prefix ends in the deepest segment of the prompt's path that lists it (a rank
//! listed in a segment is listed in all its ancestors, as its bookings run from block 0).
//!
//! Kept beside the ranks' own tries, which still do the per-rank accounting (exclusive blocks,
//! decay); the book's property test checks both give the same prefixes.

use super::book::RankId;
use super::chains::{common_prefix, Chains, SegId, NONE};
use super::rank_load::ChainEnd;

#[derive(Debug, Default)]
pub struct RankPrefixes {
  chains: Chains,
  /// Per segment id: (rank, bookings of that rank passing through).
  ranks: Vec<Vec<(RankId, u32)>>,
}

impl RankPrefixes {
  pub fn is_empty(&self) -> bool {
    self.chains.is_empty()
  }

  /// A booking of `rank` starts holding the chain `seq` (block hashes from block 0).
  pub fn hold(&mut self, rank: RankId, seq: &[u64]) -> ChainEnd {
    if seq.is_empty() {
      return None;
    }
    let mut parent = NONE;
    let mut pos = 0;
    loop {
      let Some(s) = self.chains.child(parent, seq[pos]) else {
        let id = self.chains.add(parent, &seq[pos..], 0);
        let list = self.list_mut(id);
        list.clear();
        list.push((rank, 1));
        return Some(id);
      };
      let len = self.chains.seg(s).hashes.len();
      let k = common_prefix(&self.chains.seg(s).hashes, &seq[pos..]);
      let at = if k < len { self.split(s, k) } else { s };
      self.chains.seg_mut(at).count += 1;
      let list = &mut self.ranks[at as usize];
      match list.iter_mut().find(|e| e.0 == rank) {
        Some(e) => e.1 += 1,
        None => list.push((rank, 1)),
      }
      pos += k;
      if pos == seq.len() {
        self.chains.seg_mut(at).ends += 1;
        return Some(at);
      }
      parent = at;
    }
  }

  /// A booking of `rank` stops holding the chain it held (ending at `end`).
  pub fn release(&mut self, rank: RankId, end: ChainEnd) {
    let Some(end) = end else { return };
    self.chains.seg_mut(end).ends -= 1;
    let mut cur = end;
    while cur != NONE {
      let seg = self.chains.seg_mut(cur);
      seg.count -= 1;
      let (count, parent) = (seg.count, seg.parent);
      let list = &mut self.ranks[cur as usize];
      let i = list.iter().position(|e| e.0 == rank).expect("a booking's rank is listed on its chain");
      list[i].1 -= 1;
      if list[i].1 == 0 {
        list.swap_remove(i);
      }
      if count == 0 {
        self.chains.remove(cur);
      }
      cur = parent;
    }
  }

  /// For each rank, how many leading blocks of `seq` are active on it: `out[rank]` is raised to
  /// it (the caller zeroes `out`, one entry per rank id).
  pub fn prefixes_into(&self, seq: &[u64], out: &mut [u32]) {
    let mut parent = NONE;
    let mut pos = 0;
    while pos < seq.len() {
      let Some(s) = self.chains.child(parent, seq[pos]) else { break };
      let hashes = &self.chains.seg(s).hashes;
      let k = common_prefix(hashes, &seq[pos..]);
      pos += k;
      // Deeper segments come later and list fewer ranks: each listed rank holds `pos` blocks.
      for &(rank, _) in &self.ranks[s as usize] {
        out[rank as usize] = pos as u32;
      }
      if k < hashes.len() {
        break;
      }
      parent = s;
    }
  }

  /// Splits `s` after `k` blocks; the new head lists the same ranks (every booking passing the
  /// tail passes the head).
  fn split(&mut self, s: SegId, k: usize) -> SegId {
    let head = self.chains.split(s, k);
    self.list_mut(head);
    let (h, t) = (head as usize, s as usize);
    let mut list = std::mem::take(&mut self.ranks[h]);
    list.clear();
    list.extend_from_slice(&self.ranks[t]);
    self.ranks[h] = list;
    head
  }

  /// The rank list of segment `id`, created when the id is new.
  fn list_mut(&mut self, id: SegId) -> &mut Vec<(RankId, u32)> {
    let i = id as usize;
    if i >= self.ranks.len() {
      self.ranks.resize_with(i + 1, Vec::new);
    }
    &mut self.ranks[i]
  }
}
