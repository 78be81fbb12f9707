// The frontend benchmark: the router (uWebSockets.js, this process's main thread) in front of an
// engine that answers at once, loaded over loopback; engine and load generator run in a process of
// their own (world.ts), as other machines would in a deployment.
//  - throughput: closed loop, requests per second, streamed and not, 1k and 8k-token prompts (the
//    load generator on its own thread);
//  - overhead: open loop at a fixed rate, latency through the router minus latency straight to
//    the engine at the same rate (p50 and p99); the load generator shares the engine's thread, so
//    the world keeps to one of the two cores and the router has the other.
// Targets (reported, never asserted): >= 5,000 streamed req/s with short outputs; overhead p99
// < 1 ms at 1,000 req/s.
import type { HfTokenizer } from '../../src/preprocess/hf-tokenizer.js';
import { percentile } from '../lib/stats.js';
import { compiledRouter } from './compiled-router.js';
import { closedLoop, closedLoopWithCpu, measureOverhead, type OverheadMeasure } from './measure.js';
import { round3 } from './overhead.js';
import { measurePromptForms, type PromptFormFigure } from './prompt-forms.js';
import { startWorld, type World } from './world-process.js';
import { measureLoggerCost, type LoggerCostFigure } from './logger-cost.js';

export interface FrontendBenchOptions {
  quick?: boolean;
  /** Progress lines. */
  log?: (line: string) => void;
  /** Also measure the prompt forms (token ids, text, chat) through a router with this real tokenizer (prompt-forms.ts). */
  realTokenizer?: { dir: string; tokenizer: HfTokenizer };
}

export interface ThroughputFigure {
  prompt_tokens: number;
  stream: boolean;
  concurrency: number;
  requests: number;
  failed: number;
  rps: number;
  p50_ms: number;
  p99_ms: number;
  /** The router thread's own CPU time per request (Linux), the figure least disturbed by the machine's other work. */
  router_cpu_us_per_request?: number;
}

export interface OverheadFigure extends OverheadMeasure {
  prompt_tokens: number;
  stream: boolean;
}

/** Long streams, a write per token: what one streamed token costs the router. */
export interface PerTokenFigure {
  stream_tokens: number;
  token_gap_ms: number;
  concurrency: number;
  requests: number;
  failed: number;
  tokens_per_s: number;
  router_cpu_us_per_request?: number;
  /** The request's CPU over its tokens (its own routing and setup included). */
  router_cpu_us_per_token?: number;
}

export interface FrontendBenchResult {
  output_tokens: number;
  throughput: ThroughputFigure[];
  overhead: OverheadFigure[];
  per_token: PerTokenFigure;
  /** With a real tokenizer: the same prompt as token ids, text and chat. */
  prompt_forms?: PromptFormFigure[];
  /** Router CPU per request with logging at info against silent, side by side. */
  logger_cost: LoggerCostFigure;
  targets: { streamed_rps_1k: number; streamed_rps_target: number; overhead_p99_ms_1k: number; overhead_p99_target_ms: number };
}

const OUTPUT_TOKENS = 4;
const STREAM_TOKENS = 64;
const MODEL = 'bench';

function routerConfig(baseUrl: string) {
  return {
    port: 0,
    model: MODEL,
    blockSize: 16,
    health: { intervalMs: 0 },
    maxBodyBytes: 16 << 20,
    workers: [{ id: 0, role: 'aggregated' as const, kind: 'vllm' as const, baseUrl }],
  };
}

export async function runFrontendBench(o: FrontendBenchOptions = {}): Promise<FrontendBenchResult> {
  const log = o.log ?? (() => undefined);
  const world = await startWorld(OUTPUT_TOKENS, STREAM_TOKENS);
  const engineUrl = world.engineUrl;
  const { createRouter, listenUws } = await compiledRouter();
  const router = await createRouter(routerConfig(engineUrl));
  const server = await listenUws(router, { host: '127.0.0.1', port: 0 });
  try {
    const sizes = [1024, 8192];
    const throughput: ThroughputFigure[] = [];
    const overhead: OverheadFigure[] = [];
    const closedRequests = o.quick ? 2_000 : 30_000;
    const closedMs = o.quick ? 2_000 : 15_000;
    const openRequests = o.quick ? 500 : 10_000;
    const overheadRounds = o.quick ? 2 : 5;
    const warmupOpenRequests = o.quick ? 200 : 1_000;
    for (const tokens of sizes) {
      for (const stream of [true, false]) {
        const body = requestBody(tokens, stream);
        // Warm up (JIT, connections to the engine) before anything is measured.
        await closedLoop(world, { url: server.url, path: '/v1/completions', body, concurrency: 64, requests: o.quick ? 1_000 : 5_000, maxMs: 5_000 });
        const { r, cpuPerRequest } = await closedLoopWithCpu(world, {
          url: server.url,
          path: '/v1/completions',
          body,
          concurrency: 64,
          requests: closedRequests,
          maxMs: closedMs,
        });
        const fig: ThroughputFigure = {
          prompt_tokens: tokens,
          stream,
          concurrency: 64,
          requests: r.completed,
          failed: r.failed,
          rps: Math.round(r.rps),
          p50_ms: round3(percentile(r.latenciesMs, 50)),
          p99_ms: round3(percentile(r.latenciesMs, 99)),
          ...(cpuPerRequest !== undefined ? { router_cpu_us_per_request: Math.round(cpuPerRequest * 10) / 10 } : {}),
        };
        throughput.push(fig);
        log(
          `frontend: ${tokens}-token prompts, ${stream ? 'streamed' : 'non-streamed'}: ${fig.rps} req/s (p50 ${fig.p50_ms} ms, p99 ${fig.p99_ms} ms, router CPU ${fig.router_cpu_us_per_request ?? '?'} us/request${r.failed ? `, ${r.failed} failed: ${r.firstError}` : ''})`,
        );

        for (const arrivals of tokens === 1024 ? (['uniform', 'poisson'] as const) : (['uniform'] as const)) {
          const ov = await measureOverhead(world, {
            routedUrl: server.url,
            engineUrl,
            body,
            arrivals,
            requests: openRequests,
            rounds: overheadRounds,
            warmup: warmupOpenRequests,
          });
          overhead.push({ prompt_tokens: tokens, stream, ...ov });
          log(
            `frontend: overhead at ${ov.rate_per_s} req/s (${arrivals} arrivals), ${tokens}-token prompts, ${stream ? 'streamed' : 'non-streamed'}: p50 ${ov.overhead_p50_ms} ms, p99 ${ov.overhead_p99_ms} ms (median of ${ov.rounds} rounds: ${ov.round_overhead_p99_ms.join(', ')}; pooled ${ov.pooled_overhead_p99_ms}; router scavenges ${ov.router_gc.scavenge_p50_ms} ms median, ${ov.router_gc.scavenge_max_ms} max, ${ov.router_gc.full_gcs} full GCs)`,
          );
        }
      }
    }
    const perToken = await measurePerToken(world, o.quick ? 300 : 3_000);
    log(
      `frontend: ${STREAM_TOKENS}-token streams, a write per token: ${perToken.tokens_per_s} tokens/s, router CPU ${perToken.router_cpu_us_per_token ?? '?'} us per token (${perToken.router_cpu_us_per_request ?? '?'} us per request)${perToken.failed ? `, ${perToken.failed} failed` : ''}`,
    );
    const promptForms = o.realTokenizer
      ? await measurePromptForms(world, {
          quick: !!o.quick,
          model: MODEL,
          outputTokens: OUTPUT_TOKENS,
          tokenizerDir: o.realTokenizer.dir,
          tokenizer: o.realTokenizer.tokenizer,
          log,
        })
      : undefined;
    const loggerCost = await measureLoggerCost(world, {
      config: routerConfig,
      body: requestBody(1024, true),
      promptTokens: 1024,
      stream: true,
      rounds: o.quick ? 2 : 6,
      requests: o.quick ? 1_500 : 10_000,
    });
    log(
      `frontend: logging at info vs silent, router CPU per request: ${loggerCost.info_cpu_us_per_request} vs ${loggerCost.silent_cpu_us_per_request} us (rounds ${loggerCost.round_info_cpu_us.join(', ')} vs ${loggerCost.round_silent_cpu_us.join(', ')}); ${loggerCost.info_lines_during_rounds} lines logged during the rounds`,
    );
    const s1k = throughput.find((t) => t.prompt_tokens === 1024 && t.stream)!;
    const o1k = overhead.find((t) => t.prompt_tokens === 1024 && t.stream && t.arrivals === 'uniform')!;
    return {
      output_tokens: OUTPUT_TOKENS,
      throughput,
      overhead,
      per_token: perToken,
      ...(promptForms ? { prompt_forms: promptForms } : {}),
      logger_cost: loggerCost,
      targets: { streamed_rps_1k: s1k.rps, streamed_rps_target: 5000, overhead_p99_ms_1k: o1k.overhead_p99_ms, overhead_p99_target_ms: 1 },
    };
  } finally {
    await server.close();
    await router.close();
    await world.close();
  }
}

/** A router in front of the world's streaming engine, loaded closed-loop with 64 long streams. */
async function measurePerToken(world: World, requests: number): Promise<PerTokenFigure> {
  const { createRouter, listenUws } = await compiledRouter();
  const router = await createRouter(routerConfig(world.streamingEngineUrl));
  const server = await listenUws(router, { host: '127.0.0.1', port: 0 });
  try {
    const load = { url: server.url, path: '/v1/completions', body: requestBody(1024, true, STREAM_TOKENS), concurrency: 64, maxMs: 30_000 };
    await closedLoop(world, { ...load, requests: Math.ceil(requests / 5) });
    const { r, cpuPerRequest: perRequest } = await closedLoopWithCpu(world, { ...load, requests });
    return {
      stream_tokens: STREAM_TOKENS,
      token_gap_ms: 1,
      concurrency: load.concurrency,
      requests: r.completed,
      failed: r.failed,
      tokens_per_s: Math.round(r.rps * STREAM_TOKENS),
      ...(perRequest !== undefined
        ? { router_cpu_us_per_request: Math.round(perRequest), router_cpu_us_per_token: Math.round((perRequest / STREAM_TOKENS) * 10) / 10 }
        : {}),
    };
  } finally {
    await server.close();
    await router.close();
  }
}

function requestBody(tokens: number, stream: boolean, maxTokens = OUTPUT_TOKENS): string {
  const prompt = Array.from({ length: tokens }, (_, i) => (i * 7919) % 50_000);
  return JSON.stringify({ model: MODEL, prompt, max_tokens: maxTokens, stream, ...(stream ? { stream_options: { include_usage: true } } : {}) });
}
