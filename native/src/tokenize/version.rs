//! The `version` of a tokenizer.json, read without building the document (a 7 MB vocabulary is
//! only scanned).

use std::fmt;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};

/// The format the reader takes as is; older files are converted first.
pub const CANONICAL: &str = "2.0";

/// The top-level `version` string, None when absent; an error when the text is not a JSON object.
pub fn of(text: &str) -> Result<Option<String>, String> {
  serde_json::from_str::<Version>(text).map(|v| v.0).map_err(|e| format!("tokenizer.json cannot be read: {e}"))
}

struct Version(Option<String>);

impl<'de> Deserialize<'de> for Version {
  fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
    d.deserialize_map(VersionVisitor)
  }
}

struct VersionVisitor;

impl<'de> Visitor<'de> for VersionVisitor {
  type Value = Version;

  fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
    f.write_str("a JSON object")
  }

  fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Version, A::Error> {
    let mut version = None;
    while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
      if key == "version" {
        version = map.next_value::<Option<String>>()?;
      } else {
        map.next_value::<IgnoredAny>()?;
      }
    }
    Ok(Version(version))
  }
}
