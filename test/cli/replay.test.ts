import { spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { HELP as ONLINE_HELP } from '../../src/cli/replay-online.js';
import { HELP, run } from '../../src/cli/replay.js';
import { UsageError } from '../../src/cli/usage.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const trace = `${root}traces/synthetic_trace.jsonl`;

/** A stand-in router: lists one model, answers every completion with one streamed token, and records what it got. */
interface FakeRouter {
  url: string;
  got: Array<{ requestId: string; model: unknown }>;
  server: Server;
}

async function fakeRouter(model: string): Promise<FakeRouter> {
  const got: FakeRouter['got'] = [];
  const server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/v1/models') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: [{ id: model, object: 'model' }] }));
      return;
    }
    let body = '';
    req.on('data', (c: Buffer) => (body += c));
    req.on('end', () => {
      got.push({ requestId: String(req.headers['x-request-id']), model: (JSON.parse(body) as { model: unknown }).model });
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ choices: [{ index: 0, text: 'x' }] })}\n\n`);
      res.write(`data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, prompt_tokens_details: { cached_tokens: 0 } } })}\n\n`);
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, got, server };
}

/** Runs `kvroute replay` in this process; returns its exit status, stdout lines and stderr text. */
async function replay(argv: string[]) {
  const out: string[] = [];
  let err = '';
  const log = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void out.push(a.join(' ')));
  const write = vi.spyOn(process.stderr, 'write').mockImplementation((s: string | Uint8Array) => ((err += String(s)), true));
  try {
    return { code: await run(argv), out, err };
  } finally {
    log.mockRestore();
    write.mockRestore();
  }
}

const order = (r: FakeRouter) => r.got.map((g) => g.requestId).sort((x, y) => Number(x.split('-')[1]) - Number(y.split('-')[1]));

describe('kvroute replay --online', () => {
  let a: FakeRouter;
  let b: FakeRouter;
  beforeAll(async () => {
    a = await fakeRouter('model-of-a');
    b = await fakeRouter('model-of-b');
  });
  afterEach(() => {
    a.got.length = 0;
    b.got.length = 0;
  });
  afterAll(async () => {
    await Promise.all([a, b].map((r) => new Promise((done) => r.server.close(done))));
  });

  it('prints the online help with --help, wherever --online stands; the offline help without it', async () => {
    expect((await replay(['--online', '--help'])).out).toEqual([ONLINE_HELP]);
    expect((await replay(['--help', '--online'])).out).toEqual([ONLINE_HELP]);
    expect((await replay(['--help'])).out).toEqual([HELP]);
    expect(ONLINE_HELP).toContain('--model NAME');
    expect(ONLINE_HELP).not.toEqual(HELP);
    // The scheduling flags' help is in the offline help, not the name of the constant holding it.
    expect(HELP).toContain('--router-queue-threshold');
    expect(HELP).not.toContain('SCHEDULING_HELP');
  });

  it('spreads the requests over several --url, one each in turn, with the --model asked for', async () => {
    const r = await replay(['--online', '--url', a.url, '--url', b.url, '--trace', trace, '--limit', '6', '--speedup', '1000000', '--model', 'chosen-model']);
    expect(r.code).toBe(0);
    expect(order(a)).toEqual(['replay-0', 'replay-2', 'replay-4']);
    expect(order(b)).toEqual(['replay-1', 'replay-3', 'replay-5']);
    expect([...a.got, ...b.got].every((g) => g.model === 'chosen-model')).toBe(true);
    expect(r.out.join('\n')).toContain(`against ${a.url}, ${b.url} (round robin)`);
    expect(r.out.join('\n')).toContain('6 requests');
    expect(r.out.join('\n')).toContain(', 0 errors');
  });

  it('asks the first router for its model when --model is absent', async () => {
    const r = await replay(['--online', '--url', b.url, '--url', a.url, '--trace', trace, '--limit', '2', '--speedup', '1000000']);
    expect(r.code).toBe(0);
    expect([...a.got, ...b.got].map((g) => g.model)).toEqual(['model-of-b', 'model-of-b']);
  });

  it('prints progress as plain lines when stderr is not a terminal', async () => {
    const r = await replay(['--online', '--url', a.url, '--trace', trace, '--limit', '3', '--speedup', '1000000']);
    expect(r.err).toMatch(/^replay: 1\/3 done, \d+ in flight \(\d+ s\)\n/);
    expect(r.err).toMatch(/replay: 3\/3 done, 0 in flight \(\d+ s\)\n$/);
    expect(r.err).not.toMatch(/[\r\x1b]/);
  });

  it('refuses bad flags with a UsageError naming them', async () => {
    await expect(replay(['--online', '--trace', trace])).rejects.toThrow(/--online needs --url/);
    await expect(replay(['--online', '--url', a.url, '--url', 'not a url', '--trace', trace])).rejects.toThrow(/--url is not a URL: not a url/);
    await expect(replay(['--online', '--url', a.url, '--trace', trace, '--model', ' '])).rejects.toThrow(/--model must not be empty/);
    await expect(replay(['--online', '--url', a.url])).rejects.toThrow(/--trace FILE is required/);
  });
});

describe('kvroute replay (offline) as a process', () => {
  it('prints progress as plain lines on a pipe, no carriage returns or escapes', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'replay', '--trace', trace, '--limit', '100', '--policy', 'kv', '--workers', '2'], {
      cwd: root,
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/^kv x1: 100\/100 requests \(\d+ s\)$/m);
    expect(r.stderr).not.toMatch(/[\r\x1b]/);
    expect(r.stdout).toContain('| kv |');
  });
});

describe('kvroute replay --handoff', () => {
  let dir: string;
  let small: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kvroute-replay-'));
    small = join(dir, 'trace.jsonl');
    const lines = [0, 200, 400, 600].map((t, i) => JSON.stringify({ timestamp: t, input_length: 700, output_length: 4, hash_ids: [1, 2 + i] }));
    await writeFile(small, `${lines.join('\n')}\n`);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('replays a disaggregated fleet in the chosen handoff style', async () => {
    const out = join(dir, 'sglang.json');
    const r = await replay(['--trace', small, '--prefill', '1', '--decode', '1', '--handoff', 'sglang', '--policy', 'kv', '--json', out]);
    expect(r.code).toBe(0);
    expect(r.out[0]).toContain('1 prefill + 1 decode workers (SGLang bootstrap KV handoff)');
    const report = JSON.parse(await readFile(out, 'utf8'));
    expect(report).toMatchObject({ prefill_workers: 1, decode_workers: 1, handoff: 'sglang', policies: { kv: { completed: 4, refused: 0 } } });
  });

  it('refuses an unknown style, and a style without a disaggregated fleet', async () => {
    await expect(run(['--trace', small, '--prefill', '1', '--decode', '1', '--handoff', 'nixl'])).rejects.toThrow(UsageError);
    await expect(run(['--trace', small, '--prefill', '1', '--decode', '1', '--handoff', 'nixl'])).rejects.toThrow(
      /unknown --handoff 'nixl'; one of vllm, sglang, trtllm/,
    );
    await expect(run(['--trace', small, '--handoff', 'trtllm'])).rejects.toThrow(/--handoff needs --prefill and --decode/);
  });
});

describe('kvroute replay, scheduling flags', () => {
  let dir: string;
  let small: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kvroute-replay-'));
    small = join(dir, 'trace.jsonl');
    // Four requests at once on one worker: the router queue holds three of them.
    const lines = [0, 1, 2, 3].map((i) =>
      JSON.stringify({ timestamp: 0, input_length: 700, output_length: 4, hash_ids: [1, 10 + i], priority: i === 3 ? 1 : 0 }),
    );
    await writeFile(small, `${lines.join('\n')}\n`);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('queues in the router with the settings given, and reports priorities, the queue and mode reasons', async () => {
    const out = join(dir, 'queue.json');
    const r = await replay([
      '--trace',
      small,
      '--workers',
      '1',
      '--policy',
      'kv',
      '--router-queue-threshold',
      '0',
      '--router-queue-max-requests',
      '2',
      '--json',
      out,
    ]);
    expect(r.code).toBe(0);
    const kv = JSON.parse(await readFile(out, 'utf8')).policies.kv;
    // The priority-1 request came last to a full queue and took the place of the last low one.
    expect(kv).toMatchObject({ completed: 3, refused: 1, queue: { queued: 3, rejected: { displaced: 1 } } });
    expect(Object.keys(kv.ttft_p90_ms_by_priority)).toEqual(['0', '1']);
    const cond = join(dir, 'cond.json');
    expect(
      (
        await replay([
          '--trace',
          small,
          '--prefill',
          '1',
          '--decode',
          '1',
          '--policy',
          'kv',
          '--conditional-disagg',
          '--disagg-bypass-below',
          '1000',
          '--json',
          cond,
        ])
      ).code,
    ).toBe(0);
    expect(JSON.parse(await readFile(cond, 'utf8')).policies.kv.mode_reasons).toEqual({ below_threshold: 4 });
  });

  it('--engine-priority: the engines take the forwarded priorities (an fcfs engine would refuse the priority-1 request)', async () => {
    const out = join(dir, 'engine-priority.json');
    expect((await replay(['--trace', small, '--workers', '1', '--policy', 'kv', '--engine-priority', '--json', out])).code).toBe(0);
    expect(JSON.parse(await readFile(out, 'utf8')).policies.kv).toMatchObject({ completed: 4, refused: 0 });
    expect(Object.keys(JSON.parse(await readFile(out, 'utf8')).policies.kv.ttft_p90_ms_by_priority)).toEqual(['0', '1']);
  });

  it('refuses bad scheduling flags with a UsageError naming them', async () => {
    await expect(run(['--trace', small, '--router-queue-threshold=-1'])).rejects.toThrow(/queue threshold must be a finite number >= 0/);
    await expect(run(['--trace', small, '--router-queue-threshold', ''])).rejects.toThrow(UsageError);
    await expect(run(['--trace', small, '--router-queue-threshold', '1', '--router-queue-policy', 'sjf'])).rejects.toThrow(
      /queue policy must be one of fcfs, lcfs, wspt/,
    );
    await expect(run(['--trace', small, '--router-queue-policy', 'wspt'])).rejects.toThrow(/need --router-queue-threshold/);
    await expect(run(['--trace', small, '--router-queue-max-wait-ms', '100'])).rejects.toThrow(/need --router-queue-threshold/);
    await expect(run(['--trace', small, '--router-queue-threshold', '1', '--router-queue-max-wait-ms=-1'])).rejects.toThrow(
      /maxWaitMs must be a finite number >= 0/,
    );
    await expect(run(['--trace', small, '--router-queue-threshold', '1', '--router-queue-max-wait-ms', 'soon'])).rejects.toThrow(/maxWaitMs/);
    await expect(run(['--trace', small, '--high-priority-share', '1.5'])).rejects.toThrow(/--high-priority-share must be a number in \[0, 1\]/);
    await expect(run(['--trace', small, '--max-queued-prefill-tokens', '0'])).rejects.toThrow(/--max-queued-prefill-tokens must be an integer/);
    await expect(run(['--trace', small, '--conditional-disagg'])).rejects.toThrow(/--conditional-disagg needs --prefill and --decode/);
    await expect(run(['--trace', small, '--disagg-above', '5'])).rejects.toThrow(/need --conditional-disagg/);
    await expect(run(['--trace', small, '--prefill', '1', '--decode', '1', '--conditional-disagg', '--disagg-above', '0'])).rejects.toThrow(UsageError);
  });
});

describe('kvroute replay, a CPU offload tier', () => {
  let dir: string;
  let small: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kvroute-replay-'));
    small = join(dir, 'trace.jsonl');
    // One worker of 80 blocks: the second prompt pushes the first out of the GPU, the third is the first again.
    const ids = [
      [1, 2],
      [3, 4],
      [1, 2],
    ];
    const lines = ids.map((hashIds, i) => JSON.stringify({ timestamp: i * 2000, input_length: 1024, output_length: 4, hash_ids: hashIds }));
    await writeFile(small, `${lines.join('\n')}\n`);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reloads from the CPU tier what the GPU evicted, and reports GPU and CPU hits apart', async () => {
    const out = join(dir, 'tier.json');
    const r = await replay([
      '--trace',
      small,
      '--workers',
      '1',
      '--kv-blocks',
      '80',
      '--policy',
      'kv',
      '--offload-blocks',
      '256',
      '--offload-bandwidth',
      '1e10',
      '--json',
      out,
    ]);
    expect(r.code).toBe(0);
    expect(r.out[0]).toContain('80 KV blocks per worker + a CPU tier of 256 blocks (the router indexing it)');
    expect(r.out[0]).toContain('| policy | GPU hits | CPU hits (reloaded) |');
    const report = JSON.parse(await readFile(out, 'utf8'));
    expect(report).toMatchObject({ offload_blocks: 256, lower_tiers: true });
    const { offload, hit_rate } = report.policies.kv;
    expect(offload.cpu_hit_rate).toBeGreaterThan(0.2);
    expect(offload.stores).toBeGreaterThan(0);
    expect(hit_rate).toBeCloseTo(offload.gpu_hit_rate + offload.cpu_hit_rate, 3);
    const plain = join(dir, 'plain.json');
    expect((await replay(['--trace', small, '--workers', '1', '--kv-blocks', '80', '--policy', 'kv', '--json', plain])).code).toBe(0);
    const without = JSON.parse(await readFile(plain, 'utf8'));
    expect(without).not.toHaveProperty('offload_blocks');
    expect(without.policies.kv).not.toHaveProperty('offload');
    expect(without.policies.kv.hit_rate).toBeLessThan(hit_rate);
    // The router may ignore the tier; the engine still reloads what it finds there.
    const ignored = join(dir, 'ignored.json');
    const r2 = await replay([
      '--trace',
      small,
      '--workers',
      '1',
      '--kv-blocks',
      '80',
      '--policy',
      'kv',
      '--offload-blocks',
      '256',
      '--no-lower-tiers',
      '--json',
      ignored,
    ]);
    expect(r2.out[0]).toContain('(the router ignoring it)');
    const ign = JSON.parse(await readFile(ignored, 'utf8'));
    expect(ign).toMatchObject({ offload_blocks: 256, lower_tiers: false });
    expect(ign.policies.kv.offload.cpu_hit_rate).toBeGreaterThan(0.2);
  });

  it('refuses bad tier flags with a UsageError naming them', async () => {
    await expect(run(['--trace', small, '--offload-blocks=-1'])).rejects.toThrow(/--offload-blocks must be an integer/);
    await expect(run(['--trace', small, '--offload-blocks', 'many'])).rejects.toThrow(/--offload-blocks must be an integer/);
    await expect(run(['--trace', small, '--offload-blocks', '8', '--offload-bandwidth', '0'])).rejects.toThrow(
      /--offload-bandwidth must be a number of bytes\/s > 0/,
    );
    await expect(run(['--trace', small, '--offload-blocks', '8', '--offload-bandwidth', ''])).rejects.toThrow(UsageError);
    await expect(run(['--trace', small, '--offload-bandwidth', '1e9'])).rejects.toThrow(/need --offload-blocks/);
    await expect(run(['--trace', small, '--no-lower-tiers'])).rejects.toThrow(/need --offload-blocks/);
  });
});
