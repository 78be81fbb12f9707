import { describe, expect, it } from 'vitest';
import { applyFlags, declaredFlags, helpEntries, parseArgsOptions, parseWorkerFlag } from '../../src/cli/settings-flags.js';
import { UsageError } from '../../src/cli/usage.js';
import { RouterConfigSchema } from '../../src/server/config/schema.js';

describe('parseWorkerFlag', () => {
  it('parses the compact --worker syntax', () => {
    const w = parseWorkerFlag(
      'id=3,role=decode,kind=vllm,url=http://127.0.0.1:9000,events=tcp://127.0.0.1:5557,replay=tcp://127.0.0.1:5600,dp=2,capacity=4096,bootstrap=127.0.0.1:8998',
    );
    expect(w).toEqual({
      id: 3,
      role: 'decode',
      kind: 'vllm',
      baseUrl: 'http://127.0.0.1:9000',
      dpSize: 2,
      kvEvents: ['tcp://127.0.0.1:5557', 'tcp://127.0.0.1:5558'],
      replayEndpoints: ['tcp://127.0.0.1:5600', 'tcp://127.0.0.1:5601'],
      kvCapacityBlocks: 4096,
      bootstrap: { host: '127.0.0.1', port: 8998 },
    });
  });

  it('accepts per-rank endpoints separated by |', () => {
    expect(parseWorkerFlag('id=1,url=http://h:1,dp=2,events=tcp://a:1|tcp://b:2').kvEvents).toEqual(['tcp://a:1', 'tcp://b:2']);
  });

  it('names the mistake', () => {
    expect(() => parseWorkerFlag('id=1,colour=red')).toThrow(/unknown key 'colour'/);
    expect(() => parseWorkerFlag('id=1,url')).toThrow(/expected key=value pairs/);
    expect(() => parseWorkerFlag('id=x,url=http://h:1')).toThrow(/id must be an integer/);
    expect(() => parseWorkerFlag('id=1,url=http://h:1,bootstrap=h')).toThrow(/bootstrap must be host:port/);
  });
});

describe('flags declared on the settings', () => {
  const flags = declaredFlags(RouterConfigSchema);

  it('are found with the path of their setting, nested ones and alternatives included', () => {
    const byFlag = Object.fromEntries(flags.map((f) => [f.cli.flag, f.path.join('.')]));
    expect(byFlag).toMatchObject({
      port: 'port',
      policy: 'routing.policy',
      'prefill-policy': 'prefillRouting.policy',
      'session-header': 'sessionAffinity.header',
      'health-interval-ms': 'health.intervalMs',
      approximate: 'indexerMode',
      worker: 'workers',
    });
    expect(parseArgsOptions(flags)).toMatchObject({ port: { type: 'string' }, approximate: { type: 'boolean' }, model: { type: 'string', multiple: true } });
  });

  it('each have a help entry that names its default and environment variable', () => {
    const help = (['Fleet', 'Listening', 'Routing', 'Access', 'Replicas', 'Operations'] as const).flatMap((g) => helpEntries(flags, g)).join('\n');
    for (const f of flags) expect(help).toContain(`--${f.cli.flag}`);
    expect(help).toMatch(/--port PORT +port, 0 = any free one \(default 8000; env PORT\)/);
    expect(help).toMatch(/--policy P +decode\/aggregated pool policy:\s+kv\|round_robin\|random\|least_loaded\|direct\|ttft \(default ttft\)/);
  });

  it('set their settings, the environment under the flags, an empty value as not given, loaded objects copied not changed', async () => {
    const routing = { policy: 'kv', temperature: 0.5 };
    const settings: Record<string, unknown> = { routing, sessionAffinity: true };
    await applyFlags(
      settings,
      flags,
      { policy: 'random', 'session-ttl-ms': '5000', approximate: true, 'no-fallback': true, 'forward-priority': true, port: '' },
      { PORT: '9100', HOST: '10.0.0.1' },
    );
    expect(settings).toEqual({
      routing: { policy: 'random', temperature: 0.5 },
      sessionAffinity: { ttlMs: 5000 },
      indexerMode: 'approximate',
      fallbackToAggregated: false,
      forwardPriority: true,
      host: '10.0.0.1', // an empty --port is not given, and hides PORT as it did before
    });
    expect(routing).toEqual({ policy: 'kv', temperature: 0.5 });
  });

  it('check each value against its setting, naming the flag or the variable', async () => {
    await expect(applyFlags({}, flags, { port: '80x' })).rejects.toThrow(new UsageError('--port must be an integer in [0, 65535], got 80x'));
    await expect(applyFlags({}, flags, {}, { PORT: '-1' })).rejects.toThrow('PORT must be an integer in [0, 65535], got -1');
    await expect(applyFlags({}, flags, { 'max-queued-prefill-tokens': '0' })).rejects.toThrow(
      '--max-queued-prefill-tokens must be an integer in [1, 9007199254740991], got 0',
    );
    await expect(applyFlags({}, flags, { 'prefill-policy': 'best' })).rejects.toThrow(
      "--prefill-policy must be one of kv, round_robin, random, least_loaded, direct, ttft, got 'best'",
    );
    await expect(applyFlags({}, flags, { worker: ['id=1,url=http://h:1,replay=tcp://h:5600'] })).rejects.toThrow(/replayEndpoint needs/);
  });
});
