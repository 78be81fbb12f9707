//! The `tojson` filter as HuggingFace's chat templates have it: Python's
//! `json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)`. Jinja's own
//! (and MiniJinja's) escapes `<`, `>`, `&` and `'` for HTML, which would change the prompt.
//! Python's spelling throughout: `", "` and `": "` separators, floats as `repr` writes them
//! (`1.0`, `1e+16`, `1.5e-07`), `NaN` and `Infinity`.

use std::fmt::Write;

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, ErrorKind, Value};

/// `x | tojson(indent=None, separators=None, sort_keys=False, ensure_ascii=False)`.
pub fn tojson(value: &Value, kwargs: Kwargs) -> Result<Value, Error> {
  let indent = match kwargs.get::<Option<Value>>("indent")? {
    None => None,
    Some(v) if v.is_none() => None,
    Some(v) => Some(match v.as_str() {
      Some(s) => s.to_owned(),
      None => " ".repeat(usize::try_from(v).map_err(|_| invalid("tojson: indent must be a non-negative integer or a string"))?),
    }),
  };
  let (item, key) = match kwargs.get::<Option<Value>>("separators")? {
    Some(v) if !v.is_none() => {
      let item = v.get_item_by_index(0).ok().and_then(|s| s.as_str().map(str::to_owned));
      let key = v.get_item_by_index(1).ok().and_then(|s| s.as_str().map(str::to_owned));
      match (item, key, v.len()) {
        (Some(item), Some(key), Some(2)) => (item, key),
        _ => return Err(invalid("tojson: separators must be a pair of strings")),
      }
    }
    _ => ((if indent.is_some() { "," } else { ", " }).to_owned(), ": ".to_owned()),
  };
  let sort_keys = kwargs.get::<Option<bool>>("sort_keys")?.unwrap_or(false);
  let ensure_ascii = kwargs.get::<Option<bool>>("ensure_ascii")?.unwrap_or(false);
  kwargs.assert_all_used()?;
  let mut w = Writer { out: String::new(), indent, item, key, sort_keys, ensure_ascii };
  w.value(value, 0)?;
  Ok(Value::from(w.out))
}

fn invalid(msg: &str) -> Error {
  Error::new(ErrorKind::InvalidOperation, msg.to_owned())
}

struct Writer {
  out: String,
  indent: Option<String>,
  item: String,
  key: String,
  sort_keys: bool,
  ensure_ascii: bool,
}

impl Writer {
  fn value(&mut self, v: &Value, depth: usize) -> Result<(), Error> {
    match v.kind() {
      ValueKind::None => self.out.push_str("null"),
      ValueKind::Bool => self.out.push_str(if v.is_true() { "true" } else { "false" }),
      ValueKind::Number if v.is_integer() => write!(self.out, "{v}").expect("writing to a String"),
      ValueKind::Number => write_py_float(&mut self.out, f64::try_from(v.clone())?),
      ValueKind::String => self.string(v.as_str().unwrap_or_default()),
      ValueKind::Seq | ValueKind::Iterable => {
        let items: Vec<Value> = v.try_iter()?.collect();
        self.container('[', ']', depth, items.len(), |w, i, d| w.value(&items[i], d))?;
      }
      ValueKind::Map => {
        let mut keys: Vec<Value> = v.try_iter()?.collect();
        if self.sort_keys {
          keys.sort_by_key(key_text);
        }
        self.container('{', '}', depth, keys.len(), |w, i, d| {
          w.string(&key_text(&keys[i]));
          let sep = std::mem::take(&mut w.key);
          w.out.push_str(&sep);
          w.key = sep;
          w.value(&v.get_item(&keys[i])?, d)
        })?;
      }
      ValueKind::Undefined => return Err(invalid("tojson: an undefined value is not JSON serializable")),
      _ => return Err(invalid(&format!("tojson: a {} is not JSON serializable", v.kind()))),
    }
    Ok(())
  }

  /// `open item, item close`, one item a line when indenting; `[]` and `{}` when empty.
  fn container(
    &mut self,
    open: char,
    close: char,
    depth: usize,
    len: usize,
    mut item: impl FnMut(&mut Self, usize, usize) -> Result<(), Error>,
  ) -> Result<(), Error> {
    self.out.push(open);
    if len > 0 {
      for i in 0..len {
        if i > 0 {
          let sep = std::mem::take(&mut self.item);
          self.out.push_str(&sep);
          self.item = sep;
        }
        self.newline(depth + 1);
        item(self, i, depth + 1)?;
      }
      self.newline(depth);
    }
    self.out.push(close);
    Ok(())
  }

  fn newline(&mut self, depth: usize) {
    if let Some(indent) = &self.indent {
      self.out.push('\n');
      for _ in 0..depth {
        self.out.push_str(indent);
      }
    }
  }

  fn string(&mut self, s: &str) {
    self.out.push('"');
    for c in s.chars() {
      match c {
        '"' => self.out.push_str("\\\""),
        '\\' => self.out.push_str("\\\\"),
        '\n' => self.out.push_str("\\n"),
        '\r' => self.out.push_str("\\r"),
        '\t' => self.out.push_str("\\t"),
        '\u{8}' => self.out.push_str("\\b"),
        '\u{c}' => self.out.push_str("\\f"),
        c if (c as u32) < 0x20 || (self.ensure_ascii && (c as u32) > 0x7e) => {
          let mut units = [0u16; 2];
          for unit in c.encode_utf16(&mut units) {
            write!(self.out, "\\u{unit:04x}").expect("writing to a String");
          }
        }
        c => self.out.push(c),
      }
    }
    self.out.push('"');
  }
}

fn key_text(key: &Value) -> String {
  match key.as_str() {
    Some(s) => s.to_owned(),
    None => key.to_string(),
  }
}

/// A float as Python's `repr` (and so `json.dumps`) writes it: the shortest digits that read
/// back the same, positional from 1e-4 to below 1e16, else `d.ddde+XX`.
pub fn write_py_float(out: &mut String, f: f64) {
  if f.is_nan() {
    out.push_str("NaN");
    return;
  }
  if f.is_infinite() {
    out.push_str(if f > 0.0 { "Infinity" } else { "-Infinity" });
    return;
  }
  // `{:e}` gives the shortest round-trip digits: "-1.5e-7", "1e16", "0e0".
  let sci = format!("{f:e}");
  let (mantissa, exp) = sci.split_once('e').expect("{:e} always writes an exponent");
  let exp: i32 = exp.parse().expect("{:e} writes an integer exponent");
  let (sign, mantissa) = mantissa.strip_prefix('-').map_or(("", mantissa), |m| ("-", m));
  let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
  out.push_str(sign);
  if (-4..16).contains(&exp) {
    if exp < 0 {
      out.push_str("0.");
      out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
      out.push_str(&digits);
    } else {
      let int_len = exp as usize + 1;
      if digits.len() <= int_len {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', int_len - digits.len()));
        out.push_str(".0");
      } else {
        out.push_str(&digits[..int_len]);
        out.push('.');
        out.push_str(&digits[int_len..]);
      }
    }
  } else {
    out.push_str(&digits[..1]);
    if digits.len() > 1 {
      out.push('.');
      out.push_str(&digits[1..]);
    }
    write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs()).expect("writing to a String");
  }
}
