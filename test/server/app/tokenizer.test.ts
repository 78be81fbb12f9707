// A router configured with a HuggingFace model directory: prompts are tokenized with its
// tokenizer.json and chats rendered with its chat template before routing, and the engine gets
// those ids.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadHfTokenizer } from '../../../src/preprocess/hf-tokenizer.js';
import { createRouter } from '../../../src/server/app/router.js';
import { startTestRouter, type TestRouter } from '../helpers/router.js';

const TINY_MODEL = fileURLToPath(new URL('../../fixtures/tiny-model', import.meta.url));

describe('a router with a HuggingFace tokenizer', () => {
  let t: TestRouter;
  beforeAll(async () => {
    t = await startTestRouter({ decode: 1, config: { tokenizer: TINY_MODEL } });
  });
  afterAll(async () => {
    await t?.close();
  });

  const post = async (path: string, body: object) =>
    (await fetch(`${t.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json() as Promise<
      Record<string, any>
    >;

  it('tokenizes completions prompts with the model tokenizer', async () => {
    const route = await post('/v1/route', { prompt: 'hello world hello' });
    expect(route.prompt_tokens).toBe(3); // three words, not 17 bytes
    const answer = await post('/v1/completions', { prompt: 'hello world hello', max_tokens: 2 });
    expect(answer.usage.prompt_tokens).toBe(3); // what the engine received
  });

  it('renders chats with the model chat template, then tokenizes them', async () => {
    const tok = await loadHfTokenizer(TINY_MODEL);
    const messages = [{ role: 'user', content: 'hello world' }];
    const expected = tok.encode(tok.chatTemplate!.render(messages)).length;
    expect((await post('/v1/route', { messages })).prompt_tokens).toBe(expected);
    const answer = await post('/v1/chat/completions', { messages, max_tokens: 2 });
    expect(answer.object).toBe('chat.completion');
    expect(answer.usage.prompt_tokens).toBe(expected);
  });

  it('fails to start with a clear error when the directory holds no tokenizer', async () => {
    await expect(createRouter({ tokenizer: `${TINY_MODEL}/nope`, workers: [] })).rejects.toThrow(/cannot load the tokenizer of .*nope: ENOENT/);
  });
});
