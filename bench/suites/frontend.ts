// The frontend (issue 5): requests per second and router overhead of the uWebSockets.js server in
// front of an engine that answers at once, for streamed and non-streamed requests with 1k and
// 8k-token prompts (see bench/frontend/run.ts for the method). Targets: >= 5,000 streamed req/s
// with short outputs; router overhead p99 < 1 ms at 1,000 req/s.
import { ROUTER_NODE_FLAGS } from '../../src/cli/node-flags.js';
import { loadHfTokenizer } from '../../src/preprocess/hf-tokenizer.js';
import type { PromptFormFigure } from '../frontend/prompt-forms.js';
import { runFrontendBench } from '../frontend/run.js';
import { compilePackage } from '../lib/compiled.js';
import { REAL_TOKENIZER_PACKAGE, realTokenizerDir } from '../lib/real-tokenizer.js';
import type { BenchContext, BenchSuite, Figure, SuiteResult } from '../lib/suite.js';
import { barChart } from '../lib/svg.js';

const label = (tokens: number, stream: boolean) => `${tokens / 1024}k-token prompt, ${stream ? 'streamed' : 'non-streamed'}`;

export const suite: BenchSuite = {
  name: 'frontend',
  title: 'Frontend: requests per second and router overhead (uWebSockets.js, instant engine)',
  order: 60,
  // The router's process runs with the flags npm start gives it (src/cli/node-flags.ts).
  nodeFlags: ROUTER_NODE_FLAGS,
  // The router is the compiled package (frontend/compiled-router.ts), compiled from src/ first.
  prepare: (ctx) => compilePackage(ctx.progress),
  async run(ctx: BenchContext): Promise<SuiteResult> {
    ctx.progress(`loading the real tokenizer (${REAL_TOKENIZER_PACKAGE})`);
    const dir = realTokenizerDir();
    const r = await runFrontendBench({ quick: ctx.quick, log: (line) => ctx.progress(line), realTokenizer: { dir, tokenizer: await loadHfTokenizer(dir) } });
    const figures: Figure[] = [];
    for (const t of r.throughput) {
      const headline = t.prompt_tokens === 1024 && t.stream;
      figures.push({
        name: `requests per second, ${label(t.prompt_tokens, t.stream)}, ${r.output_tokens} output tokens, ${t.concurrency} in flight`,
        value: t.rps,
        unit: 'req/s',
        better: 'higher',
        ...(t.stream && t.prompt_tokens === 1024 ? { target: { op: '>=' as const, value: 5000 } } : {}),
        headline,
        ...(t.failed ? { note: `${t.failed} failed` } : {}),
      });
      if (t.router_cpu_us_per_request !== undefined) {
        figures.push({
          name: `router thread CPU per request, ${label(t.prompt_tokens, t.stream)}, closed loop`,
          value: t.router_cpu_us_per_request,
          unit: 'us',
          better: 'lower',
          note: 'the router thread alone (/proc/thread-self/stat, 10 ms ticks over the whole run)',
        });
      }
    }
    for (const o of r.overhead) {
      const uniform = o.arrivals === 'uniform';
      const at = `at ${o.rate_per_s} req/s${uniform ? '' : ' (Poisson arrivals)'}, ${label(o.prompt_tokens, o.stream)}`;
      figures.push({
        name: `router overhead p99 ${at}`,
        value: o.overhead_p99_ms,
        unit: 'ms',
        better: 'lower',
        // The target's load is a steady 1,000 req/s; Poisson arrivals show what bursts add.
        ...(o.prompt_tokens === 1024 && uniform ? { target: { op: '<=' as const, value: 1 } } : {}),
        headline: o.prompt_tokens === 1024 && o.stream && uniform,
        note: `median of ${o.rounds} alternating rounds (${o.round_overhead_p99_ms.join(', ')} ms); all rounds pooled: ${o.pooled_overhead_p99_ms} ms`,
      });
      figures.push({ name: `router overhead p50 ${at}`, value: o.overhead_p50_ms, unit: 'ms', better: 'lower' });
      figures.push({
        name: `router scavenge pause p50 ${at}`,
        value: o.router_gc.scavenge_p50_ms,
        unit: 'ms',
        better: 'lower',
        note: `${o.router_gc.scavenges_per_s} scavenges/s over the rounds, longest ${o.router_gc.scavenge_max_ms} ms, ${o.router_gc.full_gcs} full GCs`,
      });
    }
    const pt = r.per_token;
    figures.push({
      name: `streamed tokens per second, ${pt.stream_tokens}-token streams written a token at a time, ${pt.concurrency} in flight`,
      value: pt.tokens_per_s,
      unit: 'tokens/s',
      better: 'higher',
      note: `the engine writes a token every ${pt.token_gap_ms} ms per stream, so this is bounded by the engine, not the router${pt.failed ? `; ${pt.failed} failed` : ''}`,
    });
    if (pt.router_cpu_us_per_token !== undefined) {
      figures.push({
        name: `router thread CPU per streamed token, ${pt.stream_tokens}-token streams written a token at a time`,
        value: pt.router_cpu_us_per_token,
        unit: 'us',
        better: 'lower',
        note: `a request's CPU over its tokens, its routing included (${pt.router_cpu_us_per_request} us per request)`,
      });
    }
    const forms = r.prompt_forms ?? [];
    figures.push(...promptFormFigures(forms));
    const lc = r.logger_cost;
    figures.push({
      name: `router thread CPU per request with logging at info, ${label(lc.prompt_tokens, lc.stream)}, closed loop`,
      value: lc.info_cpu_us_per_request,
      unit: 'us',
      better: 'lower',
      reference: { name: 'the same router with logging silent', value: lc.silent_cpu_us_per_request },
      note: `median of ${lc.rounds} alternating rounds of ${lc.requests_per_round} requests (info ${lc.round_info_cpu_us.join(', ')}; silent ${lc.round_silent_cpu_us.join(', ')} us); ${lc.info_lines_during_rounds} lines logged during the rounds${lc.failed ? `; ${lc.failed} failed` : ''}`,
    });
    const rows = r.overhead.map((o) => {
      const t = r.throughput.find((x) => x.prompt_tokens === o.prompt_tokens && x.stream === o.stream)!;
      return `| ${label(o.prompt_tokens, o.stream)} | ${o.arrivals} | ${t.rps} | ${t.router_cpu_us_per_request ?? 'n/a'} | ${t.p50_ms} / ${t.p99_ms} | ${o.direct_p50_ms} / ${o.direct_p99_ms} | ${o.routed_p50_ms} / ${o.routed_p99_ms} | ${o.overhead_p50_ms} / ${o.overhead_p99_ms} | ${o.round_overhead_p99_ms.join(', ')} | ${o.pooled_overhead_p99_ms} | ${o.router_gc.scavenges_per_s}, ${o.router_gc.scavenge_p50_ms} / ${o.router_gc.scavenge_max_ms} |`;
    });
    const markdown = [
      "The router runs alone in this process's main thread; the engine (an OpenAI server that answers",
      `at once with ${r.output_tokens} tokens) and the load generator run in a process of their own, as clients and`,
      'engines are other machines in a deployment; token-id prompts go over loopback.',
      'Throughput: closed loop, 64 requests in flight, the load generator on its own thread. Overhead:',
      "open loop at 1,000 req/s with the load generator on the engine's thread (that process keeps to",
      'one of the two cores, the router has the other), sends paced by a thread of their own: evenly',
      "spaced (the target's load) and, for 1k-token prompts, also as a Poisson process (bursts: a",
      'request may arrive while the router is still busy with the one before); latency through the router minus latency',
      `straight to the engine at the same percentile, in ${r.overhead[0]?.rounds ?? 0} alternating rounds (direct then routed, then routed`,
      'then direct, ...); the figure is the median over the rounds, so a stall of the shared machine',
      "that hits one run moves one round. Pooled: all rounds' latencies together.",
      '',
      `Long streams: ${pt.stream_tokens}-token answers that the engine writes a token at a time (${pt.token_gap_ms} ms apart, a socket read`,
      `and a client write per token at the router), ${pt.concurrency} in flight: ${pt.tokens_per_s} tokens/s, router CPU ${pt.router_cpu_us_per_token ?? 'n/a'} us per token`,
      `(${pt.router_cpu_us_per_request ?? 'n/a'} us per request).`,
      '',
      '| request | arrivals (overhead) | req/s | router thread CPU per request (us) | latency p50 / p99 (ms), closed loop | direct p50 / p99 (ms), pooled | routed p50 / p99 (ms), pooled | overhead p50 / p99 (ms), median of rounds | overhead p99 per round (ms) | pooled overhead p99 (ms) | router scavenges: per s, p50 / max (ms) |',
      '|---|---|---|---|---|---|---|---|---|---|---|',
      ...rows,
    ].join('\n');
    const cats = [1024, 8192].map((n) => `${n / 1024}k tokens`);
    const chart = barChart({
      title: 'Router throughput (closed loop, instant engine)',
      categories: cats,
      series: [true, false].map((stream) => ({
        name: stream ? 'streamed' : 'non-streamed',
        values: [1024, 8192].map((n) => r.throughput.find((t) => t.prompt_tokens === n && t.stream === stream)?.rps ?? null),
      })),
      yLabel: 'requests / s',
    });
    const sections = [{ title: 'Frontend', markdown }];
    if (forms.length > 0) sections.push({ title: 'Frontend: text, chat and token-id prompts (real tokenizer)', markdown: promptFormsMarkdown(forms) });
    return { figures, sections, charts: [{ name: 'throughput', title: 'Router throughput', svg: chart }], data: r };
  },
};

/** Per prompt form: req/s and router CPU against the token-id form's, added latency at the steady rate (target < 0.5 ms). */
function promptFormFigures(forms: PromptFormFigure[]): Figure[] {
  const ids = forms.find((f) => f.form === 'token ids');
  const figures: Figure[] = [];
  for (const f of forms) {
    const vsIds = f !== ids && ids !== undefined;
    const what = `${f.form} prompts, 1k tokens, streamed, real tokenizer`;
    figures.push({
      name: `requests per second, ${what}, ${f.concurrency} in flight`,
      value: f.rps,
      unit: 'req/s',
      better: 'higher',
      ...(vsIds ? { reference: { name: 'token-id prompts', value: ids.rps } } : {}),
      headline: f.form === 'text',
      note: `median of ${f.rounds} rounds, the forms alternating (${f.round_rps.join(', ')})${f.failed ? `; ${f.failed} failed` : ''}`,
    });
    if (f.router_cpu_us_per_request !== undefined) {
      figures.push({
        name: `router thread CPU per request, ${what}`,
        value: f.router_cpu_us_per_request,
        unit: 'us',
        better: 'lower',
        ...(vsIds && ids.router_cpu_us_per_request !== undefined ? { reference: { name: 'token-id prompts', value: ids.router_cpu_us_per_request } } : {}),
        headline: f.form === 'text',
        note: `the router thread alone, median of ${f.rounds} rounds (${f.round_router_cpu_us?.join(', ')} us)`,
      });
    }
    if (f.overhead) {
      figures.push({
        name: `added latency p99 at a steady ${f.overhead.rate_per_s} req/s, ${what}`,
        value: f.overhead.overhead_p99_ms,
        unit: 'ms',
        better: 'lower',
        target: { op: '<=', value: 0.5 },
        headline: true,
        note: `median of ${f.overhead.rounds} alternating rounds (${f.overhead.round_overhead_p99_ms.join(', ')} ms); pooled ${f.overhead.pooled_overhead_p99_ms} ms`,
      });
      figures.push({
        name: `added latency p50 at a steady ${f.overhead.rate_per_s} req/s, ${what}`,
        value: f.overhead.overhead_p50_ms,
        unit: 'ms',
        better: 'lower',
      });
    }
  }
  return figures;
}

function promptFormsMarkdown(forms: PromptFormFigure[]): string {
  const rows = forms.map((f) => {
    const o = f.overhead;
    return `| ${f.form} | ${f.prompt_tokens} | ${f.rps} | ${f.router_cpu_us_per_request ?? 'n/a'} | ${f.round_router_cpu_us?.join(', ') ?? ''} | ${f.p50_ms} / ${f.p99_ms} | ${o ? `${o.overhead_p50_ms} / ${o.overhead_p99_ms}` : 'n/a'} | ${o ? o.round_overhead_p99_ms.join(', ') : ''} |`;
  });
  return [
    "A router configured with Qwen2.5's tokenizer.json and chat template, in front of the same instant",
    'engine: one 1k-token prompt sent as token ids, as text (the router tokenizes it) and as a chat request',
    '(system + user message: the router renders the template and tokenizes), streamed, 4 output tokens.',
    'Engines get token ids in every case. Throughput: closed loop, 64 in flight, the three forms in alternating',
    'rounds (medians over the rounds; the per-round router CPU is listed). Added latency: open loop at',
    'a steady rate, routed minus direct at the same percentile, median of alternating rounds (the instant',
    'engine has no chat endpoint to compare a chat request against).',
    '',
    '| prompt | tokens | req/s | router thread CPU per request (us) | CPU per round (us) | latency p50 / p99 (ms), closed loop | added latency p50 / p99 (ms) | added p99 per round (ms) |',
    '|---|---|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}
