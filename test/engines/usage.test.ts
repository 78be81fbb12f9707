import { describe, expect, it } from 'vitest';
import { makeEvent } from '../../src/engines/sse.js';
import {
  eventUsage,
  eventWithPromptTokensDetails,
  makeUsage,
  promptTokensDetailsOf,
  requestUsage,
  usageCounts,
  usageOf,
  wantsUsage,
  withPromptTokensDetails,
} from '../../src/engines/usage.js';

describe('usage helper', () => {
  it('reads the usage of an answer, and of the usage chunk only', () => {
    expect(usageOf({ usage: { prompt_tokens: 3 } })).toEqual({ prompt_tokens: 3 });
    for (const bad of [null, 'x', [], { usage: null }, { usage: [1] }, { usage: 3 }]) expect(usageOf(bad)).toBeUndefined();
    expect(eventUsage(makeEvent('{"choices":[],"usage":{"prompt_tokens":9}}'))).toEqual({ prompt_tokens: 9 });
    expect(eventUsage(makeEvent('{"choices":[{"text":"a"}]}'))).toBeUndefined();
    expect(eventUsage(makeEvent('{"choices":[],"usage":null}'))).toBeUndefined();
    expect(eventUsage(makeEvent('[DONE]'))).toBeUndefined();
  });

  it('counts tokens: malformed or missing counts are 0, cached tokens undefined when absent', () => {
    expect(usageCounts(makeUsage(9, 3, 8))).toEqual({ promptTokens: 9, completionTokens: 3, cachedTokens: 8 });
    expect(usageCounts({ prompt_tokens: 9 })).toEqual({ promptTokens: 9, completionTokens: 0, cachedTokens: undefined });
    expect(usageCounts({ prompt_tokens: -1, completion_tokens: 'x', prompt_tokens_details: { cached_tokens: Number.NaN } })).toEqual({
      promptTokens: 0,
      completionTokens: 0,
      cachedTokens: undefined,
    });
    expect(makeUsage(9, 3, 8)).toEqual({ prompt_tokens: 9, total_tokens: 12, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 8 } });
  });

  it('replaces prompt_tokens_details in the usage chunk only, re-serialising only that chunk', () => {
    const chunk = makeEvent('{"choices":[],"usage":{"prompt_tokens":9,"prompt_tokens_details":{"cached_tokens":0}}}');
    const out = eventWithPromptTokensDetails(chunk, { cached_tokens: 8 });
    expect(out.data).toBe('{"choices":[],"usage":{"prompt_tokens":9,"prompt_tokens_details":{"cached_tokens":8}}}');
    const token = makeEvent('{"choices":[{"text":"a"}]}');
    expect(eventWithPromptTokensDetails(token, { cached_tokens: 8 })).toBe(token);
    expect(eventWithPromptTokensDetails(chunk, undefined)).toBe(chunk);
  });

  it('replaces prompt_tokens_details of an answer in a copy', () => {
    const answer = { id: 'a', usage: { prompt_tokens: 3, prompt_tokens_details: { cached_tokens: 0 } } };
    const out = withPromptTokensDetails(answer, { cached_tokens: 2 });
    expect(out).toEqual({ id: 'a', usage: { prompt_tokens: 3, prompt_tokens_details: { cached_tokens: 2 } } });
    expect(answer.usage.prompt_tokens_details.cached_tokens).toBe(0);
    expect(withPromptTokensDetails({ x: 1 }, { cached_tokens: 2 })).toEqual({ x: 1 });
    expect(withPromptTokensDetails(answer, undefined)).toBe(answer);
    expect(promptTokensDetailsOf(out)).toEqual({ cached_tokens: 2 });
    expect(promptTokensDetailsOf({ usage: { prompt_tokens_details: 5 } })).toBeUndefined();
  });

  it('reads and sets stream_options.include_usage', () => {
    expect(wantsUsage({ stream_options: { include_usage: true } })).toBe(true);
    expect(wantsUsage({ stream_options: { include_usage: 'yes' } })).toBe(false);
    expect(wantsUsage({})).toBe(false);
    const so = { continuous_usage_stats: false };
    const body: Record<string, unknown> = { stream: true, stream_options: so };
    requestUsage(body);
    expect(body.stream_options).toEqual({ continuous_usage_stats: false, include_usage: true });
    expect(so).toEqual({ continuous_usage_stats: false });
    const bare: Record<string, unknown> = {};
    requestUsage(bare);
    expect(wantsUsage(bare)).toBe(true);
  });
});
