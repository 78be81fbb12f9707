import { describe, expect, it } from 'vitest';
import { promptText } from '../../../bench/lib/prompt-text.js';

const words = (t: string) => t.split(/\s+/).filter(Boolean).length;

describe('promptText', () => {
  it('reaches the asked size by the given count, closely, the same text for the same seed', () => {
    const a = promptText(1000, words);
    expect(words(a)).toBeGreaterThanOrEqual(1000);
    expect(words(a)).toBeLessThan(1000 + 25);
    expect(promptText(1000, words)).toBe(a);
    expect(promptText(1000, words, 2)).not.toBe(a);
  });

  it('reads like prose: sentences, paragraphs, numbers', () => {
    const t = promptText(3000, words);
    expect(t).toMatch(/[.?!]/);
    expect(t).toMatch(/\n\n/);
    expect(t).toMatch(/\d/);
    expect(t).toBe(t.trimEnd());
  });
});
