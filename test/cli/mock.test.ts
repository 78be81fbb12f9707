import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { HELP, parseMockArgs, run } from '../../src/cli/mock.js';
import { UsageError } from '../../src/cli/usage.js';

describe('parseMockArgs', () => {
  it('has the documented defaults', () => {
    expect(parseMockArgs([])).toEqual({
      workers: 1,
      ids: [0],
      role: 'aggregated',
      pdStyle: 'vllm',
      host: '127.0.0.1',
      port: 8100,
      zmqPort: 5557,
      replayPort: 5600,
      bootstrapPort: 8998,
      blockSize: 16,
      kvBlocks: 16384,
      offloadBlocks: 0,
      schedulingPolicy: 'fcfs',
      speedup: 1,
      eventEncoding: 'map',
      seed: 0,
      model: 'kvroute-sim',
      reusePort: false,
      drainTimeoutMs: 30_000,
      logLevel: 'info',
    });
  });

  it('reads every flag', () => {
    const argv =
      '--workers 3 --role prefill --pd-style sglang --port 9000 --zmq-port 6000 --replay-port 6100 --bootstrap-port 7000 --block-size 64 --kv-blocks 1000 --speedup 2.5 --event-encoding array --seed 9 --model m'.split(
        ' ',
      );
    expect(parseMockArgs(argv)).toMatchObject({
      workers: 3,
      role: 'prefill',
      pdStyle: 'sglang',
      port: 9000,
      zmqPort: 6000,
      replayPort: 6100,
      bootstrapPort: 7000,
      blockSize: 64,
      kvBlocks: 1000,
      speedup: 2.5,
      eventEncoding: 'array',
      seed: 9,
      model: 'm',
    });
    expect(parseMockArgs(['--help'])).toBeNull();
    expect(parseMockArgs(['-h'])).toBeNull();
    expect(parseMockArgs(['--offload-blocks', '4096', '--offload-bandwidth', '12.5e9'])).toMatchObject({
      offloadBlocks: 4096,
      offloadBandwidthBytesPerS: 12.5e9,
    });
    expect(parseMockArgs([])).toMatchObject({ offloadBlocks: 0 });
    expect(parseMockArgs(['--scheduling-policy', 'priority'])).toMatchObject({ schedulingPolicy: 'priority' });
  });

  it('numbers the workers from --id, or takes each id from --ids', () => {
    expect(parseMockArgs(['--id', '7', '--workers', '3'])).toMatchObject({ workers: 3, ids: [7, 8, 9] });
    expect(parseMockArgs(['--ids', '4,9'])).toMatchObject({ workers: 2, ids: [4, 9] });
    expect(parseMockArgs(['--ids', '12', '--workers', '1'])).toMatchObject({ workers: 1, ids: [12] });
    const bad: [string[], RegExp][] = [
      [['--id', '-1'], /--id/],
      [['--id', 'x'], /--id/],
      [['--ids', '4,4'], /distinct/],
      [['--ids', '4,,5'], /--ids/],
      [['--ids', '1,b'], /--ids/],
      [['--id', '1', '--ids', '2,3'], /either --id or --ids/],
      [['--ids', '1,2', '--workers', '3'], /--workers 3 disagrees with --ids/],
    ];
    for (const [argv, message] of bad) expect(() => parseMockArgs(argv), argv.join(' ')).toThrow(message);
  });

  it('refuses bad flags with a UsageError naming the flag', () => {
    const bad: [string[], RegExp][] = [
      [['--workers', '0'], /--workers/],
      [['--workers', 'two'], /--workers/],
      [['--role', 'router'], /--role must be one of aggregated, prefill, decode/],
      [['--pd-style', 'tgi'], /--pd-style/],
      [['--port', '70000'], /--port/],
      [['--workers', '3', '--port', '65534'], /leaves no room/],
      [['--speedup', '0'], /--speedup/],
      [['--speedup', 'fast'], /--speedup/],
      [['--event-encoding', 'json'], /--event-encoding/],
      [['--block-size', '0'], /--block-size/],
      [['--scheduling-policy', 'lifo'], /--scheduling-policy must be one of fcfs, priority/],
      [['extra'], /positional/],
    ];
    for (const [argv, message] of bad) expect(() => parseMockArgs(argv), argv.join(' ')).toThrow(message);
    for (const argv of [['--offload-blocks=-1'], ['--offload-blocks', '1.5'], ['--offload-bandwidth', '0'], ['--offload-bandwidth', 'fast']]) {
      expect(() => parseMockArgs(argv), argv.join(' ')).toThrow(new RegExp(argv[0].split('=')[0]));
    }
    expect(() => parseMockArgs(['--role', 'x'])).toThrow(UsageError);
    // Unknown flags: node:util parseArgs' own error, which the dispatcher also maps to exit 2.
    expect(() => parseMockArgs(['--bogus'])).toThrow(expect.objectContaining({ code: 'ERR_PARSE_ARGS_UNKNOWN_OPTION' }));
  });
});

describe('kvroute mock', () => {
  it('prints help', async () => {
    const lines: string[] = [];
    expect(await run(['--help'], { log: (l) => lines.push(l) })).toBe(0);
    expect(lines).toEqual([HELP]);
  });

  it('starts workers, prints their URLs, serves a streamed completion and stops on abort', async () => {
    const lines: string[] = [];
    const ac = new AbortController();
    const done = run(['--workers', '2', '--port', '0', '--zmq-port', '0', '--replay-port', '0', '--speedup', '100'], {
      signal: ac.signal,
      log: (l) => lines.push(l),
    });
    const deadline = Date.now() + 15_000;
    while (lines.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(lines[0]).toMatch(
      /^worker 0 \(aggregated, vllm\)\s+http http:\/\/127\.0\.0\.1:\d+\s+events tcp:\/\/127\.0\.0\.1:\d+\s+replay tcp:\/\/127\.0\.0\.1:\d+$/,
    );
    expect(lines[1]).toMatch(/^worker 1 /);
    const url = /http (http:\/\/\S+)/.exec(lines[1])?.[1];
    const res = await fetch(`${url}/v1/completions`, { method: 'POST', body: JSON.stringify({ prompt: 'Hello', max_tokens: 3, stream: true }) });
    expect((await res.text()).endsWith('data: [DONE]\n\n')).toBe(true);
    ac.abort();
    expect(await done).toBe(0);
    expect(lines.at(-1)).toBe('stopped');
    await expect(fetch(`${url}/health`)).rejects.toThrow();
  });
});

describe('kvroute mock --ids', () => {
  it('names its workers by their ids in its lines, /health and the /metrics engine label', async () => {
    const lines: string[] = [];
    const ac = new AbortController();
    const done = run(['--ids', '41,7', '--port', '0', '--zmq-port', '0', '--replay-port', '0', '--speedup', '100'], {
      signal: ac.signal,
      log: (l) => lines.push(l),
    });
    try {
      const deadline = Date.now() + 15_000;
      while (lines.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(lines[0]).toMatch(/^worker 41 \(aggregated, vllm\)/);
      expect(lines[1]).toMatch(/^worker 7 /);
      for (const [line, id] of [
        [lines[0], 41],
        [lines[1], 7],
      ] as const) {
        const url = /http (http:\/\/\S+)/.exec(line)![1];
        expect(await (await fetch(`${url}/health`)).json()).toEqual({ status: 'ok', worker_id: id, role: 'aggregated' });
        expect(await (await fetch(`${url}/metrics`)).text()).toContain(`vllm:num_requests_running{model_name="kvroute-sim",engine="${id}"}`);
      }
    } finally {
      ac.abort();
      expect(await done).toBe(0);
    }
  });
});

describe('kvroute mock as a process', () => {
  const cli = (args: string[]) => spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'mock', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });

  it('exits with status 2 and a clear message on a bad flag', async () => {
    const child = cli(['--role', 'router']);
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const code = await new Promise((r) => child.on('exit', r));
    expect(code).toBe(2);
    expect(stderr).toMatch(/--role must be one of/);
  });

  it('stops cleanly on Ctrl-C (SIGINT)', async () => {
    const child = cli(['--port', '0', '--zmq-port', '0', '--replay-port', '0']);
    let stdout = '';
    const started = new Promise<void>((resolve) =>
      child.stdout.on('data', (d) => {
        stdout += d;
        if (stdout.includes('Ctrl-C')) resolve();
      }),
    );
    await started;
    child.kill('SIGINT');
    const code = await new Promise((r) => child.on('exit', r));
    expect(code).toBe(0);
    expect(stdout).toMatch(/stopped/);
  });
});

describe('kvroute mock --scheduling-policy', () => {
  /** Starts one worker with `flags`; its URL and a stop function. */
  async function mock(flags: string[]): Promise<{ url: string; stop: () => Promise<number> }> {
    const lines: string[] = [];
    const ac = new AbortController();
    const done = run(['--port', '0', '--zmq-port', '0', '--replay-port', '0', ...flags], { signal: ac.signal, log: (l) => lines.push(l) });
    const deadline = Date.now() + 15_000;
    while (lines.length < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const url = /http (http:\/\/\S+)/.exec(lines[0])?.[1];
    if (!url) throw new Error(`no worker line: ${lines.join('; ')}`);
    return { url, stop: () => (ac.abort(), done) };
  }

  const prompt = (first: number, n: number) => Array.from({ length: n }, (_, i) => first + i);
  const complete = (url: string, body: Record<string, unknown>) =>
    fetch(`${url}/v1/completions`, { method: 'POST', body: JSON.stringify({ max_tokens: 1, stream: true, ...body }) });

  it('priority: a waiting request of a better priority (lower, as vLLM) gets its first token first', async () => {
    const { url, stop } = await mock(['--scheduling-policy', 'priority']);
    try {
      // A: three steps of prefill (24k tokens, 8192 a step, about 170 ms each); B and C arrive
      // during its first and wait behind it, B first. (Its response starts at its first token.)
      const a = complete(url, { prompt: prompt(1, 24_000) });
      await new Promise((r) => setTimeout(r, 150));
      const order: string[] = [];
      const firstToken = async (name: string, res: Promise<Response>) => {
        const r = await res;
        expect(r.status).toBe(200);
        const reader = r.body!.getReader();
        await reader.read();
        order.push(name);
        while (!(await reader.read()).done);
      };
      const b = firstToken('b', complete(url, { prompt: prompt(100_000, 8000), priority: 5 }));
      await new Promise((r) => setTimeout(r, 20));
      const c = firstToken('c', complete(url, { prompt: prompt(200_000, 8000), priority: -5 }));
      await Promise.all([a.then((r) => r.text()), b, c]);
      expect(order).toEqual(['c', 'b']);
      const bad = await complete(url, { prompt: [1, 2, 3], priority: 1.5 });
      expect(bad.status).toBe(400);
      expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(/priority must be an integer/);
    } finally {
      expect(await stop()).toBe(0);
    }
  });

  it('fcfs (the default): a non-zero priority is refused with a 400, as vLLM refuses it', async () => {
    const { url, stop } = await mock([]);
    try {
      const res = await complete(url, { prompt: [1, 2, 3], priority: 2 });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/schedulingPolicy 'priority'/);
      expect((await complete(url, { prompt: [1, 2, 3], priority: 0 })).status).toBe(200);
    } finally {
      expect(await stop()).toBe(0);
    }
  });
});
