// "Tiered KV credit" (issue 15): what indexing the engines' CPU tiers buys. 4 aggregated workers of
// 65,536 GPU blocks of 16 tokens, each with a CPU offload tier of 4 x that (262,144 blocks: the
// host memory of a GPU node is several times its HBM, e.g. 2 TB of DRAM beside 8 x 80 GB), on
// both shared traces, three fleets side by side in each cell (alternating, one process):
//   off     no CPU tier (evicted blocks are gone);
//   credit  the CPU tier, the router indexing its blocks (kv: Dynamo's 0.75 host credit per
//           block; ttft: the reload time instead of the prefill);
//   ignore  the CPU tier, the router ignoring its events (the server's --no-lower-tiers): engines
//           still reload what they find, but routing does not steer requests to it.
// TTFT p50/p90, the hit rate, and the engines' GPU and CPU hits separately.
import { fileURLToPath } from 'node:url';
import type { ReplayPolicy } from '../../src/sim/replay/policies.js';
import { runReplay } from '../../src/sim/replay/replay.js';
import type { PolicySummary } from '../../src/sim/replay/summary.js';
import { loadTrace, type TraceRequest } from '../../src/sim/replay/trace.js';
import type { BenchContext, BenchSuite, Figure, Section, SuiteResult } from '../lib/suite.js';

const TRACES = fileURLToPath(new URL('../../traces/', import.meta.url));
const WORKERS = 4;
const BLOCK_SIZE = 16;
const KV_BLOCKS = 65_536;
const SEED = 0;
const FLEETS = ['off', 'credit', 'ignore'] as const;
type Fleet = (typeof FLEETS)[number];
/** The policies and loads measured: kv (where the credit is a weight) at x1 and x2, ttft (the default) at x1. */
const CELLS: ReadonlyArray<[ReplayPolicy, number]> = [
  ['kv', 1],
  ['kv', 2],
  ['ttft', 1],
];

interface Cell {
  trace: string;
  policy: ReplayPolicy;
  load: number;
  fleets: Record<Fleet, PolicySummary>;
}

/** The quick run's 200 requests never fill 65,536 blocks: its GPUs are small enough to evict. */
const QUICK_KV_BLOCKS = 8192;

async function once(ctx: BenchContext, trace: TraceRequest[], name: string, policy: ReplayPolicy, load: number, fleet: Fleet): Promise<PolicySummary> {
  const kvBlocks = ctx.quick ? QUICK_KV_BLOCKS : KV_BLOCKS;
  const report = await runReplay({
    trace,
    traceName: name,
    workers: WORKERS,
    policies: [policy],
    blockSize: BLOCK_SIZE,
    kvBlocks,
    engine: fleet === 'off' ? undefined : { offloadBlocks: 4 * kvBlocks },
    lowerTiers: fleet !== 'ignore',
    arrivalScale: load,
    seed: SEED,
    onProgress: (m) => ctx.progress(`${name} ${policy} x${load} ${fleet}: ${m}`),
  });
  return report.policies[policy];
}

async function run(ctx: BenchContext): Promise<SuiteResult> {
  const limit = ctx.quick ? 200 : Infinity;
  const cells = ctx.quick ? CELLS.slice(0, 1) : CELLS;
  const out: Cell[] = [];
  for (const name of ['synthetic_trace.jsonl', 'conversation_trace.first-half.jsonl']) {
    const trace = (await loadTrace(TRACES + name)).slice(0, limit);
    for (const [policy, load] of cells) {
      const fleets = {} as Record<Fleet, PolicySummary>;
      for (const fleet of FLEETS) fleets[fleet] = await once(ctx, trace, name, policy, load, fleet);
      out.push({ trace: name, policy, load, fleets });
    }
  }
  const figures: Figure[] = [];
  for (const c of out) {
    const where = `${c.policy}, ${c.trace}, arrivals x${c.load}`;
    const { credit, ignore, off } = c.fleets;
    figures.push({
      name: `TTFT p90 with a CPU tier the router credits, against the same tier ignored (${where})`,
      value: credit.ttft_ms.p90,
      unit: 'ms',
      reference: { name: 'tier ignored', value: ignore.ttft_ms.p90 },
      better: 'lower',
      headline: c.policy === 'kv' && c.load === 1,
    });
    figures.push({
      name: `TTFT p90 with a CPU tier the router credits, against no CPU tier (${where})`,
      value: credit.ttft_ms.p90,
      unit: 'ms',
      reference: { name: 'no tier', value: off.ttft_ms.p90 },
      better: 'lower',
    });
    figures.push({
      name: `CPU-tier hits with the router crediting them, share of prompt tokens (${where})`,
      value: 100 * (credit.offload?.cpu_hit_rate ?? 0),
      unit: '%',
      reference: { name: 'tier ignored', value: 100 * (ignore.offload?.cpu_hit_rate ?? 0) },
      better: 'higher',
    });
  }
  const sections: Section[] = [{ title: 'TTFT and hits: no CPU tier, a tier the router credits, a tier it ignores', markdown: table(out) }];
  if (ctx.quick)
    sections.unshift({
      title: 'Quick run',
      markdown: `The first ${limit} requests of each trace, kv at x1 only, GPUs of ${QUICK_KV_BLOCKS} blocks (CPU tiers of ${4 * QUICK_KV_BLOCKS}).\n`,
    });
  return { figures, sections, data: out };
}

const pct = (v: number | undefined) => (v === undefined ? '' : `${(v * 100).toFixed(1)}%`);

function table(cells: Cell[]): string {
  const rows = cells.flatMap((c) =>
    FLEETS.map((f) => {
      const s = c.fleets[f];
      const ratio = (s.ttft_ms.p90 / c.fleets.ignore.ttft_ms.p90).toFixed(2);
      return `| ${c.trace} | ${c.policy} x${c.load} | ${f} | ${Math.round(s.ttft_ms.p50)} | ${Math.round(s.ttft_ms.p90)} | ${ratio} | ${pct(s.hit_rate)} | ${pct(s.offload?.gpu_hit_rate)} | ${pct(s.offload?.cpu_hit_rate)} |`;
    }),
  );
  return (
    [
      '| trace | policy, load | fleet | TTFT p50 ms | TTFT p90 ms | p90 / ignored | hit rate | GPU hits | CPU hits |',
      '|---|---|---|---:|---:|---:|---:|---:|---:|',
      ...rows,
    ].join('\n') +
    '\n\nFleets: `off` no CPU tier; `credit` a CPU tier of 262,144 blocks per worker (4x its GPU), the router indexing it (lower tiers on: kv credits 0.75 per host block, ttft adds the reload time); `ignore` the same tier, the router ignoring its events (`--no-lower-tiers`). ' +
    "Hit rate is the engines' cached tokens over prompt tokens of completed requests (GPU and CPU); GPU and CPU hits are the engines' own counts at first admission.\n"
  );
}

export const suite: BenchSuite = { name: 'tiers', title: 'Tiered KV credit: a CPU offload tier, credited or ignored', order: 66, run };
