//! Chat templates (Jinja, from tokenizer_config.json) compiled once and rendered as HuggingFace's
//! `apply_chat_template` renders them. See README.md for the invariants.

mod pyjson;
pub mod request;

use std::fmt::Write;

use minijinja::syntax::SyntaxConfig;
use minijinja::value::ValueKind;
use minijinja::{Environment, Error, ErrorKind, Value};

pub use pyjson::write_py_float;

const NAME: &str = "chat_template";

/// A compiled chat template with the variables every render gets (the special tokens).
pub struct ChatTemplate {
  env: Environment<'static>,
  globals: Vec<(Value, Value)>,
}

/// What one render reads besides the template's globals.
pub struct ChatInput<'a> {
  /// The messages, content flattened to text (see request.rs).
  pub messages: &'a Value,
  pub add_generation_prompt: bool,
  /// The request's `tools`; HuggingFace passes None when there are none.
  pub tools: Option<&'a Value>,
  /// `chat_template_kwargs`: more variables (as vLLM passes them).
  pub kwargs: Option<&'a Value>,
}

impl ChatTemplate {
  /// Compiles `source` with HuggingFace's environment: trim_blocks, lstrip_blocks, loop controls,
  /// Python's str/dict/list methods, its `tojson`, `raise_exception` and `strftime_now`.
  /// `globals`: variables of every render (bos_token, eos_token, ...), overridden by the input.
  pub fn new(source: &str, globals: Vec<(String, Value)>) -> Result<Self, String> {
    let mut env = Environment::new();
    let syntax = SyntaxConfig::builder().trim_blocks(true).lstrip_blocks(true).build().map_err(|e| describe(&e))?;
    env.set_syntax(syntax);
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    env.add_filter("tojson", pyjson::tojson);
    env.add_function("raise_exception", raise_exception);
    env.add_function("strftime_now", strftime_now);
    env.add_template_owned(NAME, without_generation_tags(source)).map_err(|e| format!("the chat template does not compile: {}", describe(&e)))?;
    Ok(Self { env, globals: globals.into_iter().map(|(k, v)| (Value::from(k), v)).collect() })
  }

  pub fn render(&self, input: &ChatInput) -> Result<String, String> {
    // Later pairs win (as keyword arguments override HuggingFace's special tokens).
    let mut ctx: Vec<(Value, Value)> = self.globals.clone();
    if let Some(kwargs) = input.kwargs.filter(|k| k.kind() == ValueKind::Map) {
      for k in kwargs.try_iter().map_err(|e| describe(&e))? {
        let v = kwargs.get_item(&k).map_err(|e| describe(&e))?;
        ctx.push((k, v));
      }
    }
    ctx.push((Value::from("messages"), input.messages.clone()));
    ctx.push((Value::from("tools"), input.tools.cloned().unwrap_or(Value::from(()))));
    ctx.push((Value::from("documents"), Value::from(())));
    ctx.push((Value::from("add_generation_prompt"), Value::from(input.add_generation_prompt)));
    let template = self.env.get_template(NAME).map_err(|e| describe(&e))?;
    template.render(Value::from_pairs(ctx)).map_err(|e| describe(&e))
  }
}

/// `{% generation %}...{% endgeneration %}` (transformers' assistant-mask extension, whose
/// output is its body) as `{% if true %}...{% endif %}`, whitespace markers kept.
fn without_generation_tags(source: &str) -> String {
  let mut out = String::with_capacity(source.len());
  let mut rest = source;
  while let Some(at) = rest.find("{%") {
    out.push_str(&rest[..at]);
    rest = &rest[at..];
    let inner = rest[2..].strip_prefix(['-', '+']).unwrap_or(&rest[2..]);
    let word_at = rest.len() - inner.trim_start().len();
    let word = &rest[word_at..];
    let replaced = [("endgeneration", "endif"), ("generation", "if true")].into_iter().find_map(|(tag, with)| {
      let after = word.strip_prefix(tag)?.trim_start();
      let after = after.strip_prefix(['-', '+']).unwrap_or(after);
      after.starts_with("%}").then_some((tag, with))
    });
    match replaced {
      Some((tag, with)) => {
        out.push_str(&rest[..word_at]);
        out.push_str(with);
        rest = &rest[word_at + tag.len()..];
      }
      None => {
        out.push_str("{%");
        rest = &rest[2..];
      }
    }
  }
  out.push_str(rest);
  out
}

/// `raise_exception(message)`: the template refuses these messages.
fn raise_exception(message: String) -> Result<Value, Error> {
  Err(Error::new(ErrorKind::InvalidOperation, message))
}

/// `strftime_now(format)`: the local time, formatted as Python's strftime does.
fn strftime_now(format: String) -> Result<Value, Error> {
  let mut out = String::new();
  write!(out, "{}", chrono::Local::now().format(&format))
    .map_err(|_| Error::new(ErrorKind::InvalidOperation, format!("strftime_now: invalid format {format:?}")))?;
  Ok(Value::from(out))
}

/// An error's message, where in the template, and its causes.
fn describe(e: &Error) -> String {
  let mut msg = e.to_string();
  let mut source = std::error::Error::source(e);
  while let Some(s) = source {
    write!(msg, ": {s}").expect("writing to a String");
    source = s.source();
  }
  msg
}

#[cfg(test)]
mod tests;
