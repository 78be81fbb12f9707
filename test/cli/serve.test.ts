import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { HELP, SERVE_OPTIONS, serveOptions } from '../../src/cli/serve.js';
import { UsageError } from '../../src/cli/usage.js';
import { parseRouterConfig } from '../../src/server/config/config.js';

const example = fileURLToPath(new URL('../../examples/fleet.json', import.meta.url));

async function opts(argv: string[], env: NodeJS.ProcessEnv = {}) {
  const o = await serveOptions(argv, env);
  if (o === 'help') throw new Error('unexpected help');
  return o;
}

describe('kvroute serve options', () => {
  it('serves the embedded fleet on 127.0.0.1:8000 with --embedded (npm start)', async () => {
    const o = await opts(['--embedded']);
    expect(o.config.host).toBe('127.0.0.1');
    expect(o.config.port).toBe(8000);
    expect(o.embedded).toEqual({ prefill: 2, decode: 2, style: 'vllm', speedup: 1 });
  });

  it('lets PORT and HOST override the defaults, and flags override the environment', async () => {
    const o = await opts(['--embedded'], { PORT: '9100', HOST: '0.0.0.0' });
    expect(o.config.port).toBe(9100);
    expect(o.config.host).toBe('0.0.0.0');
    expect((await opts(['--embedded', '--port', '9200'], { PORT: '9100' })).config.port).toBe(9200);
    await expect(serveOptions([], { PORT: 'eighty' })).rejects.toThrow(/PORT must be an integer/);
  });

  it('serves a configured fleet from --config, with flags layered on top', async () => {
    const o = await opts(['--config', example, '--port', '0', '--policy', 'round_robin', '--admin-token', 't0k']);
    expect(o.embedded).toBeUndefined();
    expect(o.config.port).toBe(0);
    expect(o.config.workers.map((w) => w.id)).toEqual([1, 2, 11, 12]);
    expect(o.config.workers[2].kvEvents).toEqual(['tcp://10.0.0.21:5557', 'tcp://10.0.0.21:5558']);
    expect(o.config.decode.policy).toBe('round_robin');
    expect(o.config.decode.maxQueuedPrefillTokens).toBe(262144);
    expect(o.config.adminToken).toBe('t0k');
    expect((await opts(['--embedded', '--admin-port', '9300'])).config.adminPort).toBe(9300);
    await expect(serveOptions(['--admin-port', '70000'], {})).rejects.toThrow(/--admin-port/);
  });

  it('turns session affinity on with --session-header (and --session-ttl-ms)', async () => {
    expect((await opts(['--embedded'])).config.sessionAffinity).toBeUndefined();
    expect((await opts(['--embedded', '--session-header', 'X-Conversation'])).config.sessionAffinity).toEqual({
      header: 'x-conversation',
      ttlMs: 600_000,
      maxSessions: 100_000,
    });
    expect((await opts(['--embedded', '--session-ttl-ms', '5000'])).config.sessionAffinity).toMatchObject({ header: 'x-session-id', ttlMs: 5000 });
    await expect(serveOptions(['--session-ttl-ms', '0'], {})).rejects.toThrow(/--session-ttl-ms/);
    await expect(serveOptions(['--session-header', 'bad header'], {})).rejects.toThrow(/--session-header must be an HTTP header name, got 'bad header'/);
  });

  it('shares state with other replicas with --nats (and --replica-id, --replica-cluster, --replica-ttl-ms)', async () => {
    expect((await opts(['--embedded'])).config.replicas).toBeUndefined();
    const o = await opts([
      '--embedded',
      '--nats',
      'nats://10.0.0.5:4222,nats://10.0.0.6:4222',
      '--replica-id',
      'r-1',
      '--replica-cluster',
      'llama',
      '--replica-ttl-ms',
      '3000',
    ]);
    // The defaults themselves are checked in test/server/config.
    const defaults = parseRouterConfig({ replicas: { nats: 'nats://x:1' } }).replicas;
    expect(o.config.replicas).toEqual(
      Object.assign({}, defaults, { nats: 'nats://10.0.0.5:4222,nats://10.0.0.6:4222', id: 'r-1', cluster: 'llama', ttlMs: 3000 }),
    );
    await expect(serveOptions(['--nats', 'http://10.0.0.5:4222'], {})).rejects.toThrow(/--nats must be nats:\/\/host:port/);
    await expect(serveOptions(['--nats', 'nats://h:1', '--replica-id', 'a b'], {})).rejects.toThrow(/--replica-id/);
    await expect(serveOptions(['--replica-id', 'a'], {})).rejects.toThrow(/replicas.nats/);
    await expect(serveOptions(['--nats', 'nats://h:1', '--replica-ttl-ms', '1500'], {})).rejects.toThrow(/at least twice replicas.heartbeatMs/);
  });

  it('takes the warm start settings of a replica (--no-warm-start, --warm-start-timeout-ms, --snapshot-interval-ms)', async () => {
    const o = await opts(['--embedded', '--nats', 'nats://h:1', '--no-warm-start', '--warm-start-timeout-ms', '9000', '--snapshot-interval-ms', '0']);
    expect(o.config.replicas).toMatchObject({ warmStart: false, warmStartTimeoutMs: 9000, snapshotIntervalMs: 0 });
    await expect(serveOptions(['--nats', 'nats://h:1', '--warm-start-timeout-ms', 'soon'], {})).rejects.toThrow(/--warm-start-timeout-ms/);
    await expect(serveOptions(['--nats', 'nats://h:1', '--snapshot-interval-ms', '10'], {})).rejects.toThrow(
      /snapshotIntervalMs must be 0 \(never\) or at least 1000/,
    );
  });

  it('adds --worker flags to the fleet', async () => {
    const o = await opts([
      '--worker',
      'id=1,role=aggregated,url=http://127.0.0.1:9001,events=tcp://127.0.0.1:5557',
      '--worker',
      'id=2,url=http://127.0.0.1:9002',
    ]);
    expect(o.embedded).toBeUndefined();
    expect(o.config.workers.map((w) => [w.id, w.role])).toEqual([
      [1, 'aggregated'],
      [2, 'aggregated'],
    ]);
  });

  it('reads the failover and ejection flags', async () => {
    const o = await opts(['--embedded', '--max-retries', '0', '--ejection-base-ms', '5000', '--max-ejection-percent', '25']);
    expect(o.config.maxRetries).toBe(0);
    expect(o.config.outlierDetection).toMatchObject({ enabled: true, baseEjectionTimeMs: 5000, maxEjectionPercent: 25 });
    expect((await opts(['--embedded', '--no-ejection'])).config.outlierDetection.enabled).toBe(false);
    expect((await opts(['--embedded'])).config).toMatchObject({ maxRetries: 2, outlierDetection: { enabled: true } });
    await expect(serveOptions(['--max-retries', 'many'], {})).rejects.toThrow(/--max-retries/);
    await expect(serveOptions(['--max-ejection-percent', '150'], {})).rejects.toThrow(/--max-ejection-percent/);
  });

  it('reads the operations settings: log level, drain timeout, ports, TLS, limits, secrets in files', async () => {
    const o = await opts(
      [
        '--embedded',
        '--log-level',
        'debug',
        '--drain-timeout-ms',
        '5000',
        '--reuse-port',
        '--tls-cert',
        'c.pem',
        '--tls-key',
        'k.pem',
        '--max-tokens-limit',
        '8192',
        '--admin-token-file',
        '/run/secrets/admin',
        '--api-keys-file',
        'keys.txt',
        '--key-requests-per-minute',
        '60',
        '--key-tokens-per-minute',
        '100000',
      ],
      {},
    );
    expect(o.config).toMatchObject({
      logLevel: 'debug',
      drainTimeoutMs: 5000,
      reusePort: true,
      tls: { certFile: 'c.pem', keyFile: 'k.pem' },
      maxTokensLimit: 8192,
      adminTokenFile: '/run/secrets/admin',
      apiKeysFile: 'keys.txt',
      rateLimit: { requestsPerMinute: 60, tokensPerMinute: 100000 },
    });
    const d = await opts(['--embedded']);
    expect(d.config).toMatchObject({ logLevel: 'info', drainTimeoutMs: 30_000, reusePort: false, maxTokensLimit: 1_048_576, rateLimit: {} });
    expect((await opts(['--embedded'], { KVROUTE_LOG_LEVEL: 'warn', KVROUTE_ADMIN_TOKEN_FILE: '/t' })).config).toMatchObject({
      logLevel: 'warn',
      adminTokenFile: '/t',
    });
    await expect(serveOptions(['--log-level', 'loud'], {})).rejects.toThrow(
      /--log-level must be one of fatal, error, warn, info, debug, trace, silent, got 'loud'/,
    );
  });

  it('reads API keys from KVROUTE_API_KEYS, never echoing one in an error', async () => {
    const o = await opts(['--embedded'], { KVROUTE_API_KEYS: 'team-a:sk-aaaaaaaaaaaaaaaaaaaa,team-b:sk-bbbbbbbbbbbbbbbbbbbb' });
    expect(o.apiKeys?.map((k) => k.name)).toEqual(['team-a', 'team-b']);
    const bad = serveOptions([], { KVROUTE_API_KEYS: 'team-a:short-secret' });
    await expect(bad).rejects.toBeInstanceOf(UsageError);
    await expect(serveOptions([], { KVROUTE_API_KEYS: 'team-a:short-secret' })).rejects.toThrow(
      /^KVROUTE_API_KEYS line 1: the key of 'team-a' must be 16 to 512/,
    );
    await expect(serveOptions([], { KVROUTE_API_KEYS: 'team-a:short-secret' })).rejects.not.toThrow(/short-secret/);
  });

  it('says in --help that the command line shows in ps, and how signals drain', () => {
    expect(HELP).toMatch(/--admin-token TOKEN +bearer token of \/admin \(on the command line it shows in `ps`/);
    expect(HELP).toContain('--admin-token-file FILE');
    expect(HELP).toMatch(/Secrets: the command line shows in `ps`/);
    expect(HELP).toMatch(/A second signal exits at once/);
  });

  it('reads a chat template file', async () => {
    const o = await opts(['--embedded', '--chat-template', example]);
    expect(o.config.chatTemplate).toContain('"workers"');
    await expect(serveOptions(['--chat-template', '/nonexistent/template.jinja'], {})).rejects.toThrow(/--chat-template: cannot read/);
  });

  it('reads the embedded fleet shape', async () => {
    const o = await opts(['--embedded', '--embedded-prefill', '0', '--embedded-decode', '3', '--embedded-style', 'sglang', '--speedup', '50']);
    expect(o.embedded).toEqual({ prefill: 0, decode: 3, style: 'sglang', speedup: 50 });
    expect((await opts(['--embedded', '--embedded-offload-blocks', '65536'])).embedded).toMatchObject({ offloadBlocks: 65536 });
  });

  it.each([
    [['--port', '70000'], /--port must be an integer in \[0, 65535\]/],
    [['--policy', 'best'], /--policy must be one of kv/],
    [['--worker', 'id=1,role=boss,url=http://h:1'], /role must be one of aggregated, prefill, decode/],
    [['--embedded-style', 'tgi'], /--embedded-style must be one of vllm, sglang, trtllm, got 'tgi'/],
    [['--speedup', '0'], /--speedup must be a positive number/],
    [['--embedded', '--worker', 'id=1,url=http://h:1'], /--embedded serves its own simulated fleet/],
    [['--block-size', '0'], /--block-size must be an integer/],
    [['--embedded-offload-blocks', '1.5'], /--embedded-offload-blocks must be an integer/],
    [['--embedded-offload-blocks', String(2 ** 29)], /--embedded-offload-blocks must be an integer/],
  ])('refuses %j with a usage error', async (argv, message) => {
    const p = serveOptions(argv, {});
    await expect(p).rejects.toBeInstanceOf(UsageError);
    await expect(serveOptions(argv, {})).rejects.toThrow(message);
  });

  it('refuses an empty fleet, naming the workers setting and --embedded, unless workers may arrive later', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kvroute-serve-'));
    const file = join(dir, 'c.json');
    writeFileSync(file, JSON.stringify({ workers: [] }));
    for (const argv of [['--config', file], []]) {
      const p = serveOptions(argv, {});
      await expect(p).rejects.toBeInstanceOf(UsageError);
      await expect(serveOptions(argv, {})).rejects.toThrow(
        /no workers: list the engines in the config's `workers` \(or with --worker\), or give --allow-empty-fleet .*; --embedded serves a simulated fleet/,
      );
    }
    // The simulated fleet only when asked for, by --embedded or its shape flags with it.
    await expect(serveOptions(['--embedded-decode', '1'], {})).rejects.toThrow(/--embedded-decode shapes the simulated fleet: add --embedded/);
    for (const o of [await opts(['--config', file, '--allow-empty-fleet']), await opts(['--allow-empty-fleet'])]) {
      expect(o.embedded).toBeUndefined();
      expect(o.config.workers).toEqual([]);
      expect(o.config.allowEmptyFleet).toBe(true);
    }
    writeFileSync(file, JSON.stringify({ workers: [], allowEmptyFleet: true }));
    expect((await opts(['--config', file])).embedded).toBeUndefined();
  });

  it('refuses unknown flags and answers --help', async () => {
    await expect(serveOptions(['--colour'], {})).rejects.toThrow(/Unknown option '--colour'/);
    expect(await serveOptions(['--help'], {})).toBe('help');
  });

  it('documents every flag it takes in --help', () => {
    for (const flag of Object.keys(SERVE_OPTIONS)) expect(HELP, flag).toMatch(new RegExp(`^  (-\\w, )?--${flag}\\b`, 'm'));
  });
});

describe('kvroute serve as a process', () => {
  it('prints its URL and a working curl command, serves it, and stops cleanly on SIGINT', async () => {
    const root = fileURLToPath(new URL('../..', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve', '--embedded', '--port', '0', '--speedup', '100'], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stdout += c.toString()));
    try {
      const end = Date.now() + 30_000;
      while (!/Ctrl-C stops everything/.test(stdout)) {
        if (Date.now() > end || child.exitCode !== null) throw new Error(`serve did not start:\n${stdout}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout)![1];
      // The banner's curl command, replayed with fetch: same URL, same body.
      const curl = /curl -N -i (\S+) -H 'content-type: application\/json' -d '([^']+)'/.exec(stdout)!;
      expect(curl[1]).toBe(`${url}/v1/chat/completions`);
      const res = await fetch(curl[1], { method: 'POST', headers: { 'content-type': 'application/json' }, body: curl[2] });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-kvroute-mode')).toBe('disaggregated');
      expect(res.headers.get('x-kvroute-prefill-worker')).toMatch(/^[01]$/);
      expect(res.headers.get('x-kvroute-decode-worker')).toMatch(/^[23]$/);
      const text = await res.text();
      expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
      // Started without the router's V8 flags: it says which to set.
      expect(stdout).toMatch(/run the router with NODE_OPTIONS='--max-semi-space-size=8'/);
      const metrics = await (await fetch(`${url}/metrics`)).text();
      expect(metrics).toMatch(/kvroute_requests_total\{route="\/v1\/chat\/completions",model="[^"]+",status="200"\} 1/);
    } finally {
      if (child.exitCode === null) child.kill('SIGINT');
    }
    const code = await new Promise((r) => (child.exitCode !== null ? r(child.exitCode) : child.on('exit', r)));
    expect(code).toBe(0);
    expect(stdout).toMatch(/"signal":"SIGINT".*stopping: draining/);
    expect(stdout).toMatch(/stopped: 0 requests were in flight, 0 cut, 0 bookings left/);
  });
});
