// Conditional disaggregation (issue 15): both Mooncake traces replayed offline in virtual time
// through the live router on 2 prefill + 2 decode workers (policy kv, vLLM handoff, arrivals x1),
// three ways: every request disaggregated, every request aggregated on the decode workers, and
// decided per request (the defaults: aggregated below 5000 uncached tokens or when the prefill
// worker's queue is longer than the local prefill, always disaggregated from 16,384).
import { fileURLToPath } from 'node:url';
import type { ConditionalDisaggSettings } from '../../src/routing/prefill/mode.js';
import { runReplay, type ReplayReport } from '../../src/sim/replay/replay.js';
import { loadTrace } from '../../src/sim/replay/trace.js';
import type { BenchContext, BenchSuite, Figure, SuiteResult } from '../lib/suite.js';

const TRACES = fileURLToPath(new URL('../../traces/', import.meta.url));
const NEVER = Number.MAX_SAFE_INTEGER;

const SETUPS: ReadonlyArray<{ name: string; conditionalDisagg?: Partial<ConditionalDisaggSettings> }> = [
  { name: 'always disaggregated' },
  { name: 'always aggregated', conditionalDisagg: { enabled: true, bypassBelowTokens: NEVER - 1, disaggAboveTokens: NEVER } },
  { name: 'conditional', conditionalDisagg: { enabled: true } },
];

async function run(ctx: BenchContext): Promise<SuiteResult> {
  const limit = ctx.quick ? 400 : Infinity;
  const figures: Figure[] = [];
  const lines: string[] = [];
  const data: Record<string, Record<string, ReplayReport['policies'][string]>> = {};
  for (const name of ['synthetic_trace.jsonl', 'conversation_trace.first-half.jsonl']) {
    const trace = (await loadTrace(TRACES + name)).slice(0, limit);
    const results: Record<string, ReplayReport['policies'][string]> = {};
    for (const setup of SETUPS) {
      const report = await runReplay({
        trace,
        traceName: name,
        workers: 0,
        disaggregated: { prefill: 2, decode: 2 },
        policies: ['kv'],
        blockSize: 16,
        kvBlocks: 65_536,
        arrivalScale: 1,
        seed: 0,
        scheduling: { conditionalDisagg: setup.conditionalDisagg },
        onProgress: (m) => ctx.progress(`${name}, ${setup.name}: ${m}`),
      });
      results[setup.name] = report.policies.kv;
    }
    data[name] = results;
    const cond = results.conditional;
    const best = Math.min(results['always disaggregated'].ttft_ms.p50, results['always aggregated'].ttft_ms.p50);
    figures.push({
      name: `conditional disaggregation TTFT p50 over the better of always aggregated and always disaggregated, ${name}, 2P+2D, x1`,
      value: cond.ttft_ms.p50 / best,
      unit: 'x',
      target: { op: '<=', value: 1 },
      headline: true,
      note: `${cond.ttft_ms.p50.toFixed(0)} ms against ${best.toFixed(0)} ms`,
    });
    for (const [setup, p] of Object.entries(results)) {
      lines.push(
        `| ${name} | ${setup} | ${p.ttft_ms.p50.toFixed(0)} | ${p.ttft_ms.p90.toFixed(0)} | ${p.ttft_ms.p99.toFixed(0)} | ${(p.hit_rate * 100).toFixed(1)}% | ${
          p.mode_reasons
            ? Object.entries(p.mode_reasons)
                .map(([r, n]) => `${r} ${n}`)
                .join(', ')
            : '-'
        } |`,
      );
    }
  }
  const markdown = [
    `2 prefill + 2 decode workers (vLLM handoff), 65,536 KV blocks of 16 tokens each, policy kv, arrivals x1${ctx.quick ? `, first ${limit} requests` : ''}.`,
    '',
    '| trace | setup | TTFT p50 ms | TTFT p90 ms | TTFT p99 ms | hit rate | mode reasons |',
    '|---|---|---:|---:|---:|---:|---|',
    ...lines,
    '',
  ].join('\n');
  return { figures, sections: [{ title: 'Conditional disaggregation, 2P+2D', markdown }], data };
}

export const suite: BenchSuite = { name: 'conditional-disagg', title: 'Conditional disaggregation', order: 62, run };
