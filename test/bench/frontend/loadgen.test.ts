import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { runLoad } from '../../../bench/frontend/loadgen.js';

let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

describe('the load generator', () => {
  it('sends the bodies in turn when given several', async () => {
    const seen: string[] = [];
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        seen.push(body);
        res.end('ok');
      });
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    const r = await runLoad({ url: `http://127.0.0.1:${port}`, path: '/', body: 'unused', bodies: ['a', 'b'], concurrency: 1, requests: 5, maxMs: 10_000 });
    expect(r.completed).toBe(5);
    expect(seen).toEqual(['a', 'b', 'a', 'b', 'a']);
  });
});
