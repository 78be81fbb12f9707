//! The fields of a KV event, each read from its msgpack value with the message the engines' users
//! see when it has the wrong type. A reader left at `None` means the field is absent, which reads
//! as nil. Errors carry the offending element's index; the decoder adds the event and field.

use super::decode::DecodeError;
use super::msgpack::Reader;
use crate::hash::mm_identifier_hash;

/// A field that does not read: the message, and the element of a list it is about.
#[derive(Debug)]
pub struct FieldError {
  message: String,
  element: Option<u32>,
}

impl FieldError {
  fn new(message: impl Into<String>) -> Self {
    Self { message: message.into(), element: None }
  }

  fn element(message: impl Into<String>, i: u32) -> Self {
    Self { message: message.into(), element: Some(i) }
  }

  /// The error with the field's path ("events[2].token_ids"), and the element's index.
  pub fn at(self, path: String) -> DecodeError {
    match self.element {
      None => DecodeError::new(self.message, path),
      Some(i) => DecodeError::new(self.message, format!("{path}[{i}]")),
    }
  }
}

/// An engine hash: ints keep their 64 bits, bytes fold to their last 8 read big-endian.
fn read_hash(r: &mut Reader, i: u32) -> Result<u64, FieldError> {
  if let Some(v) = r.int().map_err(|e| FieldError::element(e, i))? {
    return Ok(v.bits());
  }
  let what = r.describe();
  if let Some(b) = r.bin().map_err(|e| FieldError::element(e, i))? {
    if b.is_empty() {
      return Err(FieldError::element("a bytes hash must not be empty", i));
    }
    return Ok(fold_digest(b));
  }
  Err(FieldError::element(format!("a hash must be an integer or bytes, got {what}"), i))
}

/// The last (at most) 8 bytes of a digest, read big-endian.
pub fn fold_digest(bytes: &[u8]) -> u64 {
  bytes[bytes.len().saturating_sub(8)..].iter().fold(0u64, |h, &b| h << 8 | b as u64)
}

pub fn read_optional_hash(r: Option<Reader>) -> Result<Option<u64>, FieldError> {
  let Some(mut r) = r else { return Ok(None) };
  if r.nil().map_err(FieldError::new)? {
    return Ok(None);
  }
  match read_hash(&mut r, 0) {
    Ok(h) => Ok(Some(h)),
    Err(e) => Err(FieldError::new(e.message)),
  }
}

/// The hashes at `r` appended to `out`, `r` left after them.
pub fn hash_list(r: &mut Reader, out: &mut Vec<u64>) -> Result<(), FieldError> {
  let what = r.describe();
  let n = r.array().map_err(FieldError::new)?.ok_or_else(|| FieldError::new(format!("must be a list of hashes, got {what}")))?;
  out.reserve((n as usize).min(r.left()));
  for i in 0..n {
    // The usual encodings inline; the others (and errors) through read_hash.
    let v = match r.uint_bits() {
      Some(v) => v,
      None => read_hash(r, i)?,
    };
    out.push(v);
  }
  Ok(())
}

pub fn read_hash_list(r: Option<Reader>, out: &mut Vec<u64>) -> Result<(), FieldError> {
  let mut r = r.ok_or_else(|| FieldError::new("must be a list of hashes, got nil"))?;
  hash_list(&mut r, out)
}

/// The token ids at `r` into `out` (cleared first), `r` left after them.
pub fn token_list(r: &mut Reader, out: &mut Vec<u32>) -> Result<(), FieldError> {
  out.clear();
  let what = r.describe();
  let n = r.array().map_err(FieldError::new)?.ok_or_else(|| FieldError::new(format!("must be a list of token ids, got {what}")))?;
  if let Err(i) = r.u32_list(n, out) {
    let e = match r.u32() {
      Err(e) => e,
      Ok(_) => format!("a token id must be an integer in [0, 2^32), got {}", r.describe()),
    };
    return Err(FieldError::element(e, i));
  }
  Ok(())
}

pub fn read_tokens(r: Option<Reader>, out: &mut Vec<u32>) -> Result<(), FieldError> {
  let mut r = r.ok_or_else(|| FieldError::new("must be a list of token ids, got nil"))?;
  token_list(&mut r, out)
}

pub fn read_block_size(r: Option<Reader>) -> Result<u64, FieldError> {
  let Some(mut r) = r else { return Err(FieldError::new("must be a positive integer, got nil")) };
  let what = r.describe();
  match r.int().map_err(FieldError::new)? {
    Some(i) => i.in_range(u32::MAX as u64).filter(|&v| v > 0).ok_or_else(|| FieldError::new(format!("must be a positive integer, got {i:?}"))),
    None => Err(FieldError::new(format!("must be a positive integer, got {what}"))),
  }
}

pub fn read_optional_str<'a>(r: Option<Reader<'a>>) -> Result<Option<&'a str>, FieldError> {
  let Some(mut r) = r else { return Ok(None) };
  if r.nil().map_err(FieldError::new)? {
    return Ok(None);
  }
  let what = r.describe();
  r.str().map_err(FieldError::new)?.map(Some).ok_or_else(|| FieldError::new(format!("must be a string or nil, got {what}")))
}

/// Multimodal items per block (CSR): block i's are hashes[offsets[i]..offsets[i + 1]].
#[derive(Default, Debug)]
pub struct Multimodal {
  offsets: Vec<u32>,
  hashes: Vec<u64>,
}

impl Multimodal {
  pub fn csr(&self) -> (&[u32], &[u64]) {
    (&self.offsets, &self.hashes)
  }

  fn push_digest(&mut self, id: &str) {
    if id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
      self.hashes.push(mm_identifier_hash(id));
    }
  }
}

/// vLLM's extra_keys: per block, nil or a list mixing multimodal identifiers (a 64-hex digest,
/// alone or as [digest, offset]) with LoRA names, cache salts and other metadata. Only the digests
/// change a block's hash; they go to `mm`. True when any block has one.
pub fn read_extra_keys(r: Option<Reader>, mm: &mut Multimodal) -> Result<bool, FieldError> {
  mm.offsets.clear();
  mm.hashes.clear();
  let Some(mut r) = r else { return Ok(false) };
  if r.nil().map_err(FieldError::new)? {
    return Ok(false);
  }
  let what = r.describe();
  let n = r.array().map_err(FieldError::new)?.ok_or_else(|| FieldError::new(format!("must be a list (one entry per block) or nil, got {what}")))?;
  mm.offsets.push(0);
  for i in 0..n {
    if !r.nil().map_err(|e| FieldError::element(e, i))? {
      let what = r.describe();
      let keys = r.array().map_err(|e| FieldError::element(e, i))?.ok_or_else(|| FieldError::element(format!("must be a list or nil, got {what}"), i))?;
      for _ in 0..keys {
        let mut k = r.clone();
        // [digest, offset]: the digest is the first element.
        if let Ok(Some(m)) = k.array() {
          if m > 0 {
            if let Ok(Some(id)) = k.str() {
              mm.push_digest(id);
            }
          }
        } else if let Ok(Some(id)) = k.str() {
          mm.push_digest(id);
        }
        r.skip().map_err(|e| FieldError::element(e, i))?;
      }
    }
    mm.offsets.push(mm.hashes.len() as u32);
  }
  Ok(!mm.hashes.is_empty())
}
