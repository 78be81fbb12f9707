// A request the router does not change reaches the engine as the client's own bytes; one it must
// change (a field filled in or removed, usage asked for, a handoff) is serialised again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRouter, type Router } from '../../../src/server/app/router.js';
import type { HttpReply } from '../../../src/server/call/call.js';
import { startFakeEngine, type FakeEngine } from '../../engines/fake-engine.js';

const MODEL = 'verbatim-test';

describe('engine request bodies', () => {
  let engine: FakeEngine;
  let router: Router;
  beforeAll(async () => {
    engine = await startFakeEngine({ id: 1, kind: 'vllm', role: 'aggregated' });
    router = await createRouter({
      model: MODEL,
      blockSize: 4,
      health: { intervalMs: 0 },
      workers: [{ id: 1, role: 'aggregated', kind: 'vllm', baseUrl: engine.url }],
    });
  });
  afterAll(async () => {
    await router?.close();
    await engine?.close();
  });

  async function send(text: string): Promise<{ reply: HttpReply; received: string }> {
    const before = engine.received.length;
    const reply = await router.handle({
      method: 'POST',
      url: '/v1/completions',
      headers: { 'content-type': 'application/json' },
      body: new TextEncoder().encode(text),
    });
    if (reply.stream) while ((await reply.stream.next()) !== null);
    expect(engine.received.length).toBe(before + 1);
    return { reply, received: engine.received[before].text };
  }

  it('forwards an unchanged body byte for byte (spacing and number spelling included)', async () => {
    const text = `{ "model": "${MODEL}", "prompt": [1, 2, 3, 4, 5],\n  "max_tokens": 2.0, "stream": false }`;
    const { reply, received } = await send(text);
    expect(reply.status).toBe(200);
    expect(received).toBe(text);
  });

  it('forwards an unchanged streamed body whose client asked for usage byte for byte', async () => {
    const text = `{"model": "${MODEL}", "prompt": [9, 8, 7, 6, 5], "max_tokens": 2, "stream": true, "stream_options": {"include_usage": true}}`;
    const { reply, received } = await send(text);
    expect(reply.status).toBe(200);
    expect(received).toBe(text);
  });

  it.each([
    ['the model is filled in', `{"prompt":[1,2,3],"max_tokens":2}`, (b: Record<string, unknown>) => expect(b.model).toBe(MODEL)],
    ['nvext is removed', `{"model":"${MODEL}","prompt":[1,2,3],"max_tokens":2,"nvext":{}}`, (b: Record<string, unknown>) => expect('nvext' in b).toBe(false)],
    [
      'usage is asked for',
      `{"model":"${MODEL}","prompt":[1,2,3],"max_tokens":2,"stream":true}`,
      (b: Record<string, unknown>) => expect(b.stream_options).toEqual({ include_usage: true }),
    ],
    [
      'a text prompt becomes token ids',
      `{"model":"${MODEL}","prompt":"abc","max_tokens":2}`,
      (b: Record<string, unknown>) => expect(b.prompt).toEqual([97, 98, 99]),
    ],
  ])('serialises the body again when %s', async (_what, text, check) => {
    const { reply, received } = await send(text);
    expect(reply.status).toBe(200);
    expect(received).not.toBe(text);
    check(JSON.parse(received) as Record<string, unknown>);
  });

  it('serialises the parse of a body with invalid UTF-8 (what the engine got before)', async () => {
    const head = new TextEncoder().encode(`{"model": "${MODEL}", "prompt": [1, 2, 3], "max_tokens": 2, "user": "`);
    const tail = new TextEncoder().encode('"}');
    const bytes = new Uint8Array([...head, 0xff, ...tail]);
    const before = engine.received.length;
    const reply = await router.handle({ method: 'POST', url: '/v1/completions', headers: {}, body: bytes });
    expect(reply.status).toBe(200);
    const received = engine.received[before];
    expect((received.body as { user: string }).user).toBe('\ufffd');
    expect(received.text).toBe(JSON.stringify(received.body)); // re-serialised, not the client's spacing
  });
});
