//! KV event batches (PROTOCOLS.md section 2) decoded from their msgpack bytes, every encoding the
//! engines have used: the batch as an array `[ts, events, dp_rank?]` (2 elements in old SGLang) or
//! a map `{ts, events, data_parallel_rank | dp_rank}`; each event as a tagged array (positional)
//! or a map with a "type" key (absent fields are nil). Unknown fields and trailing elements are
//! ignored, unknown event types skipped. Hashes stay exact: uint64 as is, int64 as the same 64
//! bits, bytes folded to their last 8 bytes read big-endian.
//!
//! One pass over the bytes: each event is decoded, checked against the index's shape (block size,
//! token count, medium) and its tokens hashed as it is reached, into a `Decoded` batch of records
//! that nothing has applied yet. A payload that turns out not to be a batch (invalid or truncated
//! msgpack anywhere, bytes after it, a bad header) is refused whole before any record is used; an
//! event whose fields have the wrong types becomes an `Invalid` record alone, with the path of
//! the offending field.

use super::fields::{
  hash_list, read_block_size, read_extra_keys, read_hash_list, read_optional_hash, read_optional_str, read_tokens, token_list, FieldError, Multimodal,
};
use super::msgpack::Reader;
use crate::hash::{block_seed, BlockHasher, MmBlocks, Window};
use crate::tiers::{medium_tier, LowerTier, Medium};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
  pub message: String,
  /// Where in the payload, e.g. "events[2].token_ids[5]" ("" for the whole payload).
  pub path: String,
}

impl DecodeError {
  pub(super) fn new(message: impl Into<String>, path: impl Into<String>) -> Self {
    Self { message: message.into(), path: path.into() }
  }
}

impl std::fmt::Display for DecodeError {
  fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    if self.path.is_empty() {
      write!(f, "{}", self.message)
    } else {
      write!(f, "{}: {}", self.path, self.message)
    }
  }
}

pub const MAX_DP_RANK: u64 = 0xffff;

/// Hashes a reused `Decoded` keeps room for between batches (1 MB); a larger batch's go.
const RETAINED_HASHES: usize = 1 << 17;

/// What a stored event must look like to apply to an index: its block size and hash window.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
  pub block_size: u32,
  pub window: Window,
  /// Whether events about lower tiers (CPU, disk, external) are decoded for the index to apply
  /// (false: they are counted as other media).
  pub lower_tiers: bool,
}

/// A run of `Decoded::engine` (or `local`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
  pub start: u32,
  pub end: u32,
}

impl Span {
  pub fn of<'v>(&self, v: &'v [u64]) -> &'v [u64] {
    &v[self.start as usize..self.end as usize]
  }
}

/// One event of a batch, decoded and checked against the shape, not applied yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record {
  /// Blocks `engine` (engine hashes) with local hashes `local[local_at..]`, the first the child
  /// of `parent`.
  /// `tier`: the lower tier the blocks are on (None: the device).
  Stored {
    parent: Option<u64>,
    engine: Span,
    local_at: u32,
    tier: Option<LowerTier>,
  },
  Removed {
    engine: Span,
    tier: Option<LowerTier>,
  },
  Cleared,
  /// A type this decoder does not know: skipped.
  Unknown,
  /// An event of a secondary KV cache group (hybrid models): skipped.
  OtherGroup,
  /// About blocks on a medium not indexed (`Decoded::media[medium]`): not applied.
  OtherMedium {
    medium: u32,
    stored: bool,
  },
  /// A stored event with another block size than the index's: refused.
  BlockSize,
  /// A stored event whose token count is not what hashing its blocks reads: refused.
  TokenCount,
  /// A stored event of no blocks: nothing to do.
  Empty,
  /// Fields of the wrong type: refused alone (the first such event's error is `first_invalid`).
  Invalid {
    first: bool,
  },
}

/// Buffers one event's decoding reuses.
#[derive(Default, Debug)]
struct Scratch {
  tokens: Vec<u32>,
  mm: Multimodal,
}

/// A batch decoded from its bytes: its header and one record per event, in order. Reusable: a
/// `decode` clears what the last one left.
#[derive(Default, Debug)]
pub struct Decoded {
  /// The engine's timestamp (seconds since the epoch).
  pub ts: f64,
  /// The publisher's data-parallel rank when the payload carries one.
  pub dp_rank: Option<u32>,
  pub records: Vec<Record>,
  /// Engine hashes of the stored and removed records.
  pub engine: Vec<u64>,
  /// Local hashes of the stored records.
  pub local: Vec<u64>,
  /// Names of the media other than the device that records mention.
  pub media: Vec<String>,
  pub first_invalid: Option<DecodeError>,
  scratch: Scratch,
}

impl Decoded {
  /// Events in the batch.
  pub fn events(&self) -> u32 {
    self.records.len() as u32
  }

  /// Decodes `bytes`, whole or not at all: on an error the records are not to be used.
  pub fn decode(&mut self, bytes: &[u8], shape: Shape) -> Result<(), DecodeError> {
    self.clear();
    if bytes.is_empty() {
      return Err(DecodeError::new("empty payload", ""));
    }
    let mut r = Reader::new(bytes);
    // Header fields are read once the whole payload is known to be msgpack, as errors about the
    // bytes come first.
    let (mut ts, mut dp) = (None, None);
    let mut events: Option<Result<(), DecodeError>> = None;
    if let Some(n) = r.array().map_err(bad)? {
      if n < 2 {
        return Err(DecodeError::new(format!("a batch array needs [ts, events(, dp_rank)], got {n} element(s)"), ""));
      }
      ts = Some(r.at);
      r.skip().map_err(bad)?;
      events = Some(self.decode_events(&mut r, shape)?);
      for i in 2..n {
        if i == 2 {
          dp = Some(r.at);
        }
        r.skip().map_err(bad)?;
      }
    } else if let Some(n) = r.map().map_err(bad)? {
      let mut dp_alias = None;
      for _ in 0..n {
        let key_at = r.at;
        let key = r.str().map_err(bad)?;
        if key.is_none() {
          r.at = key_at;
          r.skip().map_err(bad)?;
        }
        let at = r.at;
        match key {
          // A repeated key: the last one counts.
          Some("events") => {
            events = Some(self.decode_events(&mut r, shape)?);
            continue;
          }
          Some("ts") => ts = Some(at),
          Some("data_parallel_rank") => dp = Some(at),
          Some("dp_rank") => dp_alias = Some(at),
          _ => {}
        }
        r.skip().map_err(bad)?;
      }
      dp = dp.or(dp_alias);
    } else {
      let what = r.describe();
      Reader::new(bytes).skip().map_err(bad)?;
      return Err(DecodeError::new(format!("a batch must be an array or a map, got {what}"), ""));
    }
    if !r.is_done() {
      return Err(DecodeError::new(format!("invalid msgpack: {} bytes after the batch", bytes.len() - r.at), ""));
    }
    self.ts = read_ts(bytes, ts)?;
    self.dp_rank = match dp {
      None => None,
      Some(at) => read_dp_rank(bytes, at)?,
    };
    events.unwrap_or_else(|| Err(DecodeError::new("must be a list, got nil", "events")))
  }

  /// Lets go of buffers a large batch grew (a decoder kept for the next batch keeps small ones).
  pub fn release_large(&mut self) {
    if self.engine.capacity() + self.local.capacity() > RETAINED_HASHES {
      *self = Self::default();
    }
  }

  fn clear(&mut self) {
    self.ts = 0.0;
    self.dp_rank = None;
    self.clear_events();
  }

  fn clear_events(&mut self) {
    self.records.clear();
    self.engine.clear();
    self.local.clear();
    self.media.clear();
    self.first_invalid = None;
  }

  /// The events list at `r`, which is left after it. Err: the bytes are not msgpack (the batch
  /// is refused); Ok(Err): the value is not a list.
  fn decode_events(&mut self, r: &mut Reader, shape: Shape) -> Result<Result<(), DecodeError>, DecodeError> {
    self.clear_events();
    let what = r.describe();
    let Some(n) = r.array().map_err(bad)? else {
      r.skip().map_err(bad)?;
      return Ok(Err(DecodeError::new(format!("must be a list, got {what}"), "events")));
    };
    // Each event takes at least a byte: a count beyond the bytes left is a lie found below.
    self.records.reserve((n as usize).min(r.left()));
    for i in 0..n {
      let start = r.at;
      let record = match self.decode_event(r, i, shape) {
        Ok(record) => record,
        Err(e) => {
          // Refused alone, if the event is msgpack at all.
          r.at = start;
          r.skip().map_err(bad)?;
          self.invalid(e)
        }
      };
      self.records.push(record);
    }
    Ok(Ok(()))
  }

  fn invalid(&mut self, e: DecodeError) -> Record {
    let first = self.first_invalid.is_none();
    if first {
      self.first_invalid = Some(e);
    }
    Record::Invalid { first }
  }

  /// One event: its fields found in one walk (the bulky ones, hashes and tokens, read as they are
  /// walked), then checked and its tokens hashed. Err: the event is refused (or not msgpack).
  fn decode_event(&mut self, r: &mut Reader, index: u32, shape: Shape) -> Result<Record, DecodeError> {
    let engine_at = self.engine.len();
    let walked = walk_event(r, &mut self.engine, &mut self.scratch.tokens);
    let (tag, fields) = walked.map_err(|e| DecodeError::new(e, event_path(index)))?;
    let bytes = r.buf();
    let field = |f: usize| fields.at[f].map(|at| Reader::at(bytes, at));
    let err = |f: usize| move |e: FieldError| e.at(format!("{}.{}", event_path(index), FIELD_NAMES[f]));
    let record = match tag {
      "BlockStored" => {
        if !fields.read(BLOCK_HASHES) {
          self.engine.truncate(engine_at);
          read_hash_list(field(BLOCK_HASHES), &mut self.engine).map_err(err(BLOCK_HASHES))?;
        }
        let parent = read_optional_hash(field(PARENT)).map_err(err(PARENT))?;
        if !fields.read(TOKEN_IDS) {
          read_tokens(field(TOKEN_IDS), &mut self.scratch.tokens).map_err(err(TOKEN_IDS))?;
        }
        let block_size = read_block_size(field(BLOCK_SIZE)).map_err(err(BLOCK_SIZE))?;
        let medium = read_optional_str(field(MEDIUM)).map_err(err(MEDIUM))?;
        // Section 1: an empty LoRA name counts as unset.
        let lora_name = read_optional_str(field(LORA_NAME)).map_err(err(LORA_NAME))?.filter(|l| !l.is_empty());
        let multimodal = read_extra_keys(field(EXTRA_KEYS), &mut self.scratch.mm).map_err(err(EXTRA_KEYS))?;
        if is_secondary_group(field(GROUP_IDX), field(SPEC_KIND)) {
          Record::OtherGroup
        } else if let Some(tier) = destination(medium, shape) {
          self.stored(engine_at, parent, block_size, lora_name, multimodal, shape, tier)
        } else {
          Record::OtherMedium { medium: self.medium(medium.unwrap_or_default()), stored: true }
        }
      }
      "BlockRemoved" => {
        if !fields.read(BLOCK_HASHES) {
          self.engine.truncate(engine_at);
          read_hash_list(field(BLOCK_HASHES), &mut self.engine).map_err(err(BLOCK_HASHES))?;
        }
        let medium = read_optional_str(field(MEDIUM)).map_err(err(MEDIUM))?;
        if is_secondary_group(field(GROUP_IDX), field(SPEC_KIND)) {
          Record::OtherGroup
        } else if let Some(tier) = destination(medium, shape) {
          Record::Removed { engine: Span { start: engine_at as u32, end: self.engine.len() as u32 }, tier }
        } else {
          Record::OtherMedium { medium: self.medium(medium.unwrap_or_default()), stored: false }
        }
      }
      "AllBlocksCleared" => Record::Cleared,
      _ => Record::Unknown,
    };
    if !matches!(record, Record::Stored { .. } | Record::Removed { .. }) {
      self.engine.truncate(engine_at);
    }
    Ok(record)
  }

  /// A stored event whose fields decoded: checked against the shape, its tokens hashed.
  #[allow(clippy::too_many_arguments, reason = "the fields of a stored event as decoded, one argument each, on the decode path")]
  fn stored(
    &mut self,
    engine_at: usize,
    parent: Option<u64>,
    block_size: u64,
    lora_name: Option<&str>,
    multimodal: bool,
    shape: Shape,
    tier: Option<LowerTier>,
  ) -> Record {
    let n = self.engine.len() - engine_at;
    let bs = shape.block_size as usize;
    if block_size != bs as u64 {
      return Record::BlockSize;
    }
    if self.scratch.tokens.len() != shape.window.tokens_for(n, bs) {
      return Record::TokenCount;
    }
    if n == 0 {
      return Record::Empty;
    }
    let mm = multimodal.then(|| {
      let (offsets, hashes) = self.scratch.mm.csr();
      MmBlocks::new(&offsets[..offsets.len().min(n + 1)], hashes).expect("the decoder builds consistent offsets")
    });
    let local_at = self.local.len();
    BlockHasher::new(bs, block_seed(lora_name, None)).window(shape.window).multimodal(mm).hash_extend(&self.scratch.tokens, &mut self.local);
    Record::Stored { parent, engine: Span { start: engine_at as u32, end: self.engine.len() as u32 }, local_at: local_at as u32, tier }
  }

  fn medium(&mut self, name: &str) -> u32 {
    match self.media.iter().position(|m| m == name) {
      Some(i) => i as u32,
      None => {
        self.media.push(name.to_string());
        (self.media.len() - 1) as u32
      }
    }
  }
}

fn bad(e: String) -> DecodeError {
  DecodeError::new(format!("invalid msgpack: {e}"), "")
}

fn event_path(index: u32) -> String {
  format!("events[{index}]")
}

/// Where an event about `medium` goes: Some(None) the device (GPU or device, any case, or none:
/// engines that do not say mean the GPU), Some(tier) a lower tier the index keeps, None nowhere.
fn destination(medium: Option<&str>, shape: Shape) -> Option<Option<LowerTier>> {
  match medium_tier(medium) {
    Medium::Device => Some(None),
    Medium::Lower(t) if shape.lower_tiers => Some(Some(t)),
    _ => None,
  }
}

fn read_ts(bytes: &[u8], at: Option<usize>) -> Result<f64, DecodeError> {
  let err = |what: String| DecodeError::new(format!("must be a finite number, got {what}"), "ts");
  let Some(at) = at else { return Err(err("nil".into())) };
  let mut r = Reader::at(bytes, at);
  match r.number().map_err(err)? {
    Some(v) if v.is_finite() => Ok(v),
    Some(v) => Err(err(format!("{v}"))),
    None => Err(err(r.describe().into())),
  }
}

fn read_dp_rank(bytes: &[u8], at: usize) -> Result<Option<u32>, DecodeError> {
  let mut r = Reader::at(bytes, at);
  let err = |what: String| DecodeError::new(format!("must be nil or an integer in [0, {MAX_DP_RANK}], got {what}"), "data_parallel_rank");
  if r.nil().map_err(err)? {
    return Ok(None);
  }
  match r.int().map_err(err)? {
    Some(i) => i.in_range(MAX_DP_RANK).map(|v| Some(v as u32)).ok_or_else(|| err(format!("{i:?}"))),
    None => Err(err(r.describe().into())),
  }
}

const BLOCK_HASHES: usize = 0;
const PARENT: usize = 1;
const TOKEN_IDS: usize = 2;
const BLOCK_SIZE: usize = 3;
const MEDIUM: usize = 5;
const LORA_NAME: usize = 6;
const EXTRA_KEYS: usize = 7;
const GROUP_IDX: usize = 8;
const SPEC_KIND: usize = 9;
const FIELDS: usize = 10;
const FIELD_NAMES: [&str; FIELDS] =
  ["block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium", "lora_name", "extra_keys", "group_idx", "kv_cache_spec_kind"];
/// Positions of the fields in the tagged-array form, by event type (index = position - 1).
const STORED_POSITIONS: [usize; 10] = [BLOCK_HASHES, PARENT, TOKEN_IDS, BLOCK_SIZE, 4, MEDIUM, LORA_NAME, EXTRA_KEYS, GROUP_IDX, SPEC_KIND];
const REMOVED_POSITIONS: [usize; 4] = [BLOCK_HASHES, MEDIUM, GROUP_IDX, SPEC_KIND];

/// KV cache spec kinds of a model's secondary groups: their blocks are not prefix-cache blocks.
const SECONDARY_SPEC_KINDS: [&str; 6] =
  ["sliding_window", "sliding_window_mla", "mamba", "chunked_local_attention", "encoder_only_attention", "cross_attention"];

/// Where an event's known fields are, and which of the bulky ones were read while walking it.
struct FieldTable {
  at: [Option<usize>; FIELDS],
  /// Bit f: field f (block hashes, token ids) is already in the decoder's buffers.
  read: u32,
}

impl FieldTable {
  fn read(&self, f: usize) -> bool {
    self.read & (1 << f) != 0
  }
}

/// Walks the event at the reader (left after it): its type tag and where its fields are. The
/// block hashes are appended to `engine` and the token ids put in `tokens` on the way, when they
/// read cleanly (else they are left for the caller to read again and report).
fn walk_event<'a>(r: &mut Reader<'a>, engine: &mut Vec<u64>, tokens: &mut Vec<u32>) -> Result<(&'a str, FieldTable), String> {
  let mut t = FieldTable { at: [None; FIELDS], read: 0 };
  let engine_at = engine.len();
  // The bulky fields, read in place: on a failure the field is skipped here and read again by
  // the caller from `t.at` to report its error with a path.
  let mut bulky = |r: &mut Reader<'a>, f: usize, t: &mut FieldTable| -> bool {
    let mut probe = r.clone();
    let ok = match f {
      BLOCK_HASHES => {
        engine.truncate(engine_at);
        hash_list(&mut probe, engine).is_ok()
      }
      TOKEN_IDS => token_list(&mut probe, tokens).is_ok(),
      _ => false,
    };
    if ok {
      *r = probe;
      t.read |= 1 << f;
    } else {
      t.read &= !(1 << f);
    }
    ok
  };
  if let Some(n) = r.array()? {
    if n == 0 {
      return Err("the event type tag must be a string, got nothing".into());
    }
    let what = r.describe();
    let Some(tag) = r.str()? else { return Err(format!("the event type tag must be a string, got {what}")) };
    let positions: &[usize] = match tag {
      "BlockStored" => &STORED_POSITIONS,
      "BlockRemoved" => &REMOVED_POSITIONS,
      _ => &[],
    };
    for p in 1..n as usize {
      if let Some(&f) = positions.get(p - 1) {
        // Trailing fields equal to their default are omitted (msgspec omit_defaults): absent = nil.
        t.at[f] = Some(r.at);
        if bulky(r, f, &mut t) {
          continue;
        }
      }
      r.skip()?;
    }
    return Ok((tag, t));
  }
  let Some(n) = r.map()? else {
    return Err(format!("an event must be a tagged array or a map, got {}", r.describe()));
  };
  let mut tag = None;
  for _ in 0..n {
    let key = r.str()?;
    if key.is_none() {
      r.skip()?; // a key of another type: not a field
    }
    match key {
      Some("type") => {
        let what = r.describe();
        tag = Some(r.str()?.ok_or_else(|| format!("the event type tag must be a string, got {what}"))?);
        continue;
      }
      Some(k) => {
        if let Some(f) = FIELD_NAMES.iter().position(|&name| name == k) {
          t.at[f] = Some(r.at);
          if bulky(r, f, &mut t) {
            continue;
          }
        }
      }
      None => {}
    }
    r.skip()?;
  }
  let tag = tag.ok_or_else(|| "the event type tag must be a string, got nil".to_string())?;
  Ok((tag, t))
}

/// Hybrid models publish one stream per KV cache group; only the main attention group (0) holds
/// prefix-cache blocks (as Dynamo filters them). Values of the wrong type count as absent.
fn is_secondary_group(group_idx: Option<Reader>, spec_kind: Option<Reader>) -> bool {
  if let Some(mut r) = spec_kind {
    if let Ok(Some(kind)) = r.str() {
      if SECONDARY_SPEC_KINDS.contains(&kind) {
        return true;
      }
    }
  }
  if let Some(mut r) = group_idx {
    if let Ok(Some(i)) = r.int() {
      return i.bits() != 0;
    }
  }
  false
}
