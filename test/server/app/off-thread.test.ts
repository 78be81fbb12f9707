// Long request bodies are read, rendered and tokenized on a libuv thread (offThreadPromptBytes),
// short ones inline; either way the engine gets the same token ids, and a client that leaves
// while its prompt is being tokenized off-thread is never routed nor booked. The tokenizer
// prefix cache's counters show on /metrics.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadHfTokenizer } from '../../../src/preprocess/hf-tokenizer.js';
import { bookedLoad, metricSum, prompt, startTestRouter, type TestRouter } from '../helpers/router.js';

const LONG = 64 * 1024;
/** A byte-level BPE with ChatML's special tokens (the byte tokenizer gets no prefix cache). */
const TINY_BPE = fileURLToPath(new URL('../../fixtures/tiny-bpe', import.meta.url));

describe('off-thread preprocessing of long prompts', () => {
  let t: TestRouter;
  beforeAll(async () => {
    t = await startTestRouter({ decode: 2, kvBlocks: 32_768 });
  });
  afterAll(async () => {
    await t?.close();
  });

  const post = async (path: string, body: object) =>
    (await fetch(`${t.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json() as Promise<
      Record<string, any>
    >;
  const offThread = () => metricSum(t.url, 'kvroute_preprocess_off_thread_total');

  it('reads a long completions prompt and a long chat off-thread, a short one inline, with the same ids', async () => {
    const before = await offThread();
    const text = prompt(LONG, 1);
    const long = await post('/v1/completions', { prompt: text, max_tokens: 2 });
    expect(long.usage.prompt_tokens).toBe(LONG); // the byte tokenizer: one id per byte, as inline
    expect(await offThread()).toBe(before + 1);

    const messages = [
      { role: 'system', content: text },
      { role: 'user', content: 'hi' },
    ];
    const chat = await post('/v1/chat/completions', { messages, max_tokens: 2 });
    // ChatML's markers around each message, then the generation prompt, as the inline path renders it.
    const rendered = `<|im_start|>system\n${text}<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n`;
    expect(chat.usage.prompt_tokens).toBe(Buffer.byteLength(rendered));
    expect(await offThread()).toBe(before + 2);

    const short = await post('/v1/completions', { prompt: prompt(200, 2), max_tokens: 2 });
    expect(short.usage.prompt_tokens).toBe(200);
    expect(await offThread()).toBe(before + 2);
  });

  it('answers a template refusal and a malformed long body with a 400, as inline', async () => {
    const bad = await fetch(`${t.url}/v1/chat/completions`, {
      method: 'POST',
      body: `{"messages": [{"role": "user", "content": "${prompt(LONG, 3)}"}], "max_tokens": 2,`,
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as any).error.code).toBe('invalid_json');
    const noRole = await fetch(`${t.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify({ messages: [{ content: prompt(LONG, 4) }] }) });
    expect(noRole.status).toBe(400);
  });

  it('never routes nor books a request whose client left while its prompt was tokenized off-thread', async () => {
    const decisions = () => metricSum(t.url, 'kvroute_routing_overhead_microseconds_count', 'phase="total"');
    const [decisionsBefore, disconnectsBefore] = [await decisions(), await metricSum(t.url, 'kvroute_client_disconnects_total')];
    const ac = new AbortController();
    // The client leaves on the turn after the body went to the libuv thread.
    const spy = vi.spyOn(t.router.metrics, 'offThreadRead').mockImplementation(() => void setImmediate(() => ac.abort()));
    try {
      const body = Buffer.from(
        JSON.stringify({
          messages: [
            { role: 'system', content: prompt(4 * LONG, 5) },
            { role: 'user', content: 'bye' },
          ],
          max_tokens: 4,
        }),
      );
      const reply = await t.router.handle({
        method: 'POST',
        url: '/v1/chat/completions',
        headers: { 'content-type': 'application/json' },
        body,
        signal: ac.signal,
      });
      expect(spy).toHaveBeenCalledOnce();
      expect(reply.status).toBe(499);
    } finally {
      spy.mockRestore();
    }
    expect(await decisions()).toBe(decisionsBefore);
    expect(await metricSum(t.url, 'kvroute_client_disconnects_total')).toBe(disconnectsBefore + 1);
    expect(await bookedLoad(t.url)).toEqual({ requests: 0, prefillTokens: 0, decodeBlocks: 0 });
  });
});

describe('the tokenizer prefix cache on /metrics', () => {
  let t: TestRouter;
  beforeAll(async () => {
    t = await startTestRouter({ decode: 1, kvBlocks: 32_768, config: { tokenizer: TINY_BPE } });
  });
  afterAll(async () => {
    await t?.close();
  });
  const post = async (path: string, body: object) =>
    (await fetch(`${t.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json() as Promise<
      Record<string, any>
    >;

  it('counts hits and the tokens they saved', async () => {
    const system = 'Follow the rules below. '.repeat(2000);
    const lookups = () => metricSum(t.url, 'kvroute_tokenizer_prefix_cache_lookups_total', 'result="hit"');
    const reused = () => metricSum(t.url, 'kvroute_tokenizer_prefix_cache_tokens_total', 'source="reused"');
    const [hitsBefore, savedBefore] = [await lookups(), await reused()];
    const answers = [];
    for (const user of ['one', 'two'])
      answers.push(
        await post('/v1/chat/completions', {
          messages: [
            { role: 'system', content: system },
            { role: 'user', content: user },
          ],
          max_tokens: 2,
        }),
      );
    expect(await lookups()).toBe(hitsBefore + 1);
    // The second request reused the system message's ids: all its prompt but the user turn and the generation prompt.
    const saved = (await reused()) - savedBefore;
    expect(saved).toBeGreaterThan(answers[1].usage.prompt_tokens - 20);
    expect(saved).toBeLessThan(answers[1].usage.prompt_tokens);
    expect(await metricSum(t.url, 'kvroute_tokenizer_prefix_cache_bytes')).toBeGreaterThan(system.length);
  });
});

describe('with the prefix cache off', () => {
  it('shows no cache samples, and prompts are tokenized as ever; the byte tokenizer never gets a cache', async () => {
    const tok = await loadHfTokenizer(TINY_BPE);
    const off = await startTestRouter({ decode: 1, kvBlocks: 32_768, config: { tokenizer: TINY_BPE, tokenizerCacheBytes: 0 } });
    const bytes = await startTestRouter({ decode: 1, kvBlocks: 32_768 });
    try {
      const system = 'Follow the rules below. '.repeat(2000);
      for (const user of ['a', 'b']) {
        const messages = [
          { role: 'system', content: system },
          { role: 'user', content: user },
        ];
        const answer = (await (
          await fetch(`${off.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify({ messages, max_tokens: 2 }) })
        ).json()) as any;
        expect(answer.usage.prompt_tokens).toBe(tok.encode(tok.chatTemplate!.render(messages)).length);
        await fetch(`${bytes.url}/v1/chat/completions`, { method: 'POST', body: JSON.stringify({ messages, max_tokens: 2 }) });
      }
      for (const t of [off, bytes]) expect(await (await fetch(`${t.url}/metrics`)).text()).not.toMatch(/^kvroute_tokenizer_prefix_cache_lookups_total\{/m);
    } finally {
      await off.close();
      await bytes.close();
    }
  });
});
