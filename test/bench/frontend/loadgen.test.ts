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

describe('a traced run', () => {
  it('tags each request with its place and returns its send and done times', async () => {
    const ids: string[] = [];
    server = createServer((req, res) => {
      ids.push(String(req.headers['x-request-id']));
      req.resume();
      req.on('end', () => res.end(ids.length === 2 ? '' : 'ok'));
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    const before = Number(process.hrtime.bigint());
    const r = await runLoad({ url: `http://127.0.0.1:${port}`, path: '/', body: 'b', concurrency: 1, requests: 3, maxMs: 10_000, trace: 'run.' });
    const after = Number(process.hrtime.bigint());
    expect(ids).toEqual(['run.0', 'run.1', 'run.2']);
    expect(r.trace!.sentNs.length).toBe(3);
    for (let i = 0; i < 3; i++) {
      expect(r.trace!.sentNs[i]).toBeGreaterThanOrEqual(before);
      expect(r.trace!.doneNs[i]).toBeGreaterThan(r.trace!.sentNs[i]);
      expect(r.trace!.doneNs[i]).toBeLessThanOrEqual(after);
    }
    // Untraced runs carry no trace and no ids.
    ids.length = 0;
    const plain = await runLoad({ url: `http://127.0.0.1:${port}`, path: '/', body: 'b', concurrency: 1, requests: 1, maxMs: 10_000 });
    expect(plain.trace).toBeUndefined();
    expect(ids).toEqual(['undefined']);
  });
});

describe.each(['request', 'dispatch'] as const)('the %s client', (client) => {
  it('reads every response to its end, and counts non-200 answers and transport errors as failures', async () => {
    let n = 0;
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const i = n++;
        if (i % 3 === 2) {
          res.statusCode = 503;
          res.end('busy');
          return;
        }
        // A body in two writes 30 ms apart: the request is done only at the second.
        res.write('first part ');
        setTimeout(() => res.end('last part'), 30);
      });
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    const r = await runLoad({ url: `http://127.0.0.1:${port}`, path: '/', body: 'b', concurrency: 2, requests: 6, maxMs: 10_000, client });
    expect(r).toMatchObject({ completed: 4, failed: 2, firstError: 'status 503' });
    expect(r.latenciesMs.length).toBe(4);
    expect(r.latenciesMs[0]).toBeGreaterThanOrEqual(29); // the last write's delay, not the head's arrival

    // Nothing listening: every request fails with the transport's error, none is lost.
    await new Promise<void>((resolve) => server!.close(() => resolve()));
    server = undefined;
    const refused = await runLoad({ url: `http://127.0.0.1:${port}`, path: '/', body: 'b', concurrency: 2, requests: 4, maxMs: 10_000, client });
    expect(refused).toMatchObject({ completed: 0, failed: 4 });
    expect(refused.firstError).toMatch(/ECONNREFUSED|connect/);
  });
});
