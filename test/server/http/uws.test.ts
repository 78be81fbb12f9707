// The uWebSockets.js frontend's listener: HTTPS with a certificate and key (a self-signed pair made
// here with openssl), a clear error for files that are missing or do not match, and a busy port
// refused unless both sides share it.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type StartedServer } from '../../../src/server/app/start.js';
import { parseRouterConfig } from '../../../src/server/config/config.js';
import { listenUws } from '../../../src/server/http/uws.js';
import { freePort } from '../../helpers/processes.js';

const dir = mkdtempSync(join(tmpdir(), 'kvroute-tls-'));
const certFile = join(dir, 'cert.pem');
const keyFile = join(dir, 'key.pem');
const embedded = { prefill: 0, decode: 1, style: 'vllm' as const, speedup: 100 };

beforeAll(() => {
  // A self-signed certificate for 127.0.0.1, valid one day.
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
});

describe('TLS', () => {
  let started: StartedServer | undefined;
  afterAll(async () => {
    await started?.close();
  });

  it('serves HTTPS with the given certificate, streams included', async () => {
    started = await startServer({
      config: parseRouterConfig({ port: 0, health: { intervalMs: 0 }, tls: { certFile, keyFile }, logLevel: 'silent' }),
      embedded,
    });
    expect(started.server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(started.banner()).toContain(`${started.server.url}/v1/chat/completions`);
    const dispatcher = new Agent({ connect: { ca: readFileSync(certFile) } });
    const res = await undiciFetch(`${started.server.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'hello', max_tokens: 4, stream: true }),
      dispatcher,
    });
    expect(res.status).toBe(200);
    expect((await res.text()).endsWith('data: [DONE]\n\n')).toBe(true);
    // Plain HTTP on the TLS port gets no HTTP answer, and an unknown certificate is refused by the client.
    await expect(fetch(`${started.server.url.replace('https:', 'http:')}/health`)).rejects.toThrow();
    await expect(fetch(`${started.server.url}/health`)).rejects.toThrow();
    await dispatcher.close();
  });

  it('refuses files that are missing or do not make a pair, naming them', async () => {
    const handler = { handle: async () => ({ status: 200, headers: {}, body: '' }), config: { maxBodyBytes: 1024 } };
    await expect(listenUws(handler, { port: 0, tls: { certFile: join(dir, 'none.pem'), keyFile } })).rejects.toThrow(
      `cannot read the TLS certificate ${join(dir, 'none.pem')}: ENOENT`,
    );
    const otherKey = join(dir, 'other-key.pem');
    writeFileSync(otherKey, execFileSync('openssl', ['genpkey', '-algorithm', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1']));
    await expect(listenUws(handler, { port: 0, tls: { certFile, keyFile: otherKey } })).rejects.toThrow(
      `the TLS certificate ${certFile} and key ${otherKey} are not a usable pair`,
    );
    expect(() => parseRouterConfig({ tls: { certFile } })).toThrow(/tls\.keyFile/);
  });
});

describe('a busy port', () => {
  it('is refused with its address in the error, unless both listeners share it', async () => {
    const handler = { handle: async () => ({ status: 200, headers: {}, body: 'ok' }), config: { maxBodyBytes: 1024 } };
    const port = await freePort();
    const first = await listenUws(handler, { port });
    try {
      await expect(listenUws(handler, { port })).rejects.toThrow(`cannot listen on 127.0.0.1:${port} (router): the port is in use by another process`);
    } finally {
      await first.close();
    }
    const shared = await freePort();
    const a = await listenUws(handler, { port: shared, reusePort: true });
    const b = await listenUws(handler, { port: shared, reusePort: true });
    expect(b.port).toBe(a.port);
    await a.close();
    await b.close();
  });
});
