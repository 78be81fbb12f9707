import { describe, expect, it } from 'vitest';
import { byteTokenizer } from '../../../src/preprocess/byte-tokenizer.js';
import { GeneratedText } from '../../../src/sim/worker/token-text.js';

describe('GeneratedText', () => {
  it('streams byte tokens as text that re-tokenizes to the same ids', () => {
    const ids = byteTokenizer.encode('añ€ b');
    const t = new GeneratedText();
    const text = Array.from(ids, (id) => t.push(id)).join('') + t.end();
    expect(text).toBe('añ€ b');
    expect(Array.from(byteTokenizer.encode(text))).toEqual(Array.from(ids));
  });

  it('renders ids beyond the byte vocabulary as one printable character each', () => {
    const t = new GeneratedText();
    const pieces = [256, 1000, 151_000].map((id) => t.push(id));
    for (const p of pieces) expect(p).toMatch(/^[\x20-\x7e]$/);
    expect(new GeneratedText().push(1000)).toBe(pieces[1]);
  });
});
