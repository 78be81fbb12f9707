// The frontend benchmark: the router (uWebSockets.js, this thread) in front of an engine that
// answers at once (its own thread), loaded from a third thread over loopback.
//  - throughput: closed loop, requests per second, streamed and not, 1k and 8k-token prompts;
//  - overhead: open loop at a fixed rate, latency through the router minus latency straight to
//    the engine at the same rate (p50 and p99).
// Targets (reported, never asserted): >= 5,000 streamed req/s with short outputs; overhead p99
// < 1 ms at 1,000 req/s.
import { createRouter } from '../../src/server/app.js';
import { listenUws } from '../../src/server/uws.js';
import { percentile, type LoadOptions, type LoadResult } from './loadgen.js';
import { threadCpuMicros } from './thread-cpu.js';
import { inThread, stopThread } from './thread.js';

export interface FrontendBenchOptions {
  quick?: boolean;
  /** Progress lines. */
  log?: (line: string) => void;
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

export interface OverheadFigure {
  prompt_tokens: number;
  stream: boolean;
  rate_per_s: number;
  requests: number;
  direct_p50_ms: number;
  direct_p99_ms: number;
  routed_p50_ms: number;
  routed_p99_ms: number;
  overhead_p50_ms: number;
  overhead_p99_ms: number;
  /**
   * The same routed load with direct requests sent beside it at a quarter of the rate, from the same
   * thread in the same seconds: both paths meet the same machine stalls, so the difference is what
   * the router adds under identical conditions (the sequential runs above give the direct path an
   * idler machine).
   */
  beside: { direct_rate_per_s: number; direct_p50_ms: number; direct_p99_ms: number; routed_p50_ms: number; routed_p99_ms: number; overhead_p50_ms: number; overhead_p99_ms: number };
}

export interface FrontendBenchResult {
  output_tokens: number;
  throughput: ThroughputFigure[];
  overhead: OverheadFigure[];
  targets: { streamed_rps_1k: number; streamed_rps_target: number; overhead_p99_ms_1k: number; overhead_p99_target_ms: number };
}

const OUTPUT_TOKENS = 4;
const MODEL = 'bench';

export async function runFrontendBench(o: FrontendBenchOptions = {}): Promise<FrontendBenchResult> {
  const log = o.log ?? (() => undefined);
  const engine = inThread<string>(new URL('./engine-worker.ts', import.meta.url), { outputTokens: OUTPUT_TOKENS });
  const engineUrl = await engine.result;
  const router = await createRouter({
    port: 0,
    model: MODEL,
    blockSize: 16,
    health: { intervalMs: 0 },
    maxBodyBytes: 16 << 20,
    workers: [{ id: 0, role: 'aggregated', kind: 'vllm', baseUrl: engineUrl }],
  });
  const server = await listenUws(router, { host: '127.0.0.1', port: 0 });
  try {
    const sizes = [1024, 8192];
    const throughput: ThroughputFigure[] = [];
    const overhead: OverheadFigure[] = [];
    const closedRequests = o.quick ? 2_000 : 30_000;
    const closedMs = o.quick ? 2_000 : 15_000;
    const openRequests = o.quick ? 500 : 10_000;
    for (const tokens of sizes) {
      for (const stream of [true, false]) {
        const body = requestBody(tokens, stream);
        // Warm up (JIT, connections to the engine) before anything is measured.
        await load({ url: server.url, path: '/v1/completions', body, concurrency: 64, requests: o.quick ? 1_000 : 5_000, maxMs: 5_000 });
        const cpuBefore = threadCpuMicros();
        const r = await load({ url: server.url, path: '/v1/completions', body, concurrency: 64, requests: closedRequests, maxMs: closedMs });
        const cpuAfter = threadCpuMicros();
        const fig: ThroughputFigure = {
          prompt_tokens: tokens,
          stream,
          concurrency: 64,
          requests: r.completed,
          failed: r.failed,
          rps: Math.round(r.rps),
          p50_ms: round(percentile(r.latenciesMs, 50)),
          p99_ms: round(percentile(r.latenciesMs, 99)),
          ...(cpuBefore !== undefined && cpuAfter !== undefined && r.completed > 0
            ? { router_cpu_us_per_request: Math.round(((cpuAfter - cpuBefore) / r.completed) * 10) / 10 }
            : {}),
        };
        throughput.push(fig);
        log(`frontend: ${tokens}-token prompts, ${stream ? 'streamed' : 'non-streamed'}: ${fig.rps} req/s (p50 ${fig.p50_ms} ms, p99 ${fig.p99_ms} ms, router CPU ${fig.router_cpu_us_per_request ?? '?'} us/request${r.failed ? `, ${r.failed} failed: ${r.firstError}` : ''})`);

        const rate = 1000;
        const common = { path: '/v1/completions', body, concurrency: 32, requests: openRequests, maxMs: openRequests + 5_000, ratePerS: rate };
        const direct = await load({ ...common, url: engineUrl });
        const routed = await load({ ...common, url: server.url });
        const besideRate = rate / 4;
        const [besideRouted, besideDirect] = await loadTogether([
          { ...common, url: server.url },
          { ...common, url: engineUrl, ratePerS: besideRate, requests: Math.ceil(openRequests / 4), concurrency: 8 },
        ]);
        const pct = (r: LoadResult, q: number) => percentile(r.latenciesMs, q);
        const ov: OverheadFigure = {
          prompt_tokens: tokens,
          stream,
          rate_per_s: rate,
          requests: routed.completed,
          direct_p50_ms: round(percentile(direct.latenciesMs, 50)),
          direct_p99_ms: round(percentile(direct.latenciesMs, 99)),
          routed_p50_ms: round(percentile(routed.latenciesMs, 50)),
          routed_p99_ms: round(percentile(routed.latenciesMs, 99)),
          overhead_p50_ms: round(percentile(routed.latenciesMs, 50) - percentile(direct.latenciesMs, 50)),
          overhead_p99_ms: round(percentile(routed.latenciesMs, 99) - percentile(direct.latenciesMs, 99)),
          beside: {
            direct_rate_per_s: besideRate,
            direct_p50_ms: round(pct(besideDirect, 50)),
            direct_p99_ms: round(pct(besideDirect, 99)),
            routed_p50_ms: round(pct(besideRouted, 50)),
            routed_p99_ms: round(pct(besideRouted, 99)),
            overhead_p50_ms: round(pct(besideRouted, 50) - pct(besideDirect, 50)),
            overhead_p99_ms: round(pct(besideRouted, 99) - pct(besideDirect, 99)),
          },
        };
        overhead.push(ov);
        log(`frontend: overhead at ${rate} req/s, ${tokens}-token prompts, ${stream ? 'streamed' : 'non-streamed'}: p50 ${ov.overhead_p50_ms} ms, p99 ${ov.overhead_p99_ms} ms; beside a direct baseline: p50 ${ov.beside.overhead_p50_ms} ms, p99 ${ov.beside.overhead_p99_ms} ms`);
      }
    }
    const s1k = throughput.find((t) => t.prompt_tokens === 1024 && t.stream)!;
    const o1k = overhead.find((t) => t.prompt_tokens === 1024 && t.stream)!;
    return {
      output_tokens: OUTPUT_TOKENS,
      throughput,
      overhead,
      targets: { streamed_rps_1k: s1k.rps, streamed_rps_target: 5000, overhead_p99_ms_1k: o1k.overhead_p99_ms, overhead_p99_target_ms: 1 },
    };
  } finally {
    await server.close();
    await router.close();
    await stopThread(engine.worker);
  }
}

async function load(opts: LoadOptions): Promise<LoadResult> {
  const t = inThread<LoadResult>(new URL('./loadgen-worker.ts', import.meta.url), opts);
  try {
    return await t.result;
  } finally {
    await t.worker.terminate();
  }
}

/** Several loads at once, interleaved on one load-generator thread. */
async function loadTogether(opts: LoadOptions[]): Promise<LoadResult[]> {
  const t = inThread<LoadResult[]>(new URL('./loadgen-worker.ts', import.meta.url), { loads: opts });
  try {
    return await t.result;
  } finally {
    await t.worker.terminate();
  }
}

function requestBody(tokens: number, stream: boolean): string {
  const prompt = Array.from({ length: tokens }, (_, i) => (i * 7919) % 50_000);
  return JSON.stringify({ model: MODEL, prompt, max_tokens: OUTPUT_TOKENS, stream, ...(stream ? { stream_options: { include_usage: true } } : {}) });
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}
