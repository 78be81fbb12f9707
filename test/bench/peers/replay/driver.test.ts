// driver.py, run by python3 against a stand-in `dynamo` package that records what the driver
// hands Dynamo (the wheels are not installed for the tests; the optional last test uses them when
// the peer suite has installed them).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { cachePath } from '../../../../bench/peers/cache.js';
import { LinePeer } from '../../../../bench/peers/line-peer.js';
import { DynamoReplay } from '../../../../bench/peers/replay/peer.js';

const DRIVER = fileURLToPath(new URL('../../../../bench/peers/replay/driver.py', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'kvroute-replay-driver-'));
const calls = join(dir, 'calls.jsonl');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// The mocker's normalizer fills in its defaults and refuses unknown keys, as the real one does;
// the replay records its arguments and fails on a 1-block cache (as Dynamo's can fail).
mkdirSync(join(dir, 'dynamo', 'replay'), { recursive: true });
writeFileSync(join(dir, 'dynamo', '__init__.py'), '');
writeFileSync(
  join(dir, 'dynamo', '_core.py'),
  `def _normalize_mocker_config(config):
    engine = dict(config.get("engine", {}))
    unknown = set(config) - {"engine"} | set(engine) - {"block_size", "num_gpu_blocks"}
    if unknown:
        raise ValueError(f"unknown field {sorted(unknown)}")
    return {"engine": {"block_size": 64, "num_gpu_blocks": 16384, **engine}}
`,
);
writeFileSync(
  join(dir, 'dynamo', 'replay', '__init__.py'),
  `import json, os

class Report:
    def __init__(self, summary):
        self.summary = summary

def run_trace_replay(trace, **kwargs):
    with open(${JSON.stringify(calls)}, "a") as f:
        f.write(json.dumps({"trace": trace, **kwargs}) + "\\n")
    engine = (kwargs["extra_engine_args"] or {}).get("engine", {})
    if engine.get("num_gpu_blocks") == 1:
        raise Exception("replay invariant violated")
    return Report({"wall_time_ms": 5.0, "duration_ms": 9000.0, "num_requests": 3, "completed_requests": 3,
                   "prefix_cache_reused_ratio": 0.25, "median_ttft_ms": 12.0})
`,
);
const env = { ...process.env, PYTHONPATH: dir };
const startRaw = async () => {
  const peer = await LinePeer.start('the driver', 'python3', [DRIVER, 'trace.jsonl', '4'], env);
  await peer.next('ready');
  return peer;
};
const recorded = () =>
  readFileSync(calls, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);

// The driver needs a Python 3 (the peer suite's venv is made from one).
const hasPython = spawnSync('python3', ['--version']).status === 0;

describe.skipIf(!hasPython)("Dynamo's replay driver", () => {
  it('hands Dynamo the engine setting of each run command and echoes it as normalized', async () => {
    const replay = await DynamoReplay.start('python3', 'trace.jsonl', 4, env);
    try {
      const run = await replay.run('kv_router', { blockSize: 16, kvBlocks: 65_536 });
      expect(run).toMatchObject({
        type: 'run',
        router_mode: 'kv_router',
        block_size: 16,
        num_gpu_blocks: 65_536,
        wall_time_ms: 5,
        duration_ms: 9000,
        completed: 3,
        prefix_cache_reused_ratio: 0.25,
        median_ttft_ms: 12,
      });
      expect(await replay.run('round_robin', { blockSize: 64, kvBlocks: 16_384 })).toMatchObject({
        router_mode: 'round_robin',
        block_size: 64,
        num_gpu_blocks: 16_384,
      });
    } finally {
      await replay.close();
    }
    expect(recorded().map((c) => [c.trace, c.num_workers, c.router_mode, c.trace_block_size, c.extra_engine_args])).toEqual([
      ['trace.jsonl', 4, 'kv_router', 512, { engine: { block_size: 16, num_gpu_blocks: 65_536 } }],
      ['trace.jsonl', 4, 'round_robin', 512, { engine: { block_size: 64, num_gpu_blocks: 16_384 } }],
    ]);
  });

  it("runs the mocker's defaults when a command names no setting, and says so in its echo", async () => {
    const peer = await startRaw();
    try {
      expect(await peer.command('run round_robin', 'run')).toMatchObject({ block_size: 64, num_gpu_blocks: 16_384 });
    } finally {
      await peer.close();
    }
    expect(recorded().at(-1)).toMatchObject({ router_mode: 'round_robin', extra_engine_args: null });
  });

  it('refuses bad commands and a failed replay with an error reply, and goes on reading', async () => {
    const peer = await startRaw();
    const before = existsSync(calls) ? recorded().length : 0;
    try {
      for (const [line, error] of [
        ['run kv_router 0 16384', /block_size must be a positive integer, got '0'/],
        ['run kv_router 16 -5', /num_gpu_blocks must be a positive integer, got '-5'/],
        ['run kv_router 1e3 16384', /block_size must be a positive integer/],
        ['run kv_router 16', /unknown command/],
        ['run kv_router 16 65536 7', /unknown command/],
        ['run kv 16 65536', /unknown router mode 'kv'/],
        ['stop', /unknown command 'stop'/],
        ['run kv_router 16 1', /Exception: replay invariant violated/],
      ] as const) {
        await expect(peer.command(line, 'run'), line).rejects.toThrow(error);
      }
      expect(await peer.command('run kv_router 32 32768', 'run')).toMatchObject({ block_size: 32, num_gpu_blocks: 32_768 });
    } finally {
      await peer.close();
    }
    // Only the failing replay and the last one reached Dynamo.
    expect(
      recorded()
        .slice(before)
        .map((c) => c.extra_engine_args),
    ).toEqual([{ engine: { block_size: 16, num_gpu_blocks: 1 } }, { engine: { block_size: 32, num_gpu_blocks: 32_768 } }]);
  });

  // The real wheels, when `npm run bench -- --peers --only dynamo-replay` has installed them.
  const python = cachePath('dynamo-1.6.1', 'bin', 'python');
  it.skipIf(!existsSync(python))(
    "sets Dynamo 1.6.1's engines to the setting asked for",
    async () => {
      const trace = fileURLToPath(new URL('../../../../traces/synthetic_trace.jsonl', import.meta.url));
      const first = join(dir, 'first-50.jsonl');
      writeFileSync(first, `${readFileSync(trace, 'utf8').split('\n').slice(0, 50).join('\n')}\n`);
      const replay = await DynamoReplay.start(python, first, 4);
      try {
        expect(await replay.run('kv_router', { blockSize: 16, kvBlocks: 65_536 })).toMatchObject({
          block_size: 16,
          num_gpu_blocks: 65_536,
          requests: 50,
          completed: 50,
        });
        // A cache smaller than most prompts: Dynamo refuses those, so the setting reached its engines.
        const small = await replay.run('kv_router', { blockSize: 16, kvBlocks: 64 });
        expect(small).toMatchObject({ block_size: 16, num_gpu_blocks: 64, requests: 50 });
        expect(small.completed).toBeLessThan(50);
      } finally {
        await replay.close();
      }
    },
    60_000,
  );
});
