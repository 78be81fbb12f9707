//! Every buffer the addon fills for TypeScript to read, its fields named once, here. Each layout
//! is a module of `usize` offsets (a field of width 3 takes 3 entries: host, disk, external); the
//! writers in this folder index by them, and src/core/generated/layout.ts, generated from
//! `LAYOUTS` by the test below, gives TypeScript the same names.
//!
//! Regenerate after a change: `npm run gen:layout` (the test fails while the committed file
//! differs). `layoutProbe` writes a distinct value into every field through the real writers, for
//! test/core/layout.test.ts to read back through the real readers.

use crate::select::MAX_EXPLAINED;

// The generator (`typescript`) and what it reads are test code: `npm run gen:layout` runs it.

/// One field of a layout, for the generator.
#[cfg(test)]
pub struct Field {
  pub name: &'static str,
  pub at: usize,
  pub width: usize,
  pub doc: &'static [&'static str],
}

/// One layout, for the generator.
#[cfg(test)]
pub struct Layout {
  /// Its TypeScript name.
  pub name: &'static str,
  /// The typed array it lives in.
  pub array: &'static str,
  pub doc: &'static [&'static str],
  pub fields: &'static [Field],
  pub len: usize,
}

/// `name { FIELD: width, .. }`: a module of offsets, each field's after the one before, and `LEN`.
macro_rules! layouts {
  ($(
    $(#[doc = $doc:literal])*
    $module:ident as $ts:literal in $array:literal {
      $( $(#[doc = $fdoc:literal])* $field:ident: $width:literal ),* $(,)?
    }
  )*) => {
    $(
      $(#[doc = $doc])*
      pub mod $module {
        layouts!(@offsets 0; $($(#[doc = $fdoc])* $field: $width),*);
        /// Entries in all.
        pub const LEN: usize = 0 $(+ $width)*;
      }
    )*
    /// Every layout, in the order of the generated file.
    #[cfg(test)]
    pub const LAYOUTS: &[Layout] = &[$(Layout {
      name: $ts,
      array: $array,
      doc: &[$($doc),*],
      fields: &[$(Field { name: stringify!($field), at: $module::$field, width: $width, doc: &[$($fdoc),*] }),*],
      len: $module::LEN,
    }),*];
  };
  (@offsets $at:expr;) => {};
  (@offsets $at:expr; $(#[doc = $fdoc:literal])* $field:ident: $width:literal $(, $(#[doc = $rdoc:literal])* $rest:ident: $rw:literal)*) => {
    $(#[doc = $fdoc])*
    pub const $field: usize = $at;
    layouts!(@offsets $at + $width; $($(#[doc = $rdoc])* $rest: $rw),*);
  };
}

layouts! {
  /// The decision route() and query() write into the caller's Float64Array (routing.rs), followed
  /// by `CANDIDATES` entries of `candidate`, best first.
  decision as "Decision" in "Float64Array" {
    WORKER: 1,
    DP_RANK: 1,
    /// Leading prompt blocks in the chosen rank's device cache.
    OVERLAP_BLOCKS: 1,
    PROMPT_TOKENS: 1,
    CACHED_TOKENS: 1,
    PREFILL_TOKENS: 1,
    /// The native call's timings, microseconds.
    HASH_US: 1,
    MATCH_US: 1,
    SELECT_US: 1,
    TOTAL_US: 1,
    /// Reloadable blocks after the device prefix: host, disk, external.
    LOWER_TIER_BLOCKS: 3,
    /// The ttft policy's prediction, ms; NaN for other policies.
    PREDICTED_TTFT_MS: 1,
    /// How many candidates follow (at most MAX_CANDIDATES).
    CANDIDATES: 1,
  }

  /// One candidate of a decision's explanation.
  candidate as "Candidate" in "Float64Array" {
    WORKER: 1,
    DP_RANK: 1,
    OVERLAP_BLOCKS: 1,
    /// host, disk, external.
    LOWER_TIER_BLOCKS: 3,
    PREFILL_BLOCKS: 1,
    DECODE_BLOCKS: 1,
    /// The policy's score, lower is better.
    COST: 1,
  }

  /// One match of findMatchesFast and copyMatches (fast.rs), in an Int32Array: Int32s, not
  /// doubles, because V8 stores each as a small integer straight away.
  matched as "Match" in "Int32Array" {
    /// The worker id's low 32 bits (read as unsigned) and the rest.
    WORKER_LOW: 1,
    WORKER_HIGH: 1,
    DP_RANK: 1,
    BLOCKS: 1,
  }

  /// The counts of one KV event batch (applyEventBatchInto and the async apply, events.rs); the
  /// refusals in EventBatchResult.refused's order.
  batch_counts as "BatchCounts" in "Float64Array" {
    EVENTS: 1,
    STORED: 1,
    REMOVED: 1,
    CLEARED: 1,
    REFUSED_BLOCK_SIZE: 1,
    REFUSED_TOKEN_COUNT: 1,
    REFUSED_UNKNOWN_PARENT: 1,
    REFUSED_DUPLICATE_HASH: 1,
    REFUSED_SELF_PARENT: 1,
    REFUSED_HASH_COLLISION: 1,
    REFUSED_INDEX_FULL: 1,
    REFUSED_MALFORMED: 1,
    REFUSED_INVALID: 1,
    REFUSED_UNKNOWN_REMOVAL: 1,
    UNKNOWN_TYPES: 1,
    OTHER_GROUPS: 1,
    /// The batch's timestamp, seconds.
    TS: 1,
    /// The batch's own dp rank; -1 when it names none.
    DP_RANK: 1,
  }
}

/// Candidates a decision lists at most.
pub const MAX_CANDIDATES: usize = MAX_EXPLAINED;
/// Entries of a decision buffer: the decision and room for every candidate.
pub const DECISION_LEN: usize = decision::LEN + candidate::LEN * MAX_CANDIDATES;

/// The generated TypeScript module (src/core/generated/layout.ts).
#[cfg(test)]
pub fn typescript() -> String {
  let mut s = String::from(
    "// Generated from native/src/bindings/layout.rs by `npm run gen:layout`: do not edit. The offsets of\n\
     // each buffer the addon fills, by field (a field of width 3 is host, disk, external).\n",
  );
  for l in LAYOUTS {
    s.push('\n');
    push_doc(&mut s, "", l.doc, Some(l.array));
    s.push_str(&format!("export const {} = {{\n", l.name));
    for f in l.fields {
      let width = (f.width > 1).then(|| format!("{} entries", f.width));
      let doc: Vec<&str> = f.doc.to_vec();
      push_doc(&mut s, "  ", &doc, width.as_deref());
      s.push_str(&format!("  {}: {},\n", f.name, f.at));
    }
    s.push_str(&format!("  /** Entries in all. */\n  LEN: {},\n}} as const;\n", l.len));
  }
  s.push_str(&format!("\n/** Candidates a decision lists at most. */\nexport const MAX_CANDIDATES = {MAX_CANDIDATES};\n"));
  s.push_str(&format!("/** Entries of a decision buffer: the decision and room for every candidate. */\nexport const DECISION_LEN = {DECISION_LEN};\n"));
  s
}

#[cfg(test)]
/// A JSDoc comment of `lines` (rustdoc's leading space dropped) and `note`, if any.
fn push_doc(s: &mut String, indent: &str, lines: &[&str], note: Option<&str>) {
  let mut text: Vec<String> = lines.iter().map(|l| l.strip_prefix(' ').unwrap_or(l).to_string()).collect();
  if let Some(note) = note {
    text.push(format!("({note})"));
  }
  if text.is_empty() {
    return;
  }
  if text.len() == 1 {
    s.push_str(&format!("{indent}/** {} */\n", text[0]));
    return;
  }
  s.push_str(&format!("{indent}/**\n"));
  for t in text {
    s.push_str(&format!("{indent} * {t}\n"));
  }
  s.push_str(&format!("{indent} */\n"));
}

#[cfg(test)]
mod tests {
  use super::*;

  const GENERATED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../src/core/generated/layout.ts");

  #[test]
  fn the_committed_typescript_is_generated_from_these_layouts() {
    let want = typescript();
    if std::env::var_os("KVROUTE_WRITE_LAYOUT").is_some() {
      std::fs::write(GENERATED, &want).expect("write src/core/generated/layout.ts");
    }
    let have = std::fs::read_to_string(GENERATED).unwrap_or_default();
    assert!(have == want, "src/core/generated/layout.ts is not what native/src/bindings/layout.rs generates: run `npm run gen:layout`");
  }
}
