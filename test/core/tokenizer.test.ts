import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { NativeTextTokenizer } from '../../src/core/tokenizer.js';
import { byteTokenizer } from '../../src/preprocess/byte-tokenizer.js';
import { TINY_MODEL } from '../preprocess/tokenizer-fixtures.js';

const enc = (s: string) => new TextEncoder().encode(s);
const tiny = NativeTextTokenizer.fromJson(readFileSync(join(TINY_MODEL, 'tokenizer.json')));

describe('NativeTextTokenizer', () => {
  it('loads off the event loop what fromJson loads on it', async () => {
    const loaded = await NativeTextTokenizer.load(readFileSync(join(TINY_MODEL, 'tokenizer.json')));
    expect(Array.from(loaded.encode('hello world'))).toEqual(Array.from(tiny.encode('hello world')));
    await expect(NativeTextTokenizer.load(enc('{"model": 1}'))).rejects.toThrow(/tokenizer\.json/);
    await expect(NativeTextTokenizer.load('x' as unknown as Uint8Array)).rejects.toThrow(TypeError);
  });

  it('has a byte tokenizer that gives the ids of the JavaScript one', () => {
    const bytes = NativeTextTokenizer.bytes();
    for (const text of ['', 'hé東🙂', 'a\ud800b', '\u0000\n']) {
      expect(Array.from(bytes.encode(text)), text).toEqual(Array.from(byteTokenizer.encode(text)));
    }
    expect(bytes.decode([104, 195, 169])).toBe('hé');
    expect(() => bytes.decode([256])).toThrow(/below 256/);
  });

  it("reads and tokenizes a body's text prompt with its span, and declines anything else", () => {
    const body = enc('{"model":"m","prompt":"world hello","max_tokens":1}');
    const r = tiny.encodePromptBody(body)!;
    expect(Array.from(r.tokens)).toEqual([6, 5]);
    expect(new TextDecoder().decode(body.subarray(r.start, r.end))).toBe('"world hello"');
    for (const text of ['{"prompt":[1,2]}', '{"prompt":["a","b"]}', '{"prompt":"a"', '{"model":"m"}']) {
      expect(tiny.encodePromptBody(enc(text)), text).toBeUndefined();
    }
    expect(() => tiny.encodePromptBody('{}' as unknown as Uint8Array)).toThrow(TypeError);
  });

  it('hands over results larger than its scratch, each its own array', () => {
    const text = 'hello world '.repeat(30_000);
    const a = tiny.encodePromptBody(enc(JSON.stringify({ prompt: text })))!;
    const b = tiny.encode('world');
    expect(a.tokens.length).toBe(60_000);
    expect(a.tokens[59_999]).toBe(6);
    expect(Array.from(b)).toEqual([6]);
  });
});
