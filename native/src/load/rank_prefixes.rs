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
  /// Changes with every hold and release: a recorded walk is valid while it is unchanged.
  generation: u64,
}

/// The path one `prefixes_into` walked (each segment and the blocks of it the prompt matched),
/// so booking that prompt right after follows it without comparing its hashes a second time.
#[derive(Debug, Default, Clone)]
pub struct PrefixWalk {
  path: Vec<(SegId, u32)>,
  generation: u64,
  blocks: usize,
  /// Per rank id, the prompt's leading blocks active there.
  prefixes: Vec<u32>,
}

impl PrefixWalk {
  /// The prompt's leading blocks active on `rank` when it was walked.
  pub fn prefix(&self, rank: RankId) -> u32 {
    self.prefixes.get(rank as usize).copied().unwrap_or(0)
  }
}

impl RankPrefixes {
  pub fn is_empty(&self) -> bool {
    self.chains.is_empty()
  }

  /// Whether `walk`, recorded for a prompt of `blocks` blocks, still describes this trie.
  pub fn is_current(&self, walk: &PrefixWalk, blocks: usize) -> bool {
    walk.generation == self.generation && walk.blocks == blocks
  }

  /// A booking of `rank` starts holding the chain `seq` (block hashes from block 0).
  /// `walk`: the path `walk` recorded for this same `seq` while current, followed instead of
  /// comparing again.
  pub fn hold(&mut self, rank: RankId, seq: &[u64], walk: Option<&PrefixWalk>) -> ChainEnd {
    if seq.is_empty() {
      return None;
    }
    let path: &[(SegId, u32)] = match walk {
      Some(w) if self.is_current(w, seq.len()) => &w.path,
      _ => &[],
    };
    self.generation += 1;
    let mut parent = NONE;
    let mut pos = 0;
    let mut step = 0;
    loop {
      let recorded = path.get(step).copied();
      step += 1;
      let found = match recorded {
        Some((s, _)) => Some(s),
        None => self.chains.child(parent, seq[pos]),
      };
      let Some(s) = found else {
        let id = self.chains.add(parent, &seq[pos..], 0);
        let list = self.list_mut(id);
        list.clear();
        list.push((rank, 1));
        return Some(id);
      };
      let len = self.chains.seg(s).hashes.len();
      let k = match recorded {
        Some((_, k)) => k as usize,
        None => common_prefix(&self.chains.seg(s).hashes, &seq[pos..]),
      };
      debug_assert_eq!(k, common_prefix(&self.chains.seg(s).hashes, &seq[pos..]), "a stale walk");
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
    self.generation += 1;
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

  /// For each of `ranks` rank ids, how many leading blocks of `seq` are active on it, into
  /// `walk.prefixes`, with the path walked.
  pub fn walk(&self, seq: &[u64], ranks: usize, walk: &mut PrefixWalk) {
    walk.path.clear();
    walk.generation = self.generation;
    walk.blocks = seq.len();
    walk.prefixes.clear();
    walk.prefixes.resize(ranks, 0);
    let out = &mut walk.prefixes;
    let mut parent = NONE;
    let mut pos = 0;
    while pos < seq.len() {
      let Some(s) = self.chains.child(parent, seq[pos]) else { break };
      let hashes = &self.chains.seg(s).hashes;
      let k = common_prefix(hashes, &seq[pos..]);
      walk.path.push((s, k as u32));
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
