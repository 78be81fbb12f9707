import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { startInstantEngine, type InstantEngine } from '../../../bench/frontend/instant-engine.js';
import { parseSseText } from '../../../src/engines/sse.js';

const engines: InstantEngine[] = [];
afterEach(() => {
  for (const e of engines.splice(0)) e.close();
});

async function stream(url: string, maxTokens: number): Promise<{ chunks: number; events: string[] }> {
  const res = await request(`${url}/v1/completions`, { method: 'POST', body: JSON.stringify({ prompt: [1, 2, 3], max_tokens: maxTokens, stream: true }) });
  let chunks = 0;
  let text = '';
  for await (const c of res.body) {
    chunks++;
    text += c.toString();
  }
  return { chunks, events: parseSseText(text).map((e) => e.data) };
}

describe('bench instant engine', () => {
  it('streams the same answer in one write or a write per token', async () => {
    const whole = await startInstantEngine(5);
    const paced = await startInstantEngine(5, { tokenGapMs: 1 });
    engines.push(whole, paced);
    const a = await stream(whole.url, 5);
    const b = await stream(paced.url, 5);
    const shape = (events: string[]) => events.map((d) => (d === '[DONE]' ? d : (JSON.parse(d) as { choices: unknown[] }).choices.length));
    expect(shape(a.events)).toEqual([1, 1, 1, 1, 1, 0, '[DONE]']);
    expect(shape(b.events)).toEqual(shape(a.events));
    expect(b.chunks).toBeGreaterThan(a.chunks); // the tokens arrived apart
  });

  it('answers 404 at once on any other route (routers probe /v1/models and load endpoints)', async () => {
    const engine = await startInstantEngine(1);
    engines.push(engine);
    for (const [method, path] of [
      ['GET', '/v1/models'],
      ['GET', '/v1/loads'],
      ['POST', '/generate'],
    ] as const) {
      const res = await request(`${engine.url}${path}`, { method, headersTimeout: 2_000 });
      expect(res.statusCode, path).toBe(404);
      await res.body.dump();
    }
  });

  it('stops writing to a client that left, and serves the next one', async () => {
    const paced = await startInstantEngine(200, { tokenGapMs: 1 });
    engines.push(paced);
    const res = await request(`${paced.url}/v1/completions`, { method: 'POST', body: JSON.stringify({ prompt: [1], max_tokens: 200, stream: true }) });
    for await (const _ of res.body) {
      res.body.destroy(); // leave after the first chunk
      break;
    }
    await new Promise((r) => setTimeout(r, 20));
    expect((await stream(paced.url, 3)).events.at(-1)).toBe('[DONE]');
  });
});
