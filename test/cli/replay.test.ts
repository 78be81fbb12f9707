import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { run } from '../../src/cli/replay.js';
import { UsageError } from '../../src/cli/usage.js';

let dir: string;
let trace: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kvroute-replay-'));
  trace = join(dir, 'trace.jsonl');
  const lines = [0, 200, 400, 600].map((t, i) => JSON.stringify({ timestamp: t, input_length: 700, output_length: 4, hash_ids: [1, 2 + i] }));
  await writeFile(trace, lines.join('\n') + '\n');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('kvroute replay --handoff', () => {
  it('replays a disaggregated fleet in the chosen handoff style', async () => {
    const out = join(dir, 'sglang.json');
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    try {
      expect(await run(['--trace', trace, '--prefill', '1', '--decode', '1', '--handoff', 'sglang', '--policy', 'kv', '--json', out])).toBe(0);
      expect(log.mock.calls[0][0]).toContain('1 prefill + 1 decode workers (SGLang bootstrap KV handoff)');
    } finally {
      log.mockRestore();
    }
    const report = JSON.parse(await readFile(out, 'utf8'));
    expect(report).toMatchObject({ prefill_workers: 1, decode_workers: 1, handoff: 'sglang', policies: { kv: { completed: 4, refused: 0 } } });
  });

  it('refuses an unknown style, and a style without a disaggregated fleet', async () => {
    await expect(run(['--trace', trace, '--prefill', '1', '--decode', '1', '--handoff', 'nixl'])).rejects.toThrow(UsageError);
    await expect(run(['--trace', trace, '--prefill', '1', '--decode', '1', '--handoff', 'nixl'])).rejects.toThrow(/unknown --handoff 'nixl'; one of vllm, sglang, trtllm/);
    await expect(run(['--trace', trace, '--handoff', 'trtllm'])).rejects.toThrow(/--handoff needs --prefill and --decode/);
  });
});
