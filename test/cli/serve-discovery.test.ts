// `kvroute serve --discovery kubernetes ...`: the flags set `discovery.kubernetes` as the config
// file would, and a router with discovery serves no embedded fleet beside it.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HELP, serveOptions } from '../../src/cli/serve.js';

async function opts(argv: string[]) {
  const o = await serveOptions(argv, {});
  if (o === 'help') throw new Error('unexpected help');
  return o;
}

describe('kvroute serve --discovery', () => {
  it('turns on Kubernetes discovery with its namespace and selector, and no embedded fleet', async () => {
    const o = await opts(['--discovery', 'kubernetes', '--discovery-namespace', 'llm', '--discovery-selector', 'app=vllm']);
    expect(o.config.discovery?.kubernetes).toMatchObject({
      namespace: 'llm',
      selector: 'app=vllm',
      retryBaseMs: 1000,
      retryMaxMs: 30_000,
      watchTimeoutSeconds: 300,
    });
    expect(o.embedded).toBeUndefined();
    expect(o.config.workers).toEqual([]);
  });

  it('merges the flags over the config file, whose discovery settings they keep', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kvroute-serve-'));
    const file = join(dir, 'config.json');
    await writeFile(file, JSON.stringify({ discovery: { kubernetes: { selector: 'app=sglang', namespace: 'a', retryBaseMs: 50 } } }));
    const o = await opts(['--config', file, '--discovery', 'kubernetes', '--discovery-namespace', 'b']);
    expect(o.config.discovery?.kubernetes).toMatchObject({ selector: 'app=sglang', namespace: 'b', retryBaseMs: 50 });
  });

  it('refuses an unknown source, a missing or malformed selector, a bad namespace, and --embedded beside it', async () => {
    await expect(serveOptions(['--discovery', 'consul'], {})).rejects.toThrow("--discovery must be one of kubernetes, got 'consul'");
    await expect(serveOptions(['--discovery', 'kubernetes'], {})).rejects.toThrow(/discovery\.kubernetes.*selector/);
    await expect(serveOptions(['--discovery', 'kubernetes', '--discovery-selector', 'app in (vllm'], {})).rejects.toThrow(
      "invalid configuration: discovery.kubernetes.selector is not a label selector (unbalanced parentheses): 'app in (vllm'",
    );
    await expect(serveOptions(['--discovery', 'kubernetes', '--discovery-selector', 'app=vllm', '--discovery-namespace', 'Bad_NS'], {})).rejects.toThrow(
      /--discovery-namespace must be a Kubernetes namespace name/,
    );
    await expect(serveOptions(['--embedded', '--discovery', 'kubernetes', '--discovery-selector', 'app=vllm'], {})).rejects.toThrow(/drop --discovery/);
  });

  it('documents the flags in --help', () => {
    for (const flag of ['--discovery SOURCE', '--discovery-selector SELECTOR', '--discovery-namespace NS']) expect(HELP).toContain(flag);
  });
});
