// Long contexts (issue 31): the router's CPU and event loop with Qwen2.5's tokenizer and chat
// template in front of two instant engines (bench/frontend/world.ts, another process).
// 1. Chat requests sharing a ~48k-token system prompt, each with a user turn of its own, closed
//    loop at 32 and 128 in flight, through a router with the tokenizer prefix cache and one
//    without (tokenizerCacheBytes 0), in alternating rounds: router CPU per request (the whole
//    process: long bodies are tokenized on libuv threads), req/s, and a GET /live probe sent
//    meanwhile. Target: at least 5x less CPU per request with the cache at 32 in flight.
//    (The probe runs in a process of its own, bench/long-context/probe.ts.)
// 2. ~100k-token text prompts at a steady rate beside short streamed requests: the event loop's
//    delay p99 and the short streams' latency p99, with the long prompts read off-thread (the
//    default) and inline (offThreadPromptBytes past any body), and the short streams alone.
//    Target: event loop delay p99 under 1 ms.
import { compilePackage } from '../lib/compiled.js';
import { compiledRouter } from '../frontend/compiled-router.js';
import { startWorld, type World } from '../frontend/world-process.js';
import type { LoadResult } from '../frontend/loadgen.js';
import { around, type Around } from '../long-context/measure.js';
import { runProbes } from '../long-context/probe.js';
import { loadHfTokenizer } from '../../src/preprocess/hf-tokenizer.js';
import { REAL_TOKENIZER_PACKAGE, realTokenizerDir } from '../lib/real-tokenizer.js';
import { promptText } from '../lib/prompt-text.js';
import { formatValue } from '../lib/format.js';
import { percentile } from '../lib/stats.js';
import type { BenchContext, BenchSuite, Figure, SuiteResult } from '../lib/suite.js';

const MODEL = 'bench-model';
const MARKER = '@@N@@';

interface Sizes {
  systemTokens: number;
  longTokens: number;
  /** Seconds per closed-loop round, rounds per (in flight, router). */
  chatRoundS: number;
  rounds: number;
  /** Seconds of each long-prompt condition, the long prompts' and the short streams' rates. */
  mixS: number;
  longPerS: number;
  shortPerS: number;
}

const FULL: Sizes = { systemTokens: 48_000, longTokens: 100_000, chatRoundS: 6, rounds: 2, mixS: 10, longPerS: 4, shortPerS: 50 };
const QUICK: Sizes = { systemTokens: 48_000, longTokens: 100_000, chatRoundS: 2, rounds: 1, mixS: 3, longPerS: 2, shortPerS: 20 };

interface RunningRouter {
  url: string;
  close(): Promise<void>;
}

async function startRouter(world: World, dir: string, extra: Record<string, unknown>): Promise<RunningRouter> {
  const { createRouter, listenUws } = await compiledRouter();
  const workers = world.engineUrls.map((baseUrl, id) => ({ id, role: 'aggregated' as const, kind: 'vllm' as const, baseUrl }));
  const router = await createRouter({
    port: 0,
    model: MODEL,
    tokenizer: dir,
    blockSize: 16,
    health: { intervalMs: 0 },
    maxBodyBytes: 16 << 20,
    workers,
    ...extra,
  });
  const server = await listenUws(router, { host: '127.0.0.1', port: 0 });
  return {
    url: server.url,
    async close() {
      await server.close();
      await router.close();
    },
  };
}

interface ChatRun {
  inFlight: number;
  cache: boolean;
  requests: number;
  failed: number;
  rps: number;
  cpuUsPerRequest: number;
  mainCpuUsPerRequest: number;
  liveP99Ms: number;
  liveProbes: number;
  liveFailed: number;
}

/** One closed-loop round of the shared-prompt chats, with the /live probe beside it. */
async function chatRound(world: World, router: RunningRouter, body: string, inFlight: number, seconds: number, cache: boolean): Promise<ChatRun> {
  const maxMs = seconds * 1000;
  const m: Around<[LoadResult, LoadResult]> = await around(() =>
    Promise.all([
      world.load(
        { url: router.url, path: '/v1/chat/completions', body, uniqueMarker: MARKER, concurrency: inFlight, requests: 1e9, maxMs },
        { ownThread: true },
      ),
      runProbes({ url: router.url, ratePerS: 20, seconds: seconds - 1 }),
    ]),
  );
  const [load, live] = m.result;
  if (load.completed === 0) throw new Error(`no chat request completed (${load.failed} failed: ${load.firstError})`);
  return {
    inFlight,
    cache,
    requests: load.completed,
    failed: load.failed,
    rps: load.rps,
    cpuUsPerRequest: m.processCpuUs / load.completed,
    mainCpuUsPerRequest: m.mainCpuUs / load.completed,
    liveP99Ms: percentile(live.latenciesMs, 99),
    liveProbes: live.completed,
    liveFailed: live.failed,
  };
}

interface MixRun {
  condition: 'short streams alone' | 'with 100k-token prompts, read off-thread' | 'with 100k-token prompts, read inline';
  shortP99Ms: number;
  shortP50Ms: number;
  shorts: number;
  longs: number;
  longFailed: number;
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
  /** Router CPU per long prompt: the run's CPU less the short streams' (from the run without long prompts), per long prompt. */
  cpuUsPerLong?: number;
  cpuUs: number;
}

async function mixRun(
  world: World,
  router: RunningRouter,
  sizes: Sizes,
  bodies: { short: string; longs: string[] },
  condition: MixRun['condition'],
): Promise<MixRun> {
  const maxMs = sizes.mixS * 1000;
  const withLong = condition !== 'short streams alone';
  const m = await around(() =>
    Promise.all([
      // Open loops: as many requests as the rate sends in the time (the schedule is made up front).
      world.load(
        {
          url: router.url,
          path: '/v1/completions',
          body: bodies.short,
          concurrency: 16,
          requests: sizes.shortPerS * sizes.mixS,
          maxMs,
          ratePerS: sizes.shortPerS,
        },
        { ownThread: true },
      ),
      withLong
        ? world.load(
            {
              url: router.url,
              path: '/v1/completions',
              body: '',
              bodies: bodies.longs,
              concurrency: 8,
              requests: sizes.longPerS * sizes.mixS,
              maxMs,
              ratePerS: sizes.longPerS,
            },
            { ownThread: false },
          )
        : undefined,
    ]),
  );
  const [short, long] = m.result;
  if (short.completed === 0) throw new Error(`no short stream completed (${short.failed} failed: ${short.firstError})`);
  return {
    condition,
    shortP99Ms: percentile(short.latenciesMs, 99),
    shortP50Ms: percentile(short.latenciesMs, 50),
    shorts: short.completed,
    longs: long?.completed ?? 0,
    longFailed: long?.failed ?? 0,
    loopDelayP99Ms: m.loopDelayP99Ms,
    loopDelayMaxMs: m.loopDelayMaxMs,
    cpuUs: m.processCpuUs,
  };
}

async function run(ctx: BenchContext): Promise<SuiteResult> {
  const sizes = ctx.quick ? QUICK : FULL;
  ctx.progress(`loading the real tokenizer (${REAL_TOKENIZER_PACKAGE})`);
  const dir = realTokenizerDir();
  const hf = await loadHfTokenizer(dir);
  const count = (text: string) => hf.encode(text).length;
  const system = promptText(sizes.systemTokens, count, 31);
  const chatBody = JSON.stringify({
    model: MODEL,
    max_tokens: 4,
    messages: [
      { role: 'system', content: system },
      { role: 'user', content: `Question ${MARKER}: what does the passage above say about the cache?` },
    ],
  });
  const systemTokens = count(
    hf.chatTemplate!.render([
      { role: 'system', content: system },
      { role: 'user', content: 'Question 1: what does the passage above say about the cache?' },
    ]),
  );
  const longs = [1, 2, 3].map((seed) => JSON.stringify({ model: MODEL, max_tokens: 4, prompt: promptText(sizes.longTokens, count, 100 + seed) }));
  const longTokens = count(JSON.parse(longs[0]).prompt as string);
  const short = JSON.stringify({ model: MODEL, max_tokens: 16, stream: true, prompt: promptText(200, count, 7) });

  const world = await startWorld(4, 16, 2);
  const routers = {
    cached: await startRouter(world, dir, {}),
    uncached: await startRouter(world, dir, { tokenizerCacheBytes: 0 }),
    inline: await startRouter(world, dir, { offThreadPromptBytes: 1 << 30 }),
  };
  try {
    // Warm up every router (JIT, the tokenizer, the cache's system prompt).
    for (const r of Object.values(routers))
      await world.load(
        { url: r.url, path: '/v1/chat/completions', body: chatBody, uniqueMarker: MARKER, concurrency: 4, requests: 40, maxMs: 30_000 },
        { ownThread: true },
      );
    const chats: ChatRun[] = [];
    for (const inFlight of [32, 128]) {
      for (let round = 0; round < sizes.rounds; round++) {
        const order = round % 2 === 0 ? [true, false] : [false, true];
        for (const cache of order) {
          ctx.progress(
            `shared ${Math.round(systemTokens / 1000)}k-token system prompt, ${inFlight} in flight, ${cache ? 'with' : 'without'} the prefix cache, round ${round + 1}`,
          );
          chats.push(await chatRound(world, cache ? routers.cached : routers.uncached, chatBody, inFlight, sizes.chatRoundS, cache));
        }
      }
    }
    const mixes: MixRun[] = [];
    for (const [router, condition] of [
      [routers.cached, 'short streams alone'],
      [routers.cached, 'with 100k-token prompts, read off-thread'],
      [routers.inline, 'with 100k-token prompts, read inline'],
    ] as const) {
      ctx.progress(condition);
      await world.load({ url: router.url, path: '/v1/completions', body: '', bodies: longs, concurrency: 2, requests: 6, maxMs: 30_000 }, { ownThread: false });
      mixes.push(await mixRun(world, router, sizes, { short, longs }, condition));
    }
    const alone = mixes[0];
    for (const m of mixes.slice(1)) m.cpuUsPerLong = m.longs > 0 ? (m.cpuUs - (alone.cpuUs * m.shorts) / alone.shorts) / m.longs : undefined;
    return report(chats, mixes, systemTokens, longTokens, sizes);
  } finally {
    for (const r of Object.values(routers)) await r.close();
    await world.close();
  }
}

const sum = (runs: ChatRun[], pick: (r: ChatRun) => number) => runs.reduce((a, r) => a + pick(r) * r.requests, 0) / runs.reduce((a, r) => a + r.requests, 0);

function report(chats: ChatRun[], mixes: MixRun[], systemTokens: number, longTokens: number, sizes: Sizes): SuiteResult {
  const figures: Figure[] = [];
  const rows: string[] = [];
  const sys = `${Math.round(systemTokens / 1000)}k-token shared system prompt`;
  for (const inFlight of [32, 128]) {
    const of = (cache: boolean) => chats.filter((c) => c.inFlight === inFlight && c.cache === cache);
    const [on, off] = [of(true), of(false)];
    const cpu = (runs: ChatRun[]) => sum(runs, (r) => r.cpuUsPerRequest);
    const rps = (runs: ChatRun[]) => runs.reduce((a, r) => a + r.rps, 0) / runs.length;
    const live = (runs: ChatRun[]) => Math.max(...runs.map((r) => r.liveP99Ms));
    figures.push({
      name: `router CPU per chat request, ${sys}, ${inFlight} in flight, with the tokenizer prefix cache`,
      value: cpu(on),
      unit: 'us',
      better: 'lower',
      reference: { name: 'without the cache (tokenizerCacheBytes 0), same run', value: cpu(off) },
      headline: inFlight === 32,
      note: `without/with: ${(cpu(off) / cpu(on)).toFixed(1)}x; the whole router process (event loop, libuv threads, GC)`,
    });
    figures.push({
      name: `CPU ratio without/with the prefix cache, ${sys}, ${inFlight} in flight`,
      value: cpu(off) / cpu(on),
      unit: 'x',
      better: 'higher',
      ...(inFlight === 32 ? { target: { op: '>=' as const, value: 5 } } : {}),
    });
    figures.push({
      name: `chat requests per second, ${sys}, ${inFlight} in flight, with the prefix cache`,
      value: rps(on),
      unit: 'req/s',
      better: 'higher',
      reference: { name: 'without the cache', value: rps(off) },
    });
    figures.push({
      name: `GET /live p99 during that load, ${inFlight} in flight, with the prefix cache`,
      value: live(on),
      unit: 'ms',
      better: 'lower',
      reference: { name: 'without the cache', value: live(off) },
    });
    for (const [label, runs] of [
      ['with cache', on],
      ['without', off],
    ] as const) {
      rows.push(
        `| ${inFlight} | ${label} | ${runs.reduce((a, r) => a + r.requests, 0)} | ${formatValue(rps(runs), 'req/s')} | ${formatValue(cpu(runs), 'us')} | ${formatValue(
          sum(runs, (r) => r.mainCpuUsPerRequest),
          'us',
        )} | ${formatValue(live(runs), 'ms')} | ${runs.reduce((a, r) => a + r.liveProbes, 0)} (${runs.reduce((a, r) => a + r.liveFailed, 0)}) |`,
      );
    }
  }
  const [alone, offThread, inline] = mixes;
  const long = `${Math.round(longTokens / 1000)}k-token text prompts at ${sizes.longPerS}/s`;
  figures.push({
    name: `event loop delay p99, ${long} read off-thread, short streams at ${sizes.shortPerS}/s`,
    value: offThread.loopDelayP99Ms,
    unit: 'ms',
    better: 'lower',
    target: { op: '<=', value: 1 },
    reference: { name: 'the long prompts read inline', value: inline.loopDelayP99Ms },
    headline: true,
  });
  figures.push({
    name: `short streams' latency p99 beside ${long} (off-thread)`,
    value: offThread.shortP99Ms,
    unit: 'ms',
    better: 'lower',
    reference: { name: 'the short streams alone', value: alone.shortP99Ms },
  });
  figures.push({
    name: `short streams' latency p99 beside ${long} read inline`,
    value: inline.shortP99Ms,
    unit: 'ms',
    better: 'lower',
    reference: { name: 'the short streams alone', value: alone.shortP99Ms },
  });
  if (offThread.cpuUsPerLong !== undefined)
    figures.push({
      name: `router CPU per ${Math.round(longTokens / 1000)}k-token text prompt (off-thread)`,
      value: offThread.cpuUsPerLong,
      unit: 'us',
      better: 'lower',
      ...(inline.cpuUsPerLong !== undefined ? { reference: { name: 'read inline', value: inline.cpuUsPerLong } } : {}),
    });
  const mixRows = mixes.map(
    (m) =>
      `| ${m.condition} | ${m.shorts} | ${m.longs}${m.longFailed ? ` (${m.longFailed} failed)` : ''} | ${formatValue(m.shortP50Ms, 'ms')} | ${formatValue(m.shortP99Ms, 'ms')} | ${formatValue(m.loopDelayP99Ms, 'ms')} | ${formatValue(m.loopDelayMaxMs, 'ms')} | ${m.cpuUsPerLong === undefined ? '-' : formatValue(m.cpuUsPerLong, 'us')} |`,
  );
  const markdown = [
    `Qwen2.5's tokenizer and chat template (${REAL_TOKENIZER_PACKAGE}), the compiled router on uWebSockets.js in this process, two instant engines and the load generator in another process. CPU: the router process's (process.cpuUsage: every thread, libuv's included) over each round, per completed request; event loop: how late a 1 ms timer fired (monitorEventLoopDelay less its 1 ms interval).`,
    '',
    `Chat requests with a ${sys} and a user turn of their own (no two alike), closed loop, ${sizes.rounds} alternating round(s) of ${sizes.chatRoundS} s per router; /live probed 20 times a second meanwhile from a process of its own (probes still unanswered when the round ends count as failed):`,
    '',
    '| in flight | router | requests | req/s | CPU per request | event loop thread CPU per request | /live p99 | /live probes (failed) |',
    '|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    `${long} (3 different texts, no shared prefix) beside streamed ${Math.round(200)}-token completions at ${sizes.shortPerS}/s, ${sizes.mixS} s each; CPU per long prompt is the run's CPU less the short streams' share (from the run without long prompts):`,
    '',
    '| condition | short streams | long prompts | short p50 | short p99 | event loop delay p99 | worst | CPU per long prompt |',
    '|---|---|---|---|---|---|---|---|',
    ...mixRows,
  ].join('\n');
  return { figures, sections: [{ title: 'Long contexts: the tokenizer prefix cache and off-thread preprocessing', markdown }], data: { chats, mixes } };
}

export const suite: BenchSuite = {
  name: 'long-context',
  title: 'Long contexts: tokenizer prefix cache, long prompts off the event loop (Qwen2.5)',
  order: 62,
  // Tokenizing 48k-token prompts without the cache at 128 in flight takes most of a minute: not for --quick.
  fullOnly: true,
  prepare: (ctx) => compilePackage(ctx.progress),
  run,
};
