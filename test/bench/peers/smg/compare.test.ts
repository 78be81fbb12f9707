import { describe, expect, it } from 'vitest';
import { rotated, steadyOrder } from '../../../../bench/peers/smg/compare.js';
import { kvrouteConfig } from '../../../../bench/peers/smg/kvroute-router.js';
import { completionBody } from '../../../../bench/peers/smg/prompts.js';
import { parseRouterConfig } from '../../../../src/server/index.js';

describe('the SMG comparison', () => {
  it('rotates the order of the runs from round to round', () => {
    expect([0, 1, 2, 3].map((r) => rotated(['a', 'b', 'c'], r).join(''))).toEqual(['abc', 'bca', 'cab', 'abc']);
    expect(rotated([], 3)).toEqual([]);
  });

  it('puts every steady-rate run after each of the others over the rounds (rotated, every other round reversed)', () => {
    const orders = [0, 1, 2, 3, 4, 5].map((r) => steadyOrder(['a', 'b', 'c', 'd'], r).join(''));
    expect(orders).toEqual(['abcd', 'adcb', 'cdab', 'cbad', 'abcd', 'adcb']);
    const follows = new Set(orders.flatMap((o) => [...o].slice(1).map((x, i) => `${o[i]}${x}`)));
    expect(follows).toContain('ba');
    expect(follows).toContain('ab');
  });

  it('sends streamed completions with text or token-id prompts', () => {
    expect(JSON.parse(completionBody('bench', 'hello there', 4))).toEqual({
      model: 'bench',
      prompt: 'hello there',
      max_tokens: 4,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(JSON.parse(completionBody('bench', Uint32Array.of(7, 8), 4)).prompt).toEqual([7, 8]);
  });

  it('configures kvroute as a valid router: kv policy, the tokenizer, the approximate indexer, every engine', () => {
    const c = parseRouterConfig(kvrouteConfig({ tokenizerDir: '/tok', model: 'bench', workers: ['http://127.0.0.1:1', 'http://127.0.0.1:2'] }));
    expect(c.tokenizer).toEqual({ type: 'huggingface', path: '/tok' });
    expect(c.indexerMode).toBe('approximate');
    expect(c.decode.policy).toBe('kv');
    expect(c.workers.map((w) => [w.id, w.baseUrl, w.kind])).toEqual([
      [0, 'http://127.0.0.1:1', 'vllm'],
      [1, 'http://127.0.0.1:2', 'vllm'],
    ]);
  });
});
