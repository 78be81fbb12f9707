//! Version 1 snapshots, written by the per-block tree: config (without window), slots, then
//! nodes (parent position u32, chained key u64 [, stamp u64 when capped]), parents first, then
//! per slot its engine keys (key u64, node position u32) or routing times (node position u32,
//! time f64). Nodes kept only their chained key, not the local hash, so the restored index keys
//! its blocks by the chain (`Keying::Chained`): it answers exactly as the index that wrote it.

use super::{read_config, read_slots, Reader};
use crate::indexer::tree::{BlockId, ROOT, ROOT_BLOCK};
use crate::indexer::workers::Slot;
use crate::indexer::{IndexerMode, Keying, ModeState, RadixIndexer};

pub(super) fn restore(r: &mut Reader) -> Result<RadixIndexer, String> {
  let (cfg, tick) = read_config(r)?;
  let mut ix = RadixIndexer::try_new(cfg)?;
  ix.keying = Keying::Chained;
  let capped = ix.set_lru_tick(tick);
  let slots = read_slots(r, &mut ix)?;

  let n_nodes = r.count(if capped { 20 } else { 12 })?;
  let mut blocks: Vec<BlockId> = Vec::with_capacity(n_nodes + 1);
  blocks.push(ROOT_BLOCK);
  let mut ids = Vec::new();
  for i in 0..n_nodes {
    let parent = r.u32()? as usize;
    let key = r.u64()?;
    if parent > i {
      return Err("corrupt snapshot: a node is listed before its parent".into());
    }
    let id = attach(&mut ix, blocks[parent], key, &mut ids)?;
    if capped {
      let stamp = r.u64()?;
      if let ModeState::Events(ev) = &mut ix.state {
        ev.lru.as_mut().expect("capped").touch(id, stamp);
      }
    }
    blocks.push(id);
  }

  let block_at = |position: u32| -> Result<BlockId, String> {
    match position as usize {
      0 => Err("corrupt snapshot: a worker holds the root".into()),
      p if p < blocks.len() => Ok(blocks[p]),
      _ => Err("corrupt snapshot: a block names a node that does not exist".into()),
    }
  };
  for &slot in &slots {
    let n = r.count(12)?;
    // (position, engine key or time bits): held in path order, so each edge is held from its start.
    let mut pairs: Vec<(u32, u64)> = Vec::with_capacity(n);
    for _ in 0..n {
      match ix.mode() {
        IndexerMode::Events => {
          let engine_key = r.u64()?;
          pairs.push((r.u32()?, engine_key));
        }
        IndexerMode::Approximate => {
          let position = r.u32()?;
          pairs.push((position, r.u64()?));
        }
      }
    }
    pairs.sort_unstable();
    for &(position, value) in &pairs {
      let b = block_at(position)?;
      let fresh = hold(&mut ix, slot, b);
      match ix.mode() {
        IndexerMode::Events => ix.restore_engine_key(slot, value, b)?,
        IndexerMode::Approximate => {
          if !fresh {
            return Err("corrupt snapshot: a bad or repeated routing time".into());
          }
          ix.restore_time(slot, b, f64::from_bits(value))?;
        }
      }
    }
  }
  ix.restore_extra_refs();
  ix.finish_restore(&slots)?;
  Ok(ix)
}

/// Adds a block with `key` as the child of block `parent`; keys were unique in version 1.
fn attach(ix: &mut RadixIndexer, parent: BlockId, key: u64, ids: &mut Vec<BlockId>) -> Result<BlockId, String> {
  if !ix.tree.has_room(1) {
    return Err("corrupt snapshot: too many nodes".into());
  }
  let tree = &mut ix.tree;
  let edge = if parent == ROOT_BLOCK {
    ROOT
  } else {
    let (e, p) = tree.locate(parent);
    if p + 1 < tree.edge(e).len() {
      tree.split(e, p + 1);
    }
    e
  };
  if tree.child_of_edge(edge, key).is_some() {
    return Err("corrupt snapshot: two nodes share a key".into());
  }
  ids.clear();
  if edge != ROOT && tree.edge(edge).children == 0 {
    tree.extend(edge, &[key], ids);
  } else {
    tree.new_edge(edge, &[key], ids);
  }
  Ok(ids[0])
}

/// Makes `slot` a holder of `b` (false when it already was).
fn hold(ix: &mut RadixIndexer, slot: Slot, b: BlockId) -> bool {
  ix.restore_hold(slot, b)
}
