//! Random payloads, valid and damaged, in every encoding (batches as arrays or maps, events
//! positional or as maps, fields of the wrong types, bytes flipped, cut or added): decoding never
//! panics, a payload that is not a batch applies nothing, and a batch applies the same events
//! whether applied at once or one record at a time.
use super::apply::{apply_batch, apply_record, shape_of, BatchOutcome};
use super::decode::{Decoded, Record};
use crate::indexer::{IndexerConfig, IndexerMode, RadixIndexer, WorkerKey};

/// Writes one field's value of a generated event.
type FieldWriter = Box<dyn Fn(&mut G)>;

struct G {
  rng: fastrand::Rng,
  out: Vec<u8>,
}

impl G {
  fn arr(&mut self, n: usize) {
    if n < 16 && self.rng.u8(..) < 230 {
      self.out.push(0x90 | n as u8);
    } else if self.rng.bool() {
      self.out.push(0xdc);
      self.out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
      self.out.push(0xdd);
      self.out.extend_from_slice(&(n as u32).to_be_bytes());
    }
  }
  fn map(&mut self, n: usize) {
    if n < 16 {
      self.out.push(0x80 | n as u8);
    } else {
      self.out.push(0xde);
      self.out.extend_from_slice(&(n as u16).to_be_bytes());
    }
  }
  fn uint(&mut self, v: u64) {
    match self.rng.u8(..4) {
      0 if v < 0x80 => self.out.push(v as u8),
      1 if v < 0x100 => self.out.extend_from_slice(&[0xcc, v as u8]),
      2 if v < 0x10000 => {
        self.out.push(0xcd);
        self.out.extend_from_slice(&(v as u16).to_be_bytes());
      }
      _ if v < 0x1_0000_0000 && self.rng.bool() => {
        self.out.push(0xce);
        self.out.extend_from_slice(&(v as u32).to_be_bytes());
      }
      _ => {
        self.out.push(0xcf);
        self.out.extend_from_slice(&v.to_be_bytes());
      }
    }
  }
  fn str(&mut self, s: &str) {
    if s.len() < 32 {
      self.out.push(0xa0 | s.len() as u8);
    } else {
      self.out.push(0xd9);
      self.out.push(s.len() as u8);
    }
    self.out.extend_from_slice(s.as_bytes());
  }
  fn junk(&mut self) {
    match self.rng.u8(..8) {
      0 => self.out.push(0xc0),
      1 => self.str("x"),
      2 => self.out.extend_from_slice(&[0xd3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe]),
      3 => self.out.extend_from_slice(&[0xcb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0]),
      4 => self.out.extend_from_slice(&[0x92, 0x01, 0xa1, b'z']),
      5 => self.out.extend_from_slice(&[0xc3]),
      6 => self.out.extend_from_slice(&[0xa2, 0xff, 0xfe]), // not UTF-8
      _ => self.out.extend_from_slice(&[0x81, 0x01, 0x02]),
    }
  }
  fn hash(&mut self, h: u64) {
    match self.rng.u8(..12) {
      0 => self.junk(),
      1 => {
        let n = self.rng.usize(0..12);
        self.out.extend_from_slice(&[0xc4, n as u8]);
        for i in 0..n {
          self.out.push((h >> (i % 8 * 8)) as u8);
        }
      }
      2 => {
        self.out.push(0xd3);
        self.out.extend_from_slice(&h.to_be_bytes());
      }
      _ => self.uint(h),
    }
  }
  fn bad(&mut self) -> bool {
    self.rng.u8(..40) == 0
  }
  fn event(&mut self, known: &mut Vec<u64>) {
    let kind = self.rng.u8(..12);
    let map = self.rng.bool();
    let tag = match kind {
      0..=5 => "BlockStored",
      6..=8 => "BlockRemoved",
      9 => "AllBlocksCleared",
      _ => "Foo",
    };
    if self.rng.u8(..60) == 0 {
      self.junk();
      return;
    }
    let n = self.rng.usize(0..4);
    let hashes: Vec<u64> =
      (0..n).map(|_| if self.rng.u8(..4) == 0 && !known.is_empty() { known[self.rng.usize(..known.len())] } else { self.rng.u64(1..60) }).collect();
    let bs = if self.rng.u8(..15) == 0 { 8 } else { 4 };
    let tokens = if self.rng.u8(..15) == 0 { n * 4 + 1 } else { n * 4 };
    let mut fields: Vec<(&str, FieldWriter)> = Vec::new();
    let hs = hashes.clone();
    fields.push((
      "block_hashes",
      Box::new(move |g: &mut G| {
        if g.bad() {
          g.junk();
          return;
        }
        g.arr(hs.len());
        for &h in &hs {
          g.hash(h);
        }
      }),
    ));
    let parent = if self.rng.bool() && !known.is_empty() { Some(known[self.rng.usize(..known.len())]) } else { None };
    fields.push((
      "parent_block_hash",
      Box::new(move |g: &mut G| match parent {
        _ if g.bad() => g.junk(),
        Some(p) => g.hash(p),
        None => g.out.push(0xc0),
      }),
    ));
    fields.push((
      "token_ids",
      Box::new(move |g: &mut G| {
        if g.bad() {
          g.junk();
          return;
        }
        g.arr(tokens);
        for _ in 0..tokens {
          if g.rng.u16(..300) == 0 {
            g.junk();
          } else {
            let v = g.rng.u64(0..4);
            g.uint(v);
          }
        }
      }),
    ));
    fields.push(("block_size", Box::new(move |g: &mut G| if g.bad() { g.junk() } else { g.uint(bs) })));
    fields.push(("lora_id", Box::new(|g: &mut G| if g.bad() { g.junk() } else { g.out.push(0xc0) })));
    let medium = ["GPU", "gpu", "CPU", "device", "disk"][self.rng.usize(0..5).min(if self.rng.u8(..4) == 0 { 4 } else { 0 })];
    fields.push((
      "medium",
      Box::new(move |g: &mut G| {
        if g.bad() {
          g.junk()
        } else if g.rng.u8(..10) == 0 {
          g.out.push(0xc0)
        } else {
          g.str(medium)
        }
      }),
    ));
    fields.push((
      "lora_name",
      Box::new(|g: &mut G| match g.rng.u8(..10) {
        0 => g.str("L"),
        1 => g.str(""),
        2 if g.bad() => g.junk(),
        _ => g.out.push(0xc0),
      }),
    ));
    let digest = "00000000000000ff".to_string() + &"a".repeat(48);
    fields.push((
      "extra_keys",
      Box::new(move |g: &mut G| match g.rng.u8(..6) {
        0 => {
          g.arr(n);
          for _ in 0..n {
            match g.rng.u8(..4) {
              0 => g.out.push(0xc0),
              1 => {
                g.arr(1);
                g.str(&digest);
              }
              2 => {
                g.arr(2);
                g.arr(2);
                g.str(&digest);
                g.uint(3);
                g.str("salt");
              }
              _ => g.junk(),
            }
          }
        }
        1 if g.bad() => g.junk(),
        _ => g.out.push(0xc0),
      }),
    ));
    fields.push((
      "group_idx",
      Box::new(|g: &mut G| {
        if g.rng.u8(..8) == 0 {
          g.uint(1)
        } else if g.bad() {
          g.junk()
        } else {
          g.uint(0)
        }
      }),
    ));
    fields.push((
      "kv_cache_spec_kind",
      Box::new(|g: &mut G| {
        if g.rng.u8(..8) == 0 {
          g.str("mamba")
        } else if g.bad() {
          g.junk()
        } else {
          g.str("full_attention")
        }
      }),
    ));
    if kind <= 5 {
      known.extend_from_slice(&hashes);
    }
    if map {
      let order: Vec<usize> = {
        let mut o: Vec<usize> = (0..fields.len()).filter(|_| self.rng.u8(..10) != 0).collect();
        if self.rng.u8(..4) == 0 {
          self.rng.shuffle(&mut o);
        }
        o
      };
      let with_type = self.rng.u8(..30) != 0;
      let extra = self.rng.u8(..10) == 0;
      self.map(order.len() + with_type as usize + extra as usize);
      let type_at = self.rng.usize(0..=order.len());
      for (i, &f) in order.iter().enumerate() {
        if with_type && i == type_at {
          self.str("type");
          if self.bad() {
            self.junk()
          } else {
            self.str(tag)
          }
        }
        self.str(fields[f].0);
        (fields[f].1)(self);
      }
      if with_type && type_at == order.len() {
        self.str("type");
        self.str(tag);
      }
      if extra {
        self.uint(5);
        self.str("other key type");
      }
    } else {
      let positions: &[usize] = match kind {
        0..=5 => &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
        6..=8 => &[0, 5, 8, 9],
        _ => &[],
      };
      let take = if self.rng.u8(..4) == 0 { self.rng.usize(0..=positions.len()) } else { positions.len().min(7) };
      let trailing = self.rng.u8(..10) == 0;
      self.arr(1 + take + trailing as usize);
      if self.rng.u8(..60) == 0 {
        self.uint(3);
      } else {
        self.str(tag);
      }
      for &f in &positions[..take] {
        (fields[f].1)(self);
      }
      if trailing {
        self.junk();
      }
    }
  }
  fn batch(&mut self, known: &mut Vec<u64>) -> Vec<u8> {
    self.out.clear();
    let events = self.rng.usize(0..5);
    let ts = |g: &mut G| match g.rng.u8(..20) {
      0 => g.str("x"),
      1 => g.out.extend_from_slice(&[0xcb, 0x7f, 0xf0, 0, 0, 0, 0, 0, 0]),
      _ => g.uint(1_700_000_000),
    };
    if self.rng.u8(..4) == 0 {
      let n = 1 + self.rng.usize(0..3);
      self.map(n + 1);
      let dp_key = ["dp_rank", "data_parallel_rank", "other"][self.rng.usize(0..3)];
      for i in 0..=n {
        match i {
          0 => {
            self.str("events");
            self.arr(events);
            for _ in 0..events {
              self.event(known);
            }
          }
          1 => {
            self.str("ts");
            ts(self);
          }
          _ => {
            self.str(dp_key);
            if self.rng.u8(..10) == 0 {
              self.uint(70000)
            } else {
              self.uint(2)
            }
          }
        }
      }
    } else {
      let n = 2 + self.rng.usize(0..3);
      self.arr(n);
      ts(self);
      if self.rng.u8(..50) == 0 {
        self.junk();
      } else {
        self.arr(events);
        for _ in 0..events {
          self.event(known);
        }
      }
      for _ in 2..n {
        if self.rng.bool() {
          self.uint(1)
        } else {
          self.junk()
        }
      }
    }
    let mut out = std::mem::take(&mut self.out);
    match self.rng.u8(..10) {
      0 if !out.is_empty() => {
        let i = self.rng.usize(..out.len());
        out[i] = self.rng.u8(..);
      }
      1 => {
        let n = self.rng.usize(0..=out.len());
        out.truncate(n);
      }
      2 => out.push(self.rng.u8(..)),
      _ => {}
    }
    out
  }
}

#[test]
fn a_batch_applies_whole_or_not_at_all() {
  let mut g = G { rng: fastrand::Rng::with_seed(11), out: Vec::new() };
  let mut d = Decoded::default();
  let key = WorkerKey { worker: 1, dp_rank: 0 };
  let (mut refused, mut applied) = (0, 0);
  for _ in 0..600 {
    let mut ix = RadixIndexer::new(IndexerConfig::new(4, IndexerMode::Events));
    let mut one_by_one = RadixIndexer::new(IndexerConfig::new(4, IndexerMode::Events));
    let mut known = Vec::new();
    for _ in 0..8 {
      let p = g.batch(&mut known);
      let (before, counted) = (ix.snapshot(), ix.stats().counters);
      match apply_batch(&mut ix, key, &p, &mut d) {
        Err(e) => {
          refused += 1;
          assert!(e.path.is_empty() || ["ts", "events", "data_parallel_rank"].contains(&e.path.as_str()), "{e}");
          assert!(ix.snapshot() == before && ix.stats().counters == counted, "a refused payload changed the index");
          assert!(d.decode(&p, shape_of(&one_by_one)).is_err());
        }
        Ok(out) => {
          applied += out.applied();
          let empty = d.records.iter().filter(|r| matches!(r, Record::Empty)).count() as u32;
          let r = out.refused;
          let media: u32 = out.other_media.iter().map(|m| m.stored + m.removed).sum();
          let refused_events =
            r.block_size + r.token_count + r.unknown_parent + r.duplicate_hash + r.self_parent + r.hash_collision + r.index_full + r.malformed + r.invalid;
          assert_eq!(out.applied() + out.unknown_types + out.other_groups + media + refused_events + empty, out.events, "every event is counted once");
          assert_eq!(out.first_invalid.is_some(), r.invalid > 0);
          let mut each = BatchOutcome::of(&d);
          for i in 0..d.records.len() {
            apply_record(&mut one_by_one, key, &d, i, &mut each);
          }
          assert_eq!(each, out);
        }
      }
      assert!(ix.snapshot() == one_by_one.snapshot());
    }
  }
  assert!(refused > 1000 && applied > 1000, "the payloads exercise both outcomes ({refused} refused, {applied} events applied)");
}
