//! A full, versioned dump of the index that another router replica can load.
//!
//! Layout (little-endian): magic "KVRTIDX\0", version u32, payload length u64, payload,
//! XXH3-64 of everything before it. Payload:
//!   config   block_size u32, mode u8, has_max u8, max_blocks u64, ttl_ms f64,
//!            approx_max_blocks u64, prune_fraction f64, lru tick u64
//!   slots    n u32, then n x (worker u64, dp_rank u32), renumbered from 0 on restore
//!   nodes    n u32, then n x (parent u32, key u64 [, stamp u64 when capped]); parents come first
//!            and are named by position: 0 = the root, i = the i-th node of the list
//!   pairs    per listed slot: n u32, then n x (engine key u64, node u32) in events mode,
//!            n x (node u32, time f64) in approximate mode
//! Counters are not part of it: they describe the replica that counted them.
//! Restore checks everything (never panics) and refuses what does not describe a valid index.

use std::cmp::Reverse;

use xxhash_rust::xxh3::xxh3_64;

use super::approx::Due;
use super::tree::{NodeId, ROOT};
use super::workers::{Slot, WorkerKey};
use super::{IndexerConfig, IndexerMode, ModeState, RadixIndexer};

const MAGIC: &[u8; 8] = b"KVRTIDX\0";
pub const SNAPSHOT_VERSION: u32 = 1;
const HEADER: usize = 8 + 4 + 8;
const MAX_WORKER_ID: u64 = (1 << 53) - 1;

impl RadixIndexer {
  pub fn snapshot(&self) -> Vec<u8> {
    let mut w = Vec::with_capacity(64 + self.tree.len() * 20 + self.slots.total_held() as usize * 12);
    w.extend_from_slice(MAGIC);
    w.extend_from_slice(&SNAPSHOT_VERSION.to_le_bytes());
    w.extend_from_slice(&0u64.to_le_bytes()); // payload length, patched below
    let cfg = &self.cfg;
    put32(&mut w, cfg.block_size);
    w.push(matches!(cfg.mode, IndexerMode::Approximate) as u8);
    w.push(cfg.max_blocks.is_some() as u8);
    put64(&mut w, cfg.max_blocks.unwrap_or(0));
    put64(&mut w, cfg.ttl_ms.to_bits());
    put64(&mut w, cfg.approx_max_blocks);
    put64(&mut w, cfg.prune_fraction.to_bits());
    let lru = match &self.state {
      ModeState::Events(ev) => ev.lru.as_ref(),
      ModeState::Approx(_) => None,
    };
    put64(&mut w, lru.map_or(0, |l| l.tick()));

    let slots: Vec<(Slot, WorkerKey)> = self.slots.iter().collect();
    put32(&mut w, slots.len() as u32);
    for &(_, key) in &slots {
      put64(&mut w, key.worker);
      put32(&mut w, key.dp_rank);
    }

    let order = self.tree.topological_order();
    let mut position = vec![0u32; self.tree.id_bound()];
    put32(&mut w, order.len() as u32);
    for (i, &id) in order.iter().enumerate() {
      position[id as usize] = i as u32 + 1;
      let node = self.tree.node(id);
      put32(&mut w, position[node.parent as usize]);
      put64(&mut w, node.key);
      if let Some(lru) = lru {
        put64(&mut w, lru.stamp(id));
      }
    }

    for &(slot, _) in &slots {
      match &self.state {
        ModeState::Events(ev) => {
          let keys = &ev.keys[slot as usize];
          put32(&mut w, keys.len() as u32);
          for (engine_key, node) in keys.iter() {
            put64(&mut w, engine_key);
            put32(&mut w, position[node as usize]);
          }
        }
        ModeState::Approx(ap) => {
          let times = &ap.times[slot as usize];
          put32(&mut w, times.len() as u32);
          for (node, time) in times.iter() {
            put32(&mut w, position[node as usize]);
            put64(&mut w, time.to_bits());
          }
        }
      }
    }
    let payload = (w.len() - HEADER) as u64;
    w[12..20].copy_from_slice(&payload.to_le_bytes());
    let sum = xxh3_64(&w);
    put64(&mut w, sum);
    w
  }

  pub fn restore(bytes: &[u8]) -> Result<Self, String> {
    let payload = check_envelope(bytes)?;
    let mut r = Reader { buf: payload, at: 0 };
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
    };
    cfg.validate().map_err(|e| format!("corrupt snapshot: {e}"))?;
    let mut ix = RadixIndexer::try_new(cfg)?;
    let tick = r.u64()?;
    let capped = match &mut ix.state {
      ModeState::Events(ev) => ev.lru.as_mut().map(|l| l.set_tick(tick)).is_some(),
      ModeState::Approx(_) => false,
    };

    let n_slots = r.count(12)?;
    let mut slots = Vec::with_capacity(n_slots);
    for _ in 0..n_slots {
      let key = WorkerKey { worker: r.u64()?, dp_rank: r.u32()? };
      if key.worker > MAX_WORKER_ID || key.dp_rank > 0xffff {
        return Err("corrupt snapshot: worker id or rank out of range".into());
      }
      if ix.slots.get(key).is_some() {
        return Err("corrupt snapshot: a worker is listed twice".into());
      }
      slots.push(ix.slots.intern(key));
    }

    let n_nodes = r.count(if capped { 20 } else { 12 })?;
    let mut ids: Vec<NodeId> = Vec::with_capacity(n_nodes + 1);
    let mut depths: Vec<u32> = Vec::with_capacity(n_nodes + 1);
    ids.push(ROOT);
    depths.push(0);
    ix.tree.reserve(n_nodes);
    for i in 0..n_nodes {
      let parent = r.u32()? as usize;
      let key = r.u64()?;
      if parent > i {
        return Err("corrupt snapshot: a node is listed before its parent".into());
      }
      if ix.tree.lookup(key).is_some() {
        return Err("corrupt snapshot: two nodes share a key".into());
      }
      let id = ix.tree.insert_child(ids[parent], key).ok_or("corrupt snapshot: too many nodes")?;
      if capped {
        let stamp = r.u64()?;
        if let ModeState::Events(ev) = &mut ix.state {
          ev.lru.as_mut().expect("capped").touch(id, stamp);
        }
      }
      ids.push(id);
      depths.push(depths[parent] + 1);
    }

    let node_at = |position: u32| -> Result<NodeId, String> {
      match position as usize {
        0 => Err("corrupt snapshot: a worker holds the root".into()),
        p if p < ids.len() => Ok(ids[p]),
        _ => Err("corrupt snapshot: a block names a node that does not exist".into()),
      }
    };
    for &slot in &slots {
      let n = r.count(12)?;
      for _ in 0..n {
        match &mut ix.state {
          ModeState::Events(ev) => {
            let engine_key = r.u64()?;
            let node = node_at(r.u32()?)?;
            if ev.lookup(Some(slot), engine_key).is_some() {
              return Err("corrupt snapshot: an engine key is listed twice".into());
            }
            ev.slot_keys(slot).insert(engine_key, node);
            if ix.tree.add_holder(node, slot) {
              ix.slots.count_added(slot);
            } else {
              *ev.extra_refs.entry((slot, node)).or_default() += 1;
            }
          }
          ModeState::Approx(ap) => {
            let position = r.u32()?;
            let node = node_at(position)?;
            let time = f64::from_bits(r.u64()?);
            if !time.is_finite() || !ix.tree.add_holder(node, slot) {
              return Err("corrupt snapshot: a bad or repeated routing time".into());
            }
            ix.slots.count_added(slot);
            ap.slot_times(slot).set(node, time);
            ap.due.push(Reverse(Due { time, depth: depths[position as usize], slot, node }));
          }
        }
      }
      if ix.slots.held(slot) == 0 {
        return Err("corrupt snapshot: a worker listed without blocks".into());
      }
    }
    if r.at != r.buf.len() {
      return Err("corrupt snapshot: trailing bytes".into());
    }
    for &id in &ids[1..] {
      if !ix.tree.has_holders(id) && ix.tree.children(id) == 0 {
        return Err("corrupt snapshot: a block no worker holds".into());
      }
    }
    if let ModeState::Events(ev) = &mut ix.state {
      if let Some(lru) = &mut ev.lru {
        for &id in &ids[1..] {
          if ix.tree.children(id) == 0 {
            lru.on_leaf(id);
          }
        }
      }
    }
    ix.enforce_cap();
    Ok(ix)
  }
}

/// Checks magic, version, length and checksum; returns the payload.
fn check_envelope(bytes: &[u8]) -> Result<&[u8], String> {
  if bytes.len() < HEADER + 8 || &bytes[..8] != MAGIC {
    if bytes.len() >= 8 && &bytes[..8] != MAGIC {
      return Err("not a kvroute indexer snapshot (bad magic)".into());
    }
    return Err(format!("truncated snapshot: {} bytes", bytes.len()));
  }
  let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
  if version != SNAPSHOT_VERSION {
    return Err(format!("unsupported snapshot version {version} (this build reads version {SNAPSHOT_VERSION})"));
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
  Ok(&body[HEADER..])
}

fn put32(w: &mut Vec<u8>, v: u32) {
  w.extend_from_slice(&v.to_le_bytes());
}

fn put64(w: &mut Vec<u8>, v: u64) {
  w.extend_from_slice(&v.to_le_bytes());
}

struct Reader<'a> {
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
