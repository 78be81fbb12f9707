import { describe, expect, it } from 'vitest';
import { attributePrefillWorker } from '../../src/routing/attribution.js';
import { answerWithPromptTokensDetails, cachedTokensOf, withPromptTokensDetails } from '../../src/routing/usage.js';

const sizes = (w: number) => (w === 7 ? 4 : w === 8 ? 1 : undefined);

describe('attributePrefillWorker', () => {
  it('prefers the booking, then the direct target, then the payload', () => {
    const payload = { worker_id: { prefill_worker_id: 7, prefill_dp_rank: 2 } };
    expect(attributePrefillWorker({ worker: 1, dpRank: 0 }, { worker: 2 }, payload, sizes)).toEqual({ worker: 1, dpRank: 0 });
    expect(attributePrefillWorker(undefined, { worker: 2, dpRank: 1 }, payload, sizes)).toEqual({ worker: 2, dpRank: 1 });
    expect(attributePrefillWorker(undefined, undefined, payload, sizes)).toEqual({ worker: 7, dpRank: 2 });
    expect(attributePrefillWorker(undefined, undefined, { nvext: { worker_id: { prefill_worker_id: 8 } } }, sizes)).toEqual({ worker: 8 });
  });

  it('ignores out-of-range ranks and malformed payloads', () => {
    expect(attributePrefillWorker(undefined, undefined, { worker_id: { prefill_worker_id: 7, prefill_dp_rank: 4 } }, sizes)).toEqual({ worker: 7 });
    expect(attributePrefillWorker(undefined, undefined, { worker_id: { prefill_worker_id: 9, prefill_dp_rank: 0 } }, sizes)).toEqual({ worker: 9 });
    expect(attributePrefillWorker(undefined, undefined, { worker_id: { prefill_worker_id: -1 } }, sizes)).toBeUndefined();
    expect(attributePrefillWorker(undefined, undefined, { worker_id: { prefill_worker_id: '7' } }, sizes)).toBeUndefined();
    expect(attributePrefillWorker(undefined, undefined, { worker_id: 7 }, sizes)).toBeUndefined();
    expect(attributePrefillWorker(undefined, undefined, 'x', sizes)).toBeUndefined();
  });
});

describe('usage rewrite', () => {
  it('replaces prompt_tokens_details in the usage chunk only', () => {
    const chunk = { data: '{"choices":[],"usage":{"prompt_tokens":9,"prompt_tokens_details":{"cached_tokens":0}}}', json: { choices: [], usage: { prompt_tokens: 9, prompt_tokens_details: { cached_tokens: 0 } } } };
    const out = withPromptTokensDetails(chunk, { cached_tokens: 8 });
    expect(out.data).toBe('{"choices":[],"usage":{"prompt_tokens":9,"prompt_tokens_details":{"cached_tokens":8}}}');
    const token = { data: '{"choices":[{"text":"a"}]}', json: { choices: [{ text: 'a' }] } };
    expect(withPromptTokensDetails(token, { cached_tokens: 8 })).toBe(token);
    expect(withPromptTokensDetails(chunk, undefined)).toBe(chunk);
    expect(answerWithPromptTokensDetails({ usage: { prompt_tokens: 3 } }, { cached_tokens: 2 })).toEqual({ usage: { prompt_tokens: 3, prompt_tokens_details: { cached_tokens: 2 } } });
    expect(answerWithPromptTokensDetails({ x: 1 }, { cached_tokens: 2 })).toEqual({ x: 1 });
    expect(cachedTokensOf({ prompt_tokens: 9, prompt_tokens_details: { cached_tokens: 8 } })).toEqual({ prompt: 9, cached: 8 });
    expect(cachedTokensOf({ prompt_tokens: 9 })).toBeUndefined();
  });
});
