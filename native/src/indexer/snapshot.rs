//! A full, versioned dump of the index that another router replica can load.
//!
//! Layout (little-endian): magic "KVRTIDX\0", version u32, payload length u64, payload,
//! XXH3-64 of everything before it. Version 2 payload (the compressed tree):
//!   config   block_size u32, mode u8, has_max u8, max_blocks u64, ttl_ms f64,
//!            approx_max_blocks u64, prune_fraction f64, lru tick u64, window u8, keying u8
//!   slots    n u32, then n x (worker u64, dp_rank u32), renumbered from 0 on restore
//!   edges    n u32, then per edge, parents first: parent u32 (0 = the root, i = the i-th edge
//!            listed), len u32, len x key u64 [, len x stamp u64 when capped], full holders
//!            (n u32, n x slot u32), partial holders (n u32, n x (slot u32, cutoff u32))
//!   pairs    per listed slot: n u32, then n x (engine key u64, block u32) in events mode,
//!            n x (block u32, time f64) in approximate mode; a block is named by its ordinal in
//!            the edge listing (the edges' blocks one after another)
//! Version 1 (the per-block tree) is still read: snapshot/v1.rs.
//! Counters are not part of it: they describe the replica that counted them.
//! Restore checks everything (never panics) and refuses what does not describe a valid index.

use std::cmp::Reverse;

use rustc_hash::FxHashMap;
use xxhash_rust::xxh3::xxh3_64;

use super::approx::Due;
use super::tree::{BlockId, EdgeId, ROOT};
use super::workers::{Slot, WorkerKey};
use super::{IndexerConfig, IndexerMode, Keying, ModeState, RadixIndexer};
use crate::hash::Window;

mod v1;

const MAGIC: &[u8; 8] = b"KVRTIDX\0";
pub const SNAPSHOT_VERSION: u32 = 2;
const HEADER: usize = 8 + 4 + 8;
const MAX_WORKER_ID: u64 = (1 << 53) - 1;

impl RadixIndexer {
  pub fn snapshot(&self) -> Vec<u8> {
    let capped = self.lru_tick().is_some();
    let per_block = if capped { 16 } else { 8 };
    let mut w = Vec::with_capacity(64 + self.tree.len() * per_block + self.tree.edge_count() * 24 + self.slots.total_held() as usize * 12);
    w.extend_from_slice(MAGIC);
    put32(&mut w, SNAPSHOT_VERSION);
    put64(&mut w, 0); // payload length, patched below
    put_config(&mut w, &self.cfg, self.lru_tick());
    w.push(self.cfg.window.is_eagle() as u8);
    w.push(matches!(self.keying, Keying::Chained) as u8);

    let slots: Vec<(Slot, WorkerKey)> = self.slots.iter().collect();
    let mut slot_index = vec![u32::MAX; self.slots.bound()];
    put32(&mut w, slots.len() as u32);
    for (i, &(slot, key)) in slots.iter().enumerate() {
      slot_index[slot as usize] = i as u32;
      put64(&mut w, key.worker);
      put32(&mut w, key.dp_rank);
    }

    let order = self.tree.topological_order();
    let mut edge_index = vec![0u32; self.tree.edges.len()];
    // Ordinal of each block in the listing.
    let mut ordinal = vec![0u32; self.tree.block_bound()];
    let mut next = 0u32;
    let mut holders = Vec::new();
    put32(&mut w, order.len() as u32);
    for (i, &e) in order.iter().enumerate() {
      edge_index[e as usize] = i as u32 + 1;
      let edge = self.tree.edge(e);
      put32(&mut w, edge_index[self.tree.parent_edge(e) as usize]);
      put32(&mut w, edge.len());
      for &k in &edge.keys {
        put64(&mut w, k);
      }
      if let ModeState::Events(ev) = &self.state {
        if let Some(lru) = &ev.lru {
          for &b in &edge.blocks {
            put64(&mut w, lru.stamp(b));
          }
        }
      }
      for &b in &edge.blocks {
        ordinal[b as usize] = next;
        next += 1;
      }
      holders.clear();
      self.tree.holders_into(e, &mut holders);
      let full = holders.iter().filter(|h| h.1 == edge.len()).count();
      put32(&mut w, full as u32);
      for &(s, _) in holders.iter().filter(|h| h.1 == edge.len()) {
        put32(&mut w, slot_index[s as usize]);
      }
      put32(&mut w, (holders.len() - full) as u32);
      for &(s, c) in holders.iter().filter(|h| h.1 < edge.len()) {
        put32(&mut w, slot_index[s as usize]);
        put32(&mut w, c);
      }
    }

    for &(slot, _) in &slots {
      match &self.state {
        ModeState::Events(ev) => {
          let keys = &ev.keys[slot as usize];
          put32(&mut w, keys.len() as u32);
          for (engine_key, b) in keys.iter() {
            put64(&mut w, engine_key);
            put32(&mut w, ordinal[b as usize]);
          }
        }
        ModeState::Approx(ap) => {
          let times = &ap.times[slot as usize];
          put32(&mut w, times.len() as u32);
          for (b, time) in times.iter() {
            put32(&mut w, ordinal[b as usize]);
            put64(&mut w, time.to_bits());
          }
        }
      }
    }
    seal(w)
  }

  fn lru_tick(&self) -> Option<u64> {
    match &self.state {
      ModeState::Events(ev) => ev.lru.as_ref().map(|l| l.tick()),
      ModeState::Approx(_) => None,
    }
  }

  /// Loads a snapshot of version 2 or 1.
  pub fn restore(bytes: &[u8]) -> Result<Self, String> {
    let (version, payload) = check_envelope(bytes)?;
    let mut r = Reader { buf: payload, at: 0 };
    let ix = match version {
      1 => v1::restore(&mut r)?,
      _ => restore_v2(&mut r)?,
    };
    if r.at != r.buf.len() {
      return Err("corrupt snapshot: trailing bytes".into());
    }
    Ok(ix)
  }

  /// Adds `slot` as a holder of block `b` while restoring (blocks of an edge in order; a block
  /// past the slot's prefix splits the edge so the slot holds a prefix of the new tail).
  pub(super) fn restore_hold(&mut self, slot: Slot, b: BlockId) -> bool {
    let (mut e, mut p) = self.tree.locate(b);
    let cov = self.tree.coverage(e, slot);
    if p < cov {
      return false;
    }
    if p > cov {
      e = self.tree.split(e, p);
      p = 0;
    }
    self.tree.set_coverage(e, slot, p + 1);
    self.slots.count_added(slot, 1);
    true
  }

  /// The checks every restored index passes, then the LRU queue and the cap.
  pub(super) fn finish_restore(&mut self, slots: &[Slot]) -> Result<(), String> {
    for &slot in slots {
      if self.slots.held(slot) == 0 {
        return Err("corrupt snapshot: a worker listed without blocks".into());
      }
    }
    for id in 1..self.tree.edges.len() as EdgeId {
      let edge = self.tree.edge(id);
      if edge.is_free() {
        continue;
      }
      if edge.children == 0 && self.tree.max_coverage(id) < edge.len() {
        return Err("corrupt snapshot: a block no worker holds".into());
      }
    }
    let pairs = match &self.state {
      ModeState::Events(ev) => ev.keys.iter().map(|k| k.len() as u64).sum::<u64>() - ev.extra_refs.values().map(|&n| n as u64).sum::<u64>(),
      ModeState::Approx(ap) => ap.times.iter().map(|t| t.len() as u64).sum(),
    };
    if pairs != self.slots.total_held() {
      return Err("corrupt snapshot: a held block without its engine key or routing time".into());
    }
    if let ModeState::Events(ev) = &mut self.state {
      if let Some(lru) = &mut ev.lru {
        for id in 1..self.tree.edges.len() as EdgeId {
          let edge = self.tree.edge(id);
          if !edge.is_free() && edge.children == 0 {
            lru.on_leaf(edge.tail());
          }
        }
      }
    }
    self.enforce_cap();
    Ok(())
  }

  /// Records engine key `engine_key` of `slot` naming held block `b` while restoring.
  pub(super) fn restore_engine_key(&mut self, slot: Slot, engine_key: u64, b: BlockId) -> Result<(), String> {
    if !self.tree.holds(b, slot) {
      return Err("corrupt snapshot: an engine key names a block its worker does not hold".into());
    }
    let ModeState::Events(ev) = &mut self.state else { unreachable!("events mode") };
    if ev.lookup(Some(slot), engine_key).is_some() {
      return Err("corrupt snapshot: an engine key is listed twice".into());
    }
    ev.slot_keys(slot).insert(engine_key, b);
    Ok(())
  }

  /// Counts the engine keys beyond the first naming one block of a slot.
  pub(super) fn restore_extra_refs(&mut self) {
    let ModeState::Events(ev) = &mut self.state else { return };
    let mut per_pair: FxHashMap<(Slot, BlockId), u32> = FxHashMap::default();
    for (slot, keys) in ev.keys.iter().enumerate() {
      for (_, b) in keys.iter() {
        *per_pair.entry((slot as Slot, b)).or_default() += 1;
      }
    }
    ev.extra_refs = per_pair.into_iter().filter(|&(_, n)| n > 1).map(|(k, n)| (k, n - 1)).collect();
  }

  /// Records the routing time of held pair (slot, b) while restoring.
  pub(super) fn restore_time(&mut self, slot: Slot, b: BlockId, time: f64) -> Result<(), String> {
    if !time.is_finite() || !self.tree.holds(b, slot) {
      return Err("corrupt snapshot: a bad routing time or one for a block not held".into());
    }
    let depth = self.tree.depth_of(b) + 1;
    let ModeState::Approx(ap) = &mut self.state else { unreachable!("approximate mode") };
    if ap.slot_times(slot).get(b).is_some() {
      return Err("corrupt snapshot: a repeated routing time".into());
    }
    ap.slot_times(slot).set(b, time);
    ap.due.push(Reverse(Due { time, depth, slot, node: b }));
    Ok(())
  }
}

fn restore_v2(r: &mut Reader) -> Result<RadixIndexer, String> {
  let (mut cfg, tick) = read_config(r)?;
  cfg.window = match r.u8()? {
    0 => Window::Plain,
    1 => Window::Eagle,
    _ => return Err("corrupt snapshot: bad window flag".into()),
  };
  let keying = match r.u8()? {
    0 => Keying::Local,
    1 => Keying::Chained,
    _ => return Err("corrupt snapshot: bad keying flag".into()),
  };
  let mut ix = RadixIndexer::try_new(cfg)?;
  ix.keying = keying;
  let capped = ix.set_lru_tick(tick);
  let slots = read_slots(r, &mut ix)?;

  let n_edges = r.count(8)?;
  let mut edges: Vec<EdgeId> = Vec::with_capacity(n_edges + 1);
  edges.push(ROOT);
  let mut blocks: Vec<BlockId> = Vec::new();
  let mut ids = Vec::new();
  ix.tree.reserve(n_edges);
  for i in 0..n_edges {
    let parent = r.u32()? as usize;
    if parent > i {
      return Err("corrupt snapshot: an edge is listed before its parent".into());
    }
    let len = r.count(if capped { 16 } else { 8 })?;
    if len == 0 {
      return Err("corrupt snapshot: an empty edge".into());
    }
    let keys: Vec<u64> = (0..len).map(|_| r.u64()).collect::<Result<_, _>>()?;
    if ix.tree.child_of_edge(edges[parent], keys[0]).is_some() {
      return Err("corrupt snapshot: two children of one edge start alike".into());
    }
    if !ix.tree.has_room(len) {
      return Err("corrupt snapshot: too many blocks".into());
    }
    ids.clear();
    let e = ix.tree.new_edge(edges[parent], &keys, &mut ids);
    if capped {
      for &b in &ids {
        let stamp = r.u64()?;
        if let ModeState::Events(ev) = &mut ix.state {
          ev.lru.as_mut().expect("capped").touch(b, stamp);
        }
      }
    }
    blocks.extend_from_slice(&ids);
    edges.push(e);
    let full = r.count(4)?;
    for _ in 0..full {
      let slot = slot_at(&slots, r.u32()?)?;
      if ix.tree.coverage(e, slot) != 0 {
        return Err("corrupt snapshot: a holder is listed twice".into());
      }
      ix.tree.set_coverage(e, slot, len as u32);
      ix.slots.count_added(slot, len as u64);
    }
    let partial = r.count(8)?;
    for _ in 0..partial {
      let slot = slot_at(&slots, r.u32()?)?;
      let cutoff = r.u32()?;
      if cutoff == 0 || cutoff as usize >= len || ix.tree.coverage(e, slot) != 0 {
        return Err("corrupt snapshot: a bad or repeated holder cutoff".into());
      }
      ix.tree.set_coverage(e, slot, cutoff);
      ix.slots.count_added(slot, cutoff as u64);
    }
  }
  let block_at = |ordinal: u32| -> Result<BlockId, String> {
    blocks.get(ordinal as usize).copied().ok_or_else(|| "corrupt snapshot: a block that does not exist".to_string())
  };
  for &slot in &slots {
    let n = r.count(12)?;
    // The pairs come in the source table's order (by hash): inserted into a table still growing,
    // they would pile up in its first groups (probe chains growing with the table: 2.4 s for 1M
    // blocks instead of 0.3 s). Sized for all of them first, every key lands near its home.
    if let ModeState::Events(ev) = &mut ix.state {
      ev.slot_keys(slot).reserve(n);
    }
    for _ in 0..n {
      match ix.mode() {
        IndexerMode::Events => {
          let engine_key = r.u64()?;
          let b = block_at(r.u32()?)?;
          ix.restore_engine_key(slot, engine_key, b)?;
        }
        IndexerMode::Approximate => {
          let b = block_at(r.u32()?)?;
          let time = f64::from_bits(r.u64()?);
          ix.restore_time(slot, b, time)?;
        }
      }
    }
  }
  ix.restore_extra_refs();
  ix.finish_restore(&slots)?;
  Ok(ix)
}

fn slot_at(slots: &[Slot], i: u32) -> Result<Slot, String> {
  slots.get(i as usize).copied().ok_or_else(|| "corrupt snapshot: a holder that is not a listed worker".to_string())
}

impl RadixIndexer {
  /// Sets the LRU tick of a capped index; false when uncapped.
  fn set_lru_tick(&mut self, tick: u64) -> bool {
    match &mut self.state {
      ModeState::Events(ev) => ev.lru.as_mut().map(|l| l.set_tick(tick)).is_some(),
      ModeState::Approx(_) => false,
    }
  }
}

fn put_config(w: &mut Vec<u8>, cfg: &IndexerConfig, tick: Option<u64>) {
  put32(w, cfg.block_size);
  w.push(matches!(cfg.mode, IndexerMode::Approximate) as u8);
  w.push(cfg.max_blocks.is_some() as u8);
  put64(w, cfg.max_blocks.unwrap_or(0));
  put64(w, cfg.ttl_ms.to_bits());
  put64(w, cfg.approx_max_blocks);
  put64(w, cfg.prune_fraction.to_bits());
  put64(w, tick.unwrap_or(0));
}

/// The config fields both versions share, validated, and the LRU tick.
fn read_config(r: &mut Reader) -> Result<(IndexerConfig, u64), String> {
  let block_size = r.u32()?;
  let mode = match r.u8()? {
    0 => IndexerMode::Events,
    1 => IndexerMode::Approximate,
    m => return Err(format!("corrupt snapshot: unknown mode {m}")),
  };
  let has_max = r.u8()?;
  let max_blocks = r.u64()?;
  let cfg = IndexerConfig {
    block_size,
    mode,
    max_blocks: match has_max {
      0 => None,
      1 => Some(max_blocks),
      _ => return Err("corrupt snapshot: bad cap flag".into()),
    },
    ttl_ms: f64::from_bits(r.u64()?),
    approx_max_blocks: r.u64()?,
    prune_fraction: f64::from_bits(r.u64()?),
    window: Window::Plain,
  };
  cfg.validate().map_err(|e| format!("corrupt snapshot: {e}"))?;
  let tick = r.u64()?;
  Ok((cfg, tick))
}

/// The slot list, interned in order.
fn read_slots(r: &mut Reader, ix: &mut RadixIndexer) -> Result<Vec<Slot>, String> {
  let n = r.count(12)?;
  let mut slots = Vec::with_capacity(n);
  for _ in 0..n {
    let key = WorkerKey { worker: r.u64()?, dp_rank: r.u32()? };
    if key.worker > MAX_WORKER_ID || key.dp_rank > 0xffff {
      return Err("corrupt snapshot: worker id or rank out of range".into());
    }
    if ix.slots.get(key).is_some() {
      return Err("corrupt snapshot: a worker is listed twice".into());
    }
    slots.push(ix.slots.intern(key));
  }
  Ok(slots)
}

fn seal(mut w: Vec<u8>) -> Vec<u8> {
  let payload = (w.len() - HEADER) as u64;
  w[12..20].copy_from_slice(&payload.to_le_bytes());
  let sum = xxh3_64(&w);
  put64(&mut w, sum);
  w
}

/// Checks magic, version, length and checksum; returns the version and the payload.
fn check_envelope(bytes: &[u8]) -> Result<(u32, &[u8]), String> {
  if bytes.len() < HEADER + 8 || &bytes[..8] != MAGIC {
    if bytes.len() >= 8 && &bytes[..8] != MAGIC {
      return Err("not a kvroute indexer snapshot (bad magic)".into());
    }
    return Err(format!("truncated snapshot: {} bytes", bytes.len()));
  }
  let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
  if version != 1 && version != SNAPSHOT_VERSION {
    return Err(format!("unsupported snapshot version {version} (this build reads versions 1 and {SNAPSHOT_VERSION})"));
  }
  let payload = u64::from_le_bytes(bytes[12..20].try_into().expect("8 bytes"));
  let expected = (HEADER as u64).checked_add(payload).and_then(|n| n.checked_add(8));
  if expected != Some(bytes.len() as u64) {
    return Err(format!("truncated snapshot: {} bytes, the header announces {}", bytes.len(), expected.map_or("more".into(), |n| n.to_string())));
  }
  let (body, sum) = bytes.split_at(bytes.len() - 8);
  if xxh3_64(body) != u64::from_le_bytes(sum.try_into().expect("8 bytes")) {
    return Err("corrupt snapshot: checksum mismatch".into());
  }
  Ok((version, &body[HEADER..]))
}

fn put32(w: &mut Vec<u8>, v: u32) {
  w.extend_from_slice(&v.to_le_bytes());
}

fn put64(w: &mut Vec<u8>, v: u64) {
  w.extend_from_slice(&v.to_le_bytes());
}

pub(super) struct Reader<'a> {
  buf: &'a [u8],
  at: usize,
}

impl Reader<'_> {
  fn take(&mut self, n: usize) -> Result<&[u8], String> {
    let end = self.at.checked_add(n).filter(|&e| e <= self.buf.len()).ok_or("corrupt snapshot: truncated payload")?;
    let s = &self.buf[self.at..end];
    self.at = end;
    Ok(s)
  }
  fn u8(&mut self) -> Result<u8, String> {
    Ok(self.take(1)?[0])
  }
  fn u32(&mut self) -> Result<u32, String> {
    Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
  }
  fn u64(&mut self) -> Result<u64, String> {
    Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
  }
  /// A record count, refused when its records cannot fit in what is left (no huge allocation).
  fn count(&mut self, record_bytes: usize) -> Result<usize, String> {
    let n = self.u32()? as usize;
    if n.saturating_mul(record_bytes) > self.buf.len() - self.at {
      return Err("corrupt snapshot: a count larger than the data".into());
    }
    Ok(n)
  }
}

#[cfg(test)]
mod tests;
