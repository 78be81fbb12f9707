use super::*;

fn tiny_model() -> HfTokenizer {
  let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../test/fixtures/tiny-model/tokenizer.json");
  HfTokenizer::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn encodes_words_and_the_special_tokens_written_in_the_text() {
  let tok = tiny_model();
  assert_eq!(tok.encode("hello world").unwrap(), [5, 6]);
  assert_eq!(tok.encode("hello mars").unwrap(), [5, 0]);
  assert_eq!(tok.encode("<|im_start|>user hello<|im_end|>").unwrap(), [1, 3, 5, 2]);
  assert_eq!(tok.encode("").unwrap(), Vec::<u32>::new());
}

#[test]
fn encode_into_reuses_the_buffer_and_appends() {
  let tok = tiny_model();
  let mut ids = TokenIds::default();
  tok.encode_into("hello", &mut ids).unwrap();
  tok.encode_into("world", &mut ids).unwrap();
  assert_eq!(ids.as_slice(), [5, 6]);
  ids.clear();
  tok.encode_into("world hello", &mut ids).unwrap();
  assert_eq!(ids.as_slice(), [6, 5]);
}

#[test]
fn decodes_with_or_without_special_tokens() {
  let tok = tiny_model();
  assert_eq!(tok.decode(&[1, 5, 6, 2], true).unwrap(), "hello world");
  assert!(tok.decode(&[1, 5, 6, 2], false).unwrap().contains("<|im_start|>"));
  assert_eq!(tok.decode(&[], true).unwrap(), "");
}

#[test]
fn refuses_what_is_not_a_tokenizer_json() {
  for bad in ["", "[]", "{", "{\"version\": \"1.0\"}", "{\"version\": \"2.0\", \"model\": 5}"] {
    let err = HfTokenizer::from_json(bad).err().unwrap_or_else(|| panic!("{bad:?} was accepted"));
    assert!(err.contains("tokenizer.json"), "{err}");
  }
}

#[test]
fn reads_the_version_without_building_the_document() {
  assert_eq!(version::of("{\"a\": [1, {\"version\": 3}], \"version\": \"1.0\"}").unwrap().as_deref(), Some("1.0"));
  assert_eq!(version::of("{\"model\": {}}").unwrap(), None);
  assert!(version::of("[1]").is_err());
}

#[test]
fn the_byte_tokenizer_gives_one_id_per_utf8_byte() {
  let mut ids = TokenIds::default();
  Tokenizer::Bytes.encode_into("hé", &mut ids).unwrap();
  assert_eq!(ids.as_slice(), [104, 195, 169]);
  assert_eq!(Tokenizer::Bytes.decode(&[104, 195, 169], true).unwrap(), "hé");
  assert_eq!(Tokenizer::Bytes.decode(&[195], true).unwrap(), "\u{fffd}");
  assert!(Tokenizer::Bytes.decode(&[256], true).is_err());
}
