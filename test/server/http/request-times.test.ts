// The uWS frontend's per-request timestamps (request-times.ts): published on the diagnostics
// channel for plain and streamed replies while something subscribes, nothing kept otherwise.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterEach, describe, expect, it } from 'vitest';
import { listenUws, type RunningServer } from '../../../src/server/http/uws.js';
import { beginTimes, REQUEST_TIMES_CHANNEL, type RequestTimes } from '../../../src/server/http/request-times.js';
import type { HttpCall, HttpReply } from '../../../src/server/call/call.js';

let server: RunningServer | undefined;
const seen: RequestTimes[] = [];
const collect = (m: unknown) => seen.push(m as RequestTimes);
afterEach(async () => {
  unsubscribe(REQUEST_TIMES_CHANNEL, collect);
  seen.length = 0;
  await server?.close();
  server = undefined;
});

function frames(list: string[]): HttpReply['stream'] {
  return { next: async () => list.shift() ?? null, cancel: () => {} };
}

async function serve(): Promise<string> {
  const handler = {
    config: { maxBodyBytes: 1 << 20 },
    handle: async (call: HttpCall): Promise<HttpReply> =>
      call.url === '/stream'
        ? { status: 200, headers: { 'content-type': 'text/event-stream' }, stream: frames(['data: 1\n\n', 'data: 2\n\n']) }
        : { status: 201, headers: {}, body: `got ${(call.body as Uint8Array | undefined)?.byteLength ?? 0}` },
  };
  server = await listenUws(handler, { port: 0 });
  return server.url;
}

describe('request times', () => {
  it('are published once per answered request, in order, with the client request id', async () => {
    subscribe(REQUEST_TIMES_CHANNEL, collect);
    const url = await serve();
    const before = process.hrtime.bigint();
    const plain = await fetch(`${url}/plain`, { method: 'POST', body: 'x'.repeat(100_000), headers: { 'x-request-id': 'run.7' } });
    expect(await plain.text()).toBe('got 100000');
    const streamed = await fetch(`${url}/stream`, { method: 'POST', body: '{}' });
    expect(await streamed.text()).toBe('data: 1\n\ndata: 2\n\n');
    const after = process.hrtime.bigint();
    expect(seen.map((t) => [t.requestId, t.status])).toEqual([
      ['run.7', 201],
      [undefined, 200],
    ]);
    for (const t of seen) {
      expect(t.receivedNs).toBeGreaterThanOrEqual(before);
      expect(t.bodyNs).toBeGreaterThanOrEqual(t.receivedNs);
      expect(t.endedNs).toBeGreaterThanOrEqual(t.bodyNs);
      expect(t.endedNs).toBeLessThanOrEqual(after);
    }
  });

  it('are not taken while nothing subscribes', async () => {
    expect(beginTimes('a')).toBeUndefined();
    const url = await serve();
    expect((await fetch(`${url}/plain`, { method: 'POST', body: 'y' })).status).toBe(201);
    subscribe(REQUEST_TIMES_CHANNEL, collect);
    expect(beginTimes('a')).toMatchObject({ requestId: 'a' });
    expect(seen).toEqual([]);
  });
});
