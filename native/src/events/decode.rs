//! KV event batches (PROTOCOLS.md section 2) decoded from their msgpack bytes, every encoding the
//! engines have used: the batch as an array `[ts, events, dp_rank?]` (2 elements in old SGLang) or
//! a map `{ts, events, data_parallel_rank | dp_rank}`; each event as a tagged array (positional)
//! or a map with a "type" key (absent fields are nil). Unknown fields and trailing elements are
//! ignored, unknown event types skipped. Hashes stay exact: uint64 as is, int64 as the same 64
//! bits, bytes folded to their last 8 bytes read big-endian.
//!
//! A batch is checked whole before any event is used (`open_batch`: valid msgpack, nothing after
//! it, a batch shape, a timestamp, a dp rank); an event whose fields have the wrong types is
//! refused alone (`Event::Invalid`), with the path of the offending field.

use super::msgpack::Reader;
use crate::hash::mm_identifier_hash;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
  pub message: String,
  /// Where in the payload, e.g. "events[2].token_ids[5]" ("" for the whole payload).
  pub path: String,
}

impl DecodeError {
  fn new(message: impl Into<String>, path: impl Into<String>) -> Self {
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

/// A batch whose bytes checked out: its header and where its events are.
#[derive(Clone, Debug)]
pub struct Batch {
  /// The engine's timestamp (seconds since the epoch).
  pub ts: f64,
  /// The publisher's data-parallel rank when the payload carries one.
  pub dp_rank: Option<u32>,
  /// Events in the batch.
  pub events: u32,
  events_at: usize,
}

/// Checks a payload whole (msgpack, nothing after it, the batch shape) and reads its header, in
/// one walk over the bytes.
pub fn open_batch(bytes: &[u8]) -> Result<Batch, DecodeError> {
  if bytes.is_empty() {
    return Err(DecodeError::new("empty payload", ""));
  }
  let bad = |e: String| DecodeError::new(format!("invalid msgpack: {e}"), "");
  let mut r = Reader::new(bytes);
  let (mut ts, mut events, mut dp) = (None, None, None);
  if let Some(n) = r.array().map_err(bad)? {
    if n < 2 {
      return Err(DecodeError::new(format!("a batch array needs [ts, events(, dp_rank)], got {n} element(s)"), ""));
    }
    ts = Some(r.at);
    r.skip().map_err(bad)?;
    events = Some(r.at);
    r.skip().map_err(bad)?;
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
      r.skip().map_err(bad)?;
      match key {
        Some("ts") => ts = Some(at),
        Some("events") => events = Some(at),
        Some("data_parallel_rank") => dp = Some(at),
        Some("dp_rank") => dp_alias = Some(at),
        _ => {}
      }
    }
    dp = dp.or(dp_alias);
  } else {
    Reader::new(bytes).skip().map_err(bad)?;
    return Err(DecodeError::new(format!("a batch must be an array or a map, got {}", r.describe()), ""));
  }
  if !r.is_done() {
    return Err(DecodeError::new(format!("invalid msgpack: {} bytes after the batch", bytes.len() - r.at), ""));
  }
  let ts = read_ts(bytes, ts)?;
  let dp_rank = match dp {
    None => None,
    Some(at) => read_dp_rank(bytes, at)?,
  };
  let Some(events_at) = events else { return Err(DecodeError::new("must be a list, got nil", "events")) };
  let mut er = Reader::at(bytes, events_at);
  let Some(count) = er.array().map_err(bad)? else {
    return Err(DecodeError::new(format!("must be a list, got {}", er.describe()), "events"));
  };
  Ok(Batch { ts, dp_rank, events: count, events_at: er.at })
}

fn read_ts(bytes: &[u8], at: Option<usize>) -> Result<f64, DecodeError> {
  let err = |what: String| DecodeError::new(format!("must be a finite number, got {what}"), "ts");
  let Some(at) = at else { return Err(err("nil".into())) };
  let mut r = Reader::at(bytes, at);
  match r.number().map_err(err)? {
    Some(v) if v.is_finite() => Ok(v),
    Some(v) => Err(err(format!("{v}"))),
    None => Err(err(r.describe())),
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
    None => Err(err(r.describe())),
  }
}

/// One decoded event. Stored events' hashes, tokens and multimodal items are in the `Scratch`.
#[derive(Clone, Debug, PartialEq)]
pub enum Event<'a> {
  Stored { parent: Option<u64>, block_size: u64, medium: Option<&'a str>, lora_name: Option<&'a str>, multimodal: bool },
  Removed { medium: Option<&'a str> },
  Cleared,
  /// A type this decoder does not know: skipped.
  Unknown,
  /// An event of a secondary KV cache group (hybrid models): skipped.
  OtherGroup,
  /// Fields of the wrong type: refused alone.
  Invalid(DecodeError),
}

/// Buffers reused from event to event.
#[derive(Default, Debug)]
pub struct Scratch {
  pub hashes: Vec<u64>,
  pub tokens: Vec<u32>,
  /// Multimodal items per block (CSR) when `multimodal`: block i's are mm_hashes[mm_offsets[i]..mm_offsets[i+1]].
  pub mm_offsets: Vec<u32>,
  pub mm_hashes: Vec<u64>,
  /// `tokens` already hold the event's token ids (read while walking a positional event).
  tokens_ready: bool,
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
const SECONDARY_SPEC_KINDS: [&str; 6] = ["sliding_window", "sliding_window_mla", "mamba", "chunked_local_attention", "encoder_only_attention", "cross_attention"];

/// The events of an opened batch, in order.
pub struct Events<'a> {
  bytes: &'a [u8],
  r: Reader<'a>,
  left: u32,
  index: u32,
}

impl<'a> Events<'a> {
  pub fn new(bytes: &'a [u8], batch: &Batch) -> Self {
    Self { bytes, r: Reader::at(bytes, batch.events_at), left: batch.events, index: 0 }
  }

  /// The next event (its arrays in `s`), None at the end.
  pub fn next_event(&mut self, s: &mut Scratch) -> Option<Event<'a>> {
    if self.left == 0 {
      return None;
    }
    self.left -= 1;
    let path = format!("events[{}]", self.index);
    self.index += 1;
    let mut walk = self.r.clone();
    let event = match field_table_at(&mut walk, &path, s) {
      Ok(table) => {
        self.r = walk;
        decode_fields(self.bytes, table, &path, s).unwrap_or_else(Event::Invalid)
      }
      Err(e) => {
        // The batch was checked whole: skipping cannot fail.
        let _ = self.r.skip();
        Event::Invalid(e)
      }
    };
    Some(event)
  }
}

/// The type tag and the byte offsets of the known fields of the event at the reader, which is
/// left after the event.
fn field_table_at<'a>(r: &mut Reader<'a>, path: &str, s: &mut Scratch) -> Result<(&'a str, [Option<usize>; FIELDS]), DecodeError> {
  let bad = |e: String| DecodeError::new(e, path);
  s.tokens_ready = false;
  let mut fields = [None; FIELDS];
  if let Some(n) = r.array().map_err(bad)? {
    if n == 0 {
      return Err(DecodeError::new("the event type tag must be a string, got nothing", path));
    }
    let what = r.describe();
    let Some(tag) = r.str().map_err(bad)? else { return Err(DecodeError::new(format!("the event type tag must be a string, got {what}"), path)) };
    let positions: &[usize] = match tag {
      "BlockStored" => &STORED_POSITIONS,
      "BlockRemoved" => &REMOVED_POSITIONS,
      _ => &[],
    };
    for p in 1..n as usize {
      if let Some(&f) = positions.get(p - 1) {
        // Trailing fields equal to their default are omitted (msgspec omit_defaults): absent = nil.
        fields[f] = Some(r.at);
        if f == TOKEN_IDS {
          // The token ids, the bulk of the bytes, are read here rather than skipped and read again.
          let mut t = r.clone();
          if read_tokens_at(&mut t, "", &mut s.tokens).is_ok() {
            *r = t;
            s.tokens_ready = true;
            continue;
          }
        }
      }
      r.skip().map_err(bad)?;
    }
    return Ok((tag, fields));
  }
  let Some(n) = r.map().map_err(bad)? else {
    return Err(DecodeError::new(format!("an event must be a tagged array or a map, got {}", r.describe()), path));
  };
  let mut tag = None;
  for _ in 0..n {
    let key = r.str().map_err(bad)?;
    if key.is_none() {
      r.skip().map_err(bad)?; // a key of another type: not a field
    }
    let value_at = r.at;
    match key {
      Some("type") => {
        let what = r.describe();
        tag = Some(r.str().map_err(bad)?.ok_or_else(|| DecodeError::new(format!("the event type tag must be a string, got {what}"), path))?);
        continue;
      }
      Some(k) => {
        if let Some(f) = FIELD_NAMES.iter().position(|&name| name == k) {
          fields[f] = Some(value_at);
        }
      }
      None => {}
    }
    r.skip().map_err(bad)?;
  }
  let tag = tag.ok_or_else(|| DecodeError::new("the event type tag must be a string, got nil", path))?;
  Ok((tag, fields))
}

fn decode_fields<'a>(bytes: &'a [u8], (tag, fields): (&'a str, [Option<usize>; FIELDS]), path: &str, s: &mut Scratch) -> Result<Event<'a>, DecodeError> {
  let field = |f: usize| fields[f].map(|at| Reader::at(bytes, at));
  let fpath = |f: usize| format!("{path}.{}", FIELD_NAMES[f]);
  match tag {
    "BlockStored" => {
      read_hash_list(field(BLOCK_HASHES), &fpath(BLOCK_HASHES), &mut s.hashes)?;
      let parent = read_optional_hash(field(PARENT), &fpath(PARENT))?;
      if !s.tokens_ready {
        read_tokens(field(TOKEN_IDS), &fpath(TOKEN_IDS), &mut s.tokens)?;
      }
      let block_size = read_block_size(field(BLOCK_SIZE), &fpath(BLOCK_SIZE))?;
      let medium = read_optional_str(field(MEDIUM), &fpath(MEDIUM))?;
      // Section 1: an empty LoRA name counts as unset.
      let lora_name = read_optional_str(field(LORA_NAME), &fpath(LORA_NAME))?.filter(|l| !l.is_empty());
      let multimodal = read_extra_keys(field(EXTRA_KEYS), &fpath(EXTRA_KEYS), s)?;
      if is_secondary_group(field(GROUP_IDX), field(SPEC_KIND)) {
        return Ok(Event::OtherGroup);
      }
      Ok(Event::Stored { parent, block_size, medium, lora_name, multimodal })
    }
    "BlockRemoved" => {
      read_hash_list(field(BLOCK_HASHES), &fpath(BLOCK_HASHES), &mut s.hashes)?;
      let medium = read_optional_str(field(MEDIUM), &fpath(MEDIUM))?;
      if is_secondary_group(field(GROUP_IDX), field(SPEC_KIND)) {
        return Ok(Event::OtherGroup);
      }
      Ok(Event::Removed { medium })
    }
    "AllBlocksCleared" => Ok(Event::Cleared),
    _ => Ok(Event::Unknown),
  }
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

/// An engine hash: ints keep their 64 bits, bytes fold to their last 8 read big-endian. `path`
/// is built only for an error.
fn read_hash(r: &mut Reader, path: impl Fn() -> String) -> Result<u64, DecodeError> {
  if let Some(i) = r.int().map_err(|e| DecodeError::new(e, path()))? {
    return Ok(i.bits());
  }
  let what = r.describe();
  if let Some(b) = r.bin().map_err(|e| DecodeError::new(e, path()))? {
    if b.is_empty() {
      return Err(DecodeError::new("a bytes hash must not be empty", path()));
    }
    return Ok(fold_digest(b));
  }
  Err(DecodeError::new(format!("a hash must be an integer or bytes, got {what}"), path()))
}

/// The last (at most) 8 bytes of a digest, read big-endian.
pub fn fold_digest(bytes: &[u8]) -> u64 {
  bytes[bytes.len().saturating_sub(8)..].iter().fold(0u64, |h, &b| h << 8 | b as u64)
}

fn read_optional_hash(r: Option<Reader>, path: &str) -> Result<Option<u64>, DecodeError> {
  let Some(mut r) = r else { return Ok(None) };
  if r.nil().map_err(|e| DecodeError::new(e, path))? {
    return Ok(None);
  }
  read_hash(&mut r, || path.to_string()).map(Some)
}

fn read_hash_list(r: Option<Reader>, path: &str, out: &mut Vec<u64>) -> Result<(), DecodeError> {
  out.clear();
  let mut r = r.ok_or_else(|| DecodeError::new("must be a list of hashes, got nil", path))?;
  let before = r.clone();
  let n = r.array().map_err(|e| DecodeError::new(e, path))?.ok_or_else(|| DecodeError::new(format!("must be a list of hashes, got {}", before.describe()), path))?;
  out.reserve(n as usize);
  for i in 0..n {
    out.push(read_hash(&mut r, || format!("{path}[{i}]"))?);
  }
  Ok(())
}

fn read_tokens(r: Option<Reader>, path: &str, out: &mut Vec<u32>) -> Result<(), DecodeError> {
  let mut r = r.ok_or_else(|| DecodeError::new("must be a list of token ids, got nil", path))?;
  read_tokens_at(&mut r, path, out)
}

/// The token ids at `r`, which is left after them.
fn read_tokens_at(r: &mut Reader, path: &str, out: &mut Vec<u32>) -> Result<(), DecodeError> {
  out.clear();
  let before = r.clone();
  let n = r.array().map_err(|e| DecodeError::new(e, path))?.ok_or_else(|| DecodeError::new(format!("must be a list of token ids, got {}", before.describe()), path))?;
  out.reserve(n as usize);
  for i in 0..n {
    match r.u32().map_err(|e| DecodeError::new(e, format!("{path}[{i}]")))? {
      Some(v) => out.push(v),
      None => return Err(DecodeError::new(format!("a token id must be an integer in [0, 2^32), got {}", r.describe()), format!("{path}[{i}]"))),
    }
  }
  Ok(())
}

fn read_block_size(r: Option<Reader>, path: &str) -> Result<u64, DecodeError> {
  let Some(mut r) = r else { return Err(DecodeError::new("must be a positive integer, got nil", path)) };
  let what = r.describe();
  match r.int().map_err(|e| DecodeError::new(e, path))? {
    Some(i) => i.in_range(u32::MAX as u64).filter(|&v| v > 0).ok_or_else(|| DecodeError::new(format!("must be a positive integer, got {i:?}"), path)),
    None => Err(DecodeError::new(format!("must be a positive integer, got {what}"), path)),
  }
}

fn read_optional_str<'a>(r: Option<Reader<'a>>, path: &str) -> Result<Option<&'a str>, DecodeError> {
  let Some(mut r) = r else { return Ok(None) };
  let bad = |e: String| DecodeError::new(e, path);
  if r.nil().map_err(bad)? {
    return Ok(None);
  }
  let what = r.describe();
  r.str().map_err(bad)?.map(Some).ok_or_else(|| DecodeError::new(format!("must be a string or nil, got {what}"), path))
}

/// vLLM's extra_keys: per block, nil or a list mixing multimodal identifiers (a 64-hex digest,
/// alone or as [digest, offset]) with LoRA names, cache salts and other metadata. Only the digests
/// change a block's hash; they go to `s.mm_offsets`/`s.mm_hashes`. True when any block has one.
fn read_extra_keys(r: Option<Reader>, path: &str, s: &mut Scratch) -> Result<bool, DecodeError> {
  s.mm_offsets.clear();
  s.mm_hashes.clear();
  let Some(mut r) = r else { return Ok(false) };
  let bad = |e: String| DecodeError::new(e, path);
  if r.nil().map_err(bad)? {
    return Ok(false);
  }
  let what = r.describe();
  let n = r.array().map_err(bad)?.ok_or_else(|| DecodeError::new(format!("must be a list (one entry per block) or nil, got {what}"), path))?;
  s.mm_offsets.push(0);
  for i in 0..n {
    let bpath = || format!("{path}[{i}]");
    if !r.nil().map_err(|e| DecodeError::new(e, bpath()))? {
      let what = r.describe();
      let keys = r.array().map_err(|e| DecodeError::new(e, bpath()))?.ok_or_else(|| DecodeError::new(format!("must be a list or nil, got {what}"), bpath()))?;
      for _ in 0..keys {
        let mut k = r.clone();
        // [digest, offset]: the digest is the first element.
        if let Ok(Some(m)) = k.array() {
          if m > 0 {
            if let Ok(Some(id)) = k.str() {
              push_digest(id, s);
            }
          }
        } else if let Ok(Some(id)) = k.str() {
          push_digest(id, s);
        }
        r.skip().map_err(|e| DecodeError::new(e, bpath()))?;
      }
    }
    s.mm_offsets.push(s.mm_hashes.len() as u32);
  }
  Ok(!s.mm_hashes.is_empty())
}

fn push_digest(id: &str, s: &mut Scratch) {
  if id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
    s.mm_hashes.push(mm_identifier_hash(id));
  }
}
