// The faults suite's load: each request's fate classified (answered to [DONE], or failed: an error
// status, an error frame, a stream without [DONE], a refused connection) and timed against the kill.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { runLoad } from '../../../bench/faults/load.js';

let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
});

describe('runLoad', () => {
  it('classifies every request and places it before or after the kill', async () => {
    // The requests from the 21st on (sent after the kill) fail in turns: 503, an error frame, a stream cut short.
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const i = Number(/request (\d+):/.exec(body)?.[1]);
        const failing = i >= 20 ? i % 4 : 3;
        if (failing === 0) {
          res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":{"message":"x"}}');
          return;
        }
        res.writeHead(200, { 'content-type': 'text/event-stream', 'x-kvroute-decode-worker': String(1 + (i % 3)) });
        if (failing === 1) res.end('data: {"error":{"message":"broke"}}\n\n');
        else if (failing === 2) res.end('data: {"choices":[{"text":"a"}]}\n\n');
        else res.end('data: {"choices":[{"text":"a"}]}\n\ndata: [DONE]\n\n');
      });
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const run = await runLoad({ url, ratePerS: 200, beforeMs: 100, afterMs: 100, maxTokens: 1, tag: 't', victim: 2, kill: async () => {} });
    expect(run.outcomes).toHaveLength(40);
    expect(run.victim).toBe(2);
    const before = run.outcomes.filter((o) => o.sentMs < 0);
    const after = run.outcomes.filter((o) => o.sentMs >= 0);
    expect(before).toHaveLength(20);
    expect(before.every((o) => o.ok && o.status === 200 && o.worker !== undefined)).toBe(true);
    expect(after.map((o) => (o.ok ? 'ok' : o.status))).toEqual(Array.from({ length: 20 }, (_, k) => (k % 4 === 3 ? 'ok' : k % 4 === 0 ? 503 : 200)));
    expect(after.filter((o) => o.status === 503).every((o) => o.worker === undefined)).toBe(true);
    await new Promise<void>((r) => server!.close(() => r()));
    server = undefined;
    const refused = await runLoad({ url, ratePerS: 100, beforeMs: 0, afterMs: 30, maxTokens: 1, tag: 'r', victim: 1, kill: async () => {} });
    expect(refused.outcomes.every((o) => !o.ok && o.status === 0)).toBe(true);
  });
});
