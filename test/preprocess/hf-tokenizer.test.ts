import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CHATML_TEMPLATE, ChatTemplate } from '../../src/preprocess/chat-template.js';
import { HfTokenizer, loadHfTokenizer } from '../../src/preprocess/hf-tokenizer.js';
import { TINY_MODEL } from './tokenizer-fixtures.js';

describe('HfTokenizer', () => {
  let tok: HfTokenizer;
  beforeAll(async () => {
    tok = await loadHfTokenizer(TINY_MODEL);
  });

  it('loads a model directory and encodes text to the vocabulary ids', () => {
    expect(tok.name).toBe(TINY_MODEL);
    expect(Array.from(tok.encode('hello world'))).toEqual([5, 6]);
    expect(Array.from(tok.encode('hello mars'))).toEqual([5, 0]);
  });

  it('renders the chat template from tokenizer_config.json and tokenizes its special tokens', () => {
    const text = tok.chatTemplate!.render([{ role: 'user', content: 'hello' }]);
    expect(text).toBe('<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n');
    expect(tok.chatTemplate!.render([{ role: 'user', content: 'hello' }])).toBe(new ChatTemplate(CHATML_TEMPLATE).render([{ role: 'user', content: 'hello' }]));
    const ids = Array.from(tok.encode(text));
    expect(ids[0]).toBe(1);
    expect(ids).toContain(2);
    expect(ids).toContain(5);
  });

  it('takes tokenizer.json as bytes, text or parsed contents', () => {
    const bytes = readFileSync(join(TINY_MODEL, 'tokenizer.json'));
    for (const tokenizer of [bytes, bytes.toString('utf8'), JSON.parse(bytes.toString('utf8')) as object]) {
      expect(Array.from(new HfTokenizer({ tokenizer }).encode('world hello'))).toEqual([6, 5]);
    }
  });

  it('refuses something that is not a tokenizer.json, and a directory without one', async () => {
    expect(() => new HfTokenizer({ tokenizer: null as unknown as object })).toThrow(TypeError);
    expect(() => new HfTokenizer({ tokenizer: [] as unknown as object })).toThrow(TypeError);
    expect(() => new HfTokenizer({ tokenizer: '{"version": "2.0"' })).toThrow(/tokenizer\.json/);
    expect(() => new HfTokenizer({ tokenizer: { version: '1.0', model: { type: 'Nope' } } })).toThrow(/tokenizer\.json/);
    await expect(loadHfTokenizer(join(TINY_MODEL, 'missing'))).rejects.toThrow(/tokenizer\.json/);
    const dir = mkdtempSync(join(tmpdir(), 'kvroute-tok-'));
    try {
      writeFileSync(join(dir, 'tokenizer.json'), '{"model": 5}');
      await expect(loadHfTokenizer(dir)).rejects.toThrow(new RegExp(`cannot load the tokenizer of ${dir}`));
      copyFileSync(join(TINY_MODEL, 'tokenizer.json'), join(dir, 'tokenizer.json'));
      writeFileSync(join(dir, 'tokenizer_config.json'), '{not json');
      await expect(loadHfTokenizer(dir)).rejects.toThrow(/tokenizer_config\.json/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses text that is not a string and ids that are not token ids', () => {
    expect(() => tok.encode(5 as unknown as string)).toThrow(TypeError);
    expect(() => tok.decode([1.5])).toThrow(RangeError);
    expect(() => tok.decode([-1])).toThrow(RangeError);
    expect(() => tok.decode('5' as unknown as number[])).toThrow(TypeError);
    expect(tok.decode(Uint32Array.of(5, 99999))).toBe('hello');
  });

  it('encodes texts longer than its kept scratch, each result its own', () => {
    const long = 'hello world '.repeat(20_000);
    const a = tok.encode(long);
    const b = tok.encode('world');
    expect(a.length).toBe(40_000);
    expect(a[39_999]).toBe(6);
    expect(Array.from(b)).toEqual([6]);
  });
});
