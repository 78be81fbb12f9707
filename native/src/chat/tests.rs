use minijinja::Value;

use super::request::read_chat_request;
use super::*;

fn render(source: &str, body: &str) -> Result<String, String> {
  let t = ChatTemplate::new(source, vec![("bos_token".into(), Value::from("<s>"))])?;
  let req = read_chat_request(body.as_bytes()).expect("a plain chat body");
  t.render(&req.input())
}

const CHATML: &str =
  "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

#[test]
fn renders_messages_with_the_generation_prompt_unless_it_is_false() {
  let body = r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;
  assert_eq!(render(CHATML, body).unwrap(), "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
  let no_prompt = r#"{"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":false}"#;
  assert_eq!(render(CHATML, no_prompt).unwrap(), "<|im_start|>user\nhi<|im_end|>\n");
  let other = r#"{"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":0}"#;
  assert!(render(CHATML, other).unwrap().ends_with("assistant\n"));
}

#[test]
fn flattens_content_and_keeps_every_other_field_in_order() {
  let body = r#"{"messages":[{"role":"assistant","tool_calls":[{"id":"c1","function":{"name":"f","arguments":"{\"x\": 1}"}}]},
    {"role":"tool","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"tool_call_id":"c1"}]}"#;
  let t = "{% for m in messages %}{{ m | tojson }}\n{% endfor %}";
  assert_eq!(
    render(t, body).unwrap(),
    "{\"role\": \"assistant\", \"tool_calls\": [{\"id\": \"c1\", \"function\": {\"name\": \"f\", \"arguments\": \"{\\\"x\\\": 1}\"}}], \"content\": \"\"}\n\
     {\"role\": \"tool\", \"content\": \"ab\", \"tool_call_id\": \"c1\"}\n"
  );
}

#[test]
fn gives_tools_kwargs_and_special_tokens_none_when_absent() {
  let t = "{{ bos_token }}|{{ tools is none }}|{{ documents is none }}|{{ tools | length if tools else 0 }}|{{ flag | default('-') }}";
  assert_eq!(render(t, r#"{"messages":[{"role":"user"}]}"#).unwrap(), "<s>|True|True|0|-");
  let body = r#"{"messages":[{"role":"user"}],"tools":[{"type":"function"}],"chat_template_kwargs":{"flag":"on","bos_token":"B"}}"#;
  assert_eq!(render(t, body).unwrap(), "B|False|True|1|on");
}

#[test]
fn python_methods_loop_controls_and_namespaces_work() {
  let t = "{% set ns = namespace(n=0) %}{% for m in messages %}{% if loop.index > 2 %}{% break %}{% endif %}{% set ns.n = ns.n + 1 %}{{ m.content.strip().upper() }}{% for k, v in m.items() %}{{ k }}{% endfor %};{% endfor %}{{ ns.n }}";
  let body = r#"{"messages":[{"role":"user","content":"  a "},{"role":"user","content":"b"},{"role":"user","content":"c"}]}"#;
  assert_eq!(render(t, body).unwrap(), "Arolecontent;Brolecontent;2");
}

#[test]
fn trims_blocks_like_huggingface() {
  let t = "{% for m in messages %}\n  {% if m.role %}\n{{ m.content }}\n  {% endif %}\n{% endfor %}\n";
  assert_eq!(render(t, r#"{"messages":[{"role":"user","content":"x"}]}"#).unwrap(), "x\n");
}

#[test]
fn raise_exception_and_bad_templates_are_errors_with_their_message() {
  let t = "{% if messages[0].role != 'system' %}{{ raise_exception('roles must start with system') }}{% endif %}";
  let err = render(t, r#"{"messages":[{"role":"user","content":"x"}]}"#).unwrap_err();
  assert!(err.contains("roles must start with system"), "{err}");
  assert!(ChatTemplate::new("{% for %}", vec![]).err().unwrap().contains("does not compile"));
  let err = render("{{ messages[0].content + 1 }}", r#"{"messages":[{"role":"user","content":"x"}]}"#).unwrap_err();
  assert!(!err.is_empty());
}

#[test]
fn strftime_now_formats_the_local_time() {
  let out = render("{{ strftime_now('%Y') }}", r#"{"messages":[{"role":"user"}]}"#).unwrap();
  assert_eq!(out.len(), 4);
  assert!(out.chars().all(|c| c.is_ascii_digit()));
}

#[test]
fn leaves_what_is_not_plain_to_the_caller() {
  for body in [
    "",
    "[]",
    r#"{"messages":[]}"#,
    r#"{"messages":"hi"}"#,
    r#"{"messages":[5]}"#,
    r#"{"messages":[{"content":"x"}]}"#,
    r#"{"messages":[{"role":"","content":"x"}]}"#,
    r#"{"messages":[{"role":"user","content":5}]}"#,
    r#"{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}"#,
    r#"{"messages":[{"role":"user","content":"\ud800"}]}"#,
    r#"{"messages":[{"role":"user"}],"messages":[{"role":"user"}]}"#,
    r#"{"messages":[{"role":"user"}]} x"#,
    r#"{"model":"m"}"#,
  ] {
    assert!(read_chat_request(body.as_bytes()).is_none(), "{body}");
  }
}

#[test]
fn finds_the_span_of_the_messages() {
  let body = r#"{"model":"m", "messages" : [{"role":"user"}] ,"n":1}"#;
  let req = read_chat_request(body.as_bytes()).unwrap();
  assert_eq!(&body[req.start..req.end], r#"[{"role":"user"}]"#);
}

#[test]
fn tojson_writes_what_python_json_dumps_writes() {
  let t = r#"{{ x | tojson }}|{{ x | tojson(indent=2) }}|{{ x | tojson(separators=(',', ':'), sort_keys=true) }}|{{ '<é>' | tojson(ensure_ascii=true) }}"#;
  let env_t = ChatTemplate::new(t, vec![]).unwrap();
  let x: Value =
    serde_json::from_str(r#"{"b": [1, 2.0, 1e16, 1.5e-7, -0.0001, 123.456], "a": {"s": "q\"\\\n\u0001<>&'/"}, "e": [], "o": {}, "n": null, "t": true}"#)
      .unwrap();
  let out =
    env_t.render(&ChatInput { messages: &Value::from(()), add_generation_prompt: false, tools: None, kwargs: Some(&Value::from_pairs([("x", x)])) }).unwrap();
  let parts: Vec<&str> = out.split('|').collect();
  assert_eq!(parts[0], r#"{"b": [1, 2.0, 1e+16, 1.5e-07, -0.0001, 123.456], "a": {"s": "q\"\\\n\u0001<>&'/"}, "e": [], "o": {}, "n": null, "t": true}"#);
  assert_eq!(parts[1], "{\n  \"b\": [\n    1,\n    2.0,\n    1e+16,\n    1.5e-07,\n    -0.0001,\n    123.456\n  ],\n  \"a\": {\n    \"s\": \"q\\\"\\\\\\n\\u0001<>&'/\"\n  },\n  \"e\": [],\n  \"o\": {},\n  \"n\": null,\n  \"t\": true\n}");
  assert_eq!(parts[2], r#"{"a":{"s":"q\"\\\n\u0001<>&'/"},"b":[1,2.0,1e+16,1.5e-07,-0.0001,123.456],"e":[],"n":null,"o":{},"t":true}"#);
  assert_eq!(parts[3], r#""<\u00e9>""#);
}

#[test]
fn python_float_repr() {
  let cases = [
    (0.0, "0.0"),
    (-0.0, "-0.0"),
    (1.0, "1.0"),
    (0.1, "0.1"),
    (1e15, "1000000000000000.0"),
    (1e16, "1e+16"),
    (1.5e-5, "1.5e-05"),
    (0.0001, "0.0001"),
    (123456.789, "123456.789"),
    (f64::NAN, "NaN"),
    (f64::NEG_INFINITY, "-Infinity"),
    (1.7976931348623157e308, "1.7976931348623157e+308"),
    (5e-324, "5e-324"),
  ];
  for (f, want) in cases {
    let mut s = String::new();
    write_py_float(&mut s, f);
    assert_eq!(s, want, "{f}");
  }
}

#[test]
fn generation_blocks_render_their_body() {
  assert_eq!(
    without_generation_tags("a{%- generation -%} b {%+ endgeneration %}c{% if x %}{%generation%}"),
    "a{%- if true -%} b {%+ endif %}c{% if x %}{%if true%}"
  );
  assert_eq!(without_generation_tags("{{ generation }}{% set generation = 1 %}{% generations %}"), "{{ generation }}{% set generation = 1 %}{% generations %}");
}
