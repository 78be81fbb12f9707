import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { configToInput, loadConfigFile, parseRouterConfig, parseWorkerConfig } from '../../../src/server/config/config.js';

describe('parseRouterConfig', () => {
  it('fills the defaults', () => {
    const c = parseRouterConfig({});
    expect(c.host).toBe('127.0.0.1');
    expect(c.port).toBe(8000);
    expect(c.models).toEqual(['kvroute-sim']);
    expect(c.tokenizer).toEqual({ type: 'byte' });
    expect(c.blockSize).toBe(16);
    expect(c.decode.policy).toBe('ttft');
    expect(c.prefill).toEqual(c.decode);
    expect(c.fallbackToAggregated).toBe(true);
    expect(c.workers).toEqual([]);
    expect(c.lowerTiers).toBe(true);
    expect([c.decode.hostCacheCredit, c.decode.diskCacheCredit, c.decode.externalCacheCredit]).toEqual([0.75, 0.25, 0.25]);
  });

  it("takes the ttft policy's timing model, any part of it", () => {
    const c = parseRouterConfig({ routing: { ttftModel: { prefill: { c: 5 }, maxNumBatchedTokens: 4096, reloadMsPerToken: { disk: 0.1 } } } });
    expect(c.decode.ttftModel).toEqual({ prefill: { c: 5 }, maxNumBatchedTokens: 4096, reloadMsPerToken: { disk: 0.1 } });
    expect(c.prefill.ttftModel).toEqual(c.decode.ttftModel);
    expect(() => parseRouterConfig({ routing: { ttftModel: { prefill: { d: 1 } } } })).toThrow(/routing\.ttftModel\.prefill: unknown field 'd'/);
    expect(() => parseRouterConfig({ routing: { ttftModel: { maxNumBatchedTokens: 0 } } })).toThrow(RangeError);
  });

  it('takes forwardPriority: off by default, a boolean, anything else refused', () => {
    expect(parseRouterConfig({}).forwardPriority).toBe(false);
    expect(parseRouterConfig({ forwardPriority: true }).forwardPriority).toBe(true);
    for (const bad of ['yes', 1, null]) expect(() => parseRouterConfig({ forwardPriority: bad })).toThrow(/forwardPriority/);
  });

  it('takes the lower tiers switch and their credit per pool', () => {
    const c = parseRouterConfig({ lowerTiers: false, routing: { hostCacheCredit: 0.5 }, prefillRouting: { diskCacheCredit: 0 } });
    expect(c.lowerTiers).toBe(false);
    expect([c.decode.hostCacheCredit, c.decode.diskCacheCredit]).toEqual([0.5, 0.25]);
    expect([c.prefill.hostCacheCredit, c.prefill.diskCacheCredit]).toEqual([0.5, 0]);
  });

  it('reads session affinity: off by default, true for the defaults, or its settings', () => {
    expect(parseRouterConfig({}).sessionAffinity).toBeUndefined();
    expect(parseRouterConfig({ sessionAffinity: false }).sessionAffinity).toBeUndefined();
    expect(parseRouterConfig({ sessionAffinity: true }).sessionAffinity).toEqual({ header: 'x-session-id', ttlMs: 600_000, maxSessions: 100_000 });
    expect(parseRouterConfig({ sessionAffinity: { header: 'X-Chat', maxSessions: 10 } }).sessionAffinity).toEqual({
      header: 'x-chat',
      ttlMs: 600_000,
      maxSessions: 10,
    });
    expect(() => parseRouterConfig({ sessionAffinity: { header: 'a:b' } })).toThrow(/sessionAffinity.header/);
    expect(() => parseRouterConfig({ sessionAffinity: { ttl: 5 } })).toThrow(/unknown field 'ttl'/);
    expect(() => parseRouterConfig({ sessionAffinity: { ttlMs: -1 } })).toThrow(/sessionAffinity.ttlMs/);
    expect(() => parseRouterConfig({ sessionAffinity: 'yes' })).toThrow(TypeError);
  });

  it('reads router replicas: off when absent, the defaults filled in, bad settings refused', () => {
    expect(parseRouterConfig({}).replicas).toBeUndefined();
    expect(parseRouterConfig({ replicas: { nats: 'tls://n:4222' } }).replicas).toEqual({
      nats: 'tls://n:4222',
      heartbeatMs: 1000,
      ttlMs: 5000,
      batchMaxEvents: 256,
      batchMaxDelayMs: 1,
      connectTimeoutMs: 2000,
      warmStart: true,
      warmStartTimeoutMs: 60_000,
      snapshotIntervalMs: 30_000,
      snapshotMaxAgeMs: 600_000,
    });
    expect(() => parseRouterConfig({ replicas: {} })).toThrow(/replicas.nats/);
    expect(() => parseRouterConfig({ replicas: { nats: 'nats://n:1', id: '' } })).toThrow(/replicas.id/);
    expect(() => parseRouterConfig({ replicas: { nats: 'nats://n:1', cluster: 'a.b' } })).toThrow(/replicas.cluster/);
    expect(() => parseRouterConfig({ replicas: { nats: 'nats://n:1', batchMaxEvents: 0 } })).toThrow(/replicas.batchMaxEvents/);
    expect(() => parseRouterConfig({ replicas: { nats: 'nats://n:1', heartbeatMs: 1000, ttlMs: 1999 } })).toThrow(RangeError);
    expect(() => parseRouterConfig({ replicas: { nats: 'nats://n:1', natsUrl: 'x' } })).toThrow(/unknown field 'natsUrl'/);
  });

  it('reads the warm start settings of router replicas, and refuses bad ones with the setting named', () => {
    const r = parseRouterConfig({
      replicas: { nats: 'nats://n:1', warmStart: false, warmStartTimeoutMs: 5000, snapshotIntervalMs: 0, snapshotMaxAgeMs: 60_000 },
    }).replicas;
    expect(r).toMatchObject({ warmStart: false, warmStartTimeoutMs: 5000, snapshotIntervalMs: 0, snapshotMaxAgeMs: 60_000 });
    expect(() => parseRouterConfig({ replicas: { nats: 'nats://n:1', warmStart: 'yes' } })).toThrow(/replicas.warmStart/);
    expect(() => parseRouterConfig({ replicas: { nats: 'nats://n:1', warmStartTimeoutMs: 0 } })).toThrow(/replicas.warmStartTimeoutMs/);
    expect(() => parseRouterConfig({ replicas: { nats: 'nats://n:1', warmStartTimeoutMs: 1.5 } })).toThrow(/replicas.warmStartTimeoutMs/);
    expect(() => parseRouterConfig({ replicas: { nats: 'nats://n:1', snapshotIntervalMs: -1 } })).toThrow(/replicas.snapshotIntervalMs/);
    expect(() => parseRouterConfig({ replicas: { nats: 'nats://n:1', snapshotIntervalMs: 500 } })).toThrow(
      /replicas.snapshotIntervalMs must be 0 \(never\) or at least 1000, got 500/,
    );
    expect(() => parseRouterConfig({ replicas: { nats: 'nats://n:1', snapshotMaxAgeMs: 10 } })).toThrow(/replicas.snapshotMaxAgeMs/);
  });

  it('takes a tokenizer as a name, a directory or an object, and a $schema for editors', () => {
    expect(parseRouterConfig({ tokenizer: 'byte' }).tokenizer).toEqual({ type: 'byte' });
    expect(parseRouterConfig({ tokenizer: '/models/q' }).tokenizer).toEqual({ type: 'huggingface', path: '/models/q' });
    expect(parseRouterConfig({ tokenizer: { type: 'huggingface', path: '/m' } }).tokenizer).toEqual({ type: 'huggingface', path: '/m' });
    expect(parseRouterConfig({ $schema: '../schema/config.schema.json', model: 'm' })).not.toHaveProperty('$schema');
    expect(parseRouterConfig({ model: 'm' }).models).toEqual(['m']);
  });

  it('reads failover and ejection: on by default, each setting checked, the ejection times in order', () => {
    const d = parseRouterConfig({});
    expect(d.maxRetries).toBe(2);
    expect(d.outlierDetection).toEqual({
      enabled: true,
      consecutiveConnectFailures: 1,
      consecutive5xx: 5,
      baseEjectionTimeMs: 30_000,
      maxEjectionTimeMs: 300_000,
      maxEjectionPercent: 50,
    });
    const c = parseRouterConfig({ maxRetries: 0, outlierDetection: { enabled: false, consecutive5xx: 0, baseEjectionTimeMs: 1000, maxEjectionTimeMs: 1000 } });
    expect(c.maxRetries).toBe(0);
    expect(c.outlierDetection).toMatchObject({ enabled: false, consecutive5xx: 0, baseEjectionTimeMs: 1000, maxEjectionTimeMs: 1000 });
    expect(parseRouterConfig(configToInput(c))).toEqual(c);
    expect(() => parseRouterConfig({ maxRetries: -1 })).toThrow(/maxRetries/);
    expect(() => parseRouterConfig({ maxRetries: 1.5 })).toThrow(/maxRetries/);
    expect(() => parseRouterConfig({ outlierDetection: { maxEjectionPercent: 101 } })).toThrow(/outlierDetection.maxEjectionPercent/);
    expect(() => parseRouterConfig({ outlierDetection: { baseEjectionTimeMs: 0 } })).toThrow(/outlierDetection.baseEjectionTimeMs/);
    expect(() => parseRouterConfig({ outlierDetection: { baseEjectionTimeMs: 5000, maxEjectionTimeMs: 1000 } })).toThrow(
      /maxEjectionTimeMs \(1000\) must be at least outlierDetection.baseEjectionTimeMs \(5000\)/,
    );
    expect(() => parseRouterConfig({ outlierDetection: { consecutiveErrors: 3 } })).toThrow(/unknown field 'consecutiveErrors'/);
    expect(() => parseRouterConfig({ outlierDetection: true })).toThrow(TypeError);
  });

  it('gives the prefill pool what it does not set from the decode pool', () => {
    const c = parseRouterConfig({ routing: { policy: 'round_robin', temperature: 0.5, maxQueuedPrefillTokens: 1000 }, prefillRouting: { policy: 'kv' } });
    const credits = { hostCacheCredit: 0.75, diskCacheCredit: 0.25, externalCacheCredit: 0.25 };
    expect(c.decode).toEqual({ policy: 'round_robin', overlapScoreCredit: 1, prefillLoadScale: 1, temperature: 0.5, maxQueuedPrefillTokens: 1000, ...credits });
    expect(c.prefill).toEqual({ policy: 'kv', overlapScoreCredit: 1, prefillLoadScale: 1, temperature: 0.5, maxQueuedPrefillTokens: 1000, ...credits });
    expect(parseRouterConfig({ routing: { policy: 'random' } }).prefill.policy).toBe('random');
  });

  it('turns a normalised config back into input that parses to the same config', () => {
    const raw = JSON.parse(readFileSync(new URL('../../../examples/fleet.json', import.meta.url), 'utf8')) as unknown;
    const once = parseRouterConfig(raw);
    expect(parseRouterConfig(configToInput(once))).toEqual(once);
    const session = parseRouterConfig({ sessionAffinity: true, adminToken: 't', seed: 7, chatTemplate: '{{x}}', maxIndexedBlocks: 100 });
    expect(parseRouterConfig(configToInput(session))).toEqual(session);
    expect(parseRouterConfig({ adminToken: '' }).adminToken).toBeUndefined();
  });

  it('expands a single KV event endpoint to one per dp rank (port + rank)', () => {
    const c = parseRouterConfig({
      workers: [
        {
          id: 7,
          role: 'prefill',
          kind: 'sglang',
          baseUrl: 'http://10.0.0.1:30000/',
          dpSize: 3,
          kvEvents: 'tcp://10.0.0.1:5557',
          replayEndpoint: 'tcp://10.0.0.1:5600',
          bootstrap: { host: '10.0.0.1', port: 8998 },
        },
      ],
    });
    const w = c.workers[0];
    expect(w.baseUrl).toBe('http://10.0.0.1:30000');
    expect(w.kvEvents).toEqual(['tcp://10.0.0.1:5557', 'tcp://10.0.0.1:5558', 'tcp://10.0.0.1:5559']);
    expect(w.replayEndpoints).toEqual(['tcp://10.0.0.1:5600', 'tcp://10.0.0.1:5601', 'tcp://10.0.0.1:5602']);
    expect(w.bootstrap).toEqual({ host: '10.0.0.1', port: 8998 });
  });

  it('keeps explicit per-rank endpoints and checks their count', () => {
    const w = parseWorkerConfig({ id: 1, baseUrl: 'http://h:1', dpSize: 2, kvEvents: ['tcp://a:1', 'tcp://b:2'] });
    expect(w.kvEvents).toEqual(['tcp://a:1', 'tcp://b:2']);
    expect(() => parseWorkerConfig({ id: 1, baseUrl: 'http://h:1', dpSize: 2, kvEvents: ['tcp://a:1'] })).toThrow(/lists 1 endpoints but dpSize is 2/);
  });

  it.each([
    [{ port: 70000 }, RangeError, /port must be an integer in \[0, 65535\]/],
    [{ blockSize: 'x' }, TypeError, /blockSize must be a number/],
    [{ workers: {} }, TypeError, /workers must be an array/],
    [{ workers: [{ id: 1, role: 'boss', baseUrl: 'http://h:1' }] }, TypeError, /workers\[0\]\.role must be one of aggregated, prefill, decode, got 'boss'/],
    [{ workers: [{ id: 1, kind: 'tgi', baseUrl: 'http://h:1' }] }, TypeError, /workers\[0\]\.kind must be one of vllm, sglang, trtllm/],
    [{ workers: [{ id: -1, baseUrl: 'http://h:1' }] }, RangeError, /workers\[0\]\.id must be an integer/],
    [{ workers: [{ id: 1, baseUrl: 'ftp://h' }] }, TypeError, /workers\[0\]\.baseUrl must be an http\(s\) URL/],
    [{ workers: [{ id: 1 }] }, TypeError, /workers\[0\]\.baseUrl must be an http\(s\) URL, got undefined$/],
    [
      { workers: [{ id: 1, baseUrl: 'http://h:1', kvEvents: 'http://h:5557' }] },
      TypeError,
      /workers\[0\]\.kvEvents must be an endpoint like tcp:\/\/host:port, got 'http:\/\/h:5557'/,
    ],
    [{ workers: [{ id: 1, baseUrl: 'http://h:1', replayEndpoint: 'tcp://h:5600' }] }, TypeError, /replayEndpoint needs/],
    [
      {
        workers: [
          { id: 1, baseUrl: 'http://h:1' },
          { id: 1, baseUrl: 'http://h:2' },
        ],
      },
      RangeError,
      /worker id 1 appears twice/,
    ],
    [{ workers: [{ id: 1, baseUrl: 'http://h:1', colour: 'red' }] }, TypeError, /unknown field 'colour'/],
    [{ routing: { policy: 'best' } }, TypeError, /routing\.policy must be one of kv, round_robin/],
    [{ routing: { temperature: -1 } }, RangeError, /routing\.temperature must be a number in/],
    [{ routing: { hostCacheCredit: -0.5 } }, RangeError, /^routing\.hostCacheCredit must be a number in \[0, 1000000\], got -0\.5$/],
    [{ lowerTiers: 'no' }, TypeError, /^lowerTiers must be true or false, got string no$/],
    [{ model: 'a', models: ['b'] }, TypeError, /either model or models/],
    [{ tokenizer: { type: 'huggingface' } }, TypeError, /tokenizer\.path must be a non-empty string/],
    [{ health: { intervalMs: 1.5 } }, RangeError, /health\.intervalMs/],
    ['nope', TypeError, /config must be an object, got string nope/],
    [{ colour: 'red' }, TypeError, /^config: unknown field 'colour' \(known: \$schema, host, port, /],
    [{ sessionAffinity: 'yes' }, TypeError, /^sessionAffinity must be true, false or an object, got string yes$/],
    [{ tokenizer: 5 }, TypeError, /^tokenizer must be 'byte', a HuggingFace model directory, or \{ type, path \}, got number 5$/],
    [{ models: [] }, TypeError, /^models must be a non-empty array of model names, got an array$/],
    [{ routing: { maxQueuedPrefillTokens: 0 } }, RangeError, /^routing\.maxQueuedPrefillTokens must be an integer in \[1, 9007199254740991\], got 0$/],
    [{ prefillRouting: { busyDecodeFraction: 0 } }, RangeError, /^prefillRouting\.busyDecodeFraction must be a number in \(0, 1000000\], got 0$/],
    [
      { workers: [{ id: 1, baseUrl: 'http://h:1', kvEvents: ['tcp://a:1', 5] }] },
      TypeError,
      /^workers\[0\]\.kvEvents\[1\] must be an endpoint like tcp:\/\/host:port, got number 5$/,
    ],
    [
      { workers: [{ id: 1, baseUrl: 'http://h:1', kvEvents: 'tcp://h:70000' }] },
      RangeError,
      /^workers\[0\]\.kvEvents port must be in \[1, 65535\], got 70000$/,
    ],
  ])('refuses %j with a clear error', (raw, type, message) => {
    expect(() => parseRouterConfig(raw)).toThrow(type);
    expect(() => parseRouterConfig(raw)).toThrow(message);
  });
});

describe('loadConfigFile', () => {
  let dir = '';
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('loads the example fleet config', async () => {
    const c = await loadConfigFile(new URL('../../../examples/fleet.json', import.meta.url).pathname);
    expect(c.workers.length).toBeGreaterThan(0);
    expect(c.workers.some((w) => w.role === 'prefill')).toBe(true);
  });

  it('reports bad JSON and missing files clearly', async () => {
    dir = await mkdtemp(join(tmpdir(), 'kvroute-config-'));
    const bad = join(dir, 'bad.json');
    await writeFile(bad, '{ "port": 80, }');
    await expect(loadConfigFile(bad)).rejects.toThrow(/is not valid JSON/);
    await expect(loadConfigFile(join(dir, 'missing.json'))).rejects.toThrow(/cannot read config file/);
  });
});
