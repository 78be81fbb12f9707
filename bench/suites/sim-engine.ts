// The simulated engine model in virtual time: how many simulated requests, steps, tokens and KV
// events one core sustains, so that trace replays can be sized (issue 4). Two workloads, each one
// engine driven by a discrete-event loop (step, advance by its duration, submit the arrivals):
// a one-hour trace of ~10k requests with prompts of thousands of tokens sharing system prompts,
// and an overloaded small cache where evictions and preemptions dominate.
import { EngineModel, type EngineConfig } from '../../src/sim/engine/index.js';
import { mix32 } from '../../src/sim/engine/rng.js';
import { formatCount, formatNumber } from '../lib/format.js';
import type { BenchContext, BenchSuite, Figure, SuiteResult } from '../lib/suite.js';

interface Workload {
  name: string;
  requests: number;
  /** Virtual duration over which arrivals are spread (Poisson). */
  spanMs: number;
  systemPrompts: number;
  systemTokens: [number, number];
  userTokens: [number, number];
  outputTokens: [number, number];
  engine: EngineConfig;
}

interface Run {
  wallMs: number;
  virtualMs: number;
  requests: number;
  steps: number;
  outputs: number;
  events: number;
  eventBlocks: number;
  promptTokens: number;
  hitRate: number;
  preemptions: number;
  evictions: number;
  meanTtftMs: number;
}

/** A deterministic uniform draw in [lo, hi] from (stream, index). */
function draw(stream: number, index: number, [lo, hi]: [number, number]): number {
  return lo + (mix32(mix32(stream * 0x9e3779b1 + 1) ^ index) % (hi - lo + 1));
}

function promptFor(w: Workload, i: number): Uint32Array {
  const sys = draw(1, i, [0, w.systemPrompts - 1]);
  const sysLen = draw(2, sys, w.systemTokens);
  const userLen = draw(3, i, w.userTokens);
  const p = new Uint32Array(sysLen + userLen);
  for (let t = 0; t < sysLen; t++) p[t] = mix32(sys * 100_003 + t) % 150_000;
  for (let t = sysLen; t < p.length; t++) p[t] = mix32(0x7000_0000 + i * 8191 + t) % 150_000;
  return p;
}

function simulate(w: Workload): Run {
  const m = new EngineModel(w.engine);
  // Poisson arrivals: exponential gaps from a hashed uniform.
  const arrivals = new Float64Array(w.requests);
  const meanGap = w.spanMs / w.requests;
  let t = 0;
  for (let i = 0; i < w.requests; i++) {
    t += -Math.log(1 - mix32(0x51ed + i) / 0x1_0000_0000) * meanGap;
    arrivals[i] = t;
  }
  const firstTokenAt = new Float64Array(w.requests).fill(-1);
  let now = 0;
  let next = 0;
  let steps = 0;
  let outputs = 0;
  let events = 0;
  let eventBlocks = 0;
  let promptTokens = 0;
  const t0 = performance.now();
  while (next < w.requests || m.hasWork()) {
    if (!m.hasWork() && arrivals[next] > now) now = arrivals[next];
    while (next < w.requests && arrivals[next] <= now) {
      const prompt = promptFor(w, next);
      promptTokens += prompt.length;
      m.submit({ id: String(next), promptTokens: prompt, maxTokens: draw(4, next, w.outputTokens) }, arrivals[next]);
      next++;
    }
    const r = m.step(now);
    if (r === null) continue;
    steps++;
    now = r.startMs + r.durationMs;
    outputs += r.outputs.length;
    for (const o of r.outputs) if (o.index === 0) firstTokenAt[Number(o.id)] = now;
    events += r.events.length;
    for (const e of r.events) if (e.type !== 'AllBlocksCleared') eventBlocks += e.blockHashes.length;
  }
  const wallMs = performance.now() - t0;
  let ttft = 0;
  for (let i = 0; i < w.requests; i++) ttft += firstTokenAt[i] - arrivals[i];
  const x = m.metrics();
  return {
    wallMs,
    virtualMs: now,
    requests: w.requests,
    steps,
    outputs,
    events,
    eventBlocks,
    promptTokens,
    hitRate: x.prefixHitRate,
    preemptions: x.preemptions,
    evictions: x.evictions,
    meanTtftMs: ttft / w.requests,
  };
}

function workloads(quick: boolean): Workload[] {
  const scale = quick ? 0.12 : 1;
  const hour = 3_600_000;
  return [
    {
      name: 'one-hour trace',
      requests: Math.round(10_000 * scale),
      spanMs: hour * scale,
      systemPrompts: 40,
      systemTokens: [512, 2048],
      userTokens: [200, 4000],
      outputTokens: [20, 400],
      engine: {},
    },
    {
      name: 'overloaded small cache',
      requests: Math.round(4_000 * scale),
      spanMs: (hour / 2) * scale,
      systemPrompts: 60,
      systemTokens: [512, 2048],
      userTokens: [200, 4000],
      outputTokens: [20, 400],
      engine: { kvBlocks: 2048 },
    },
  ];
}

export const suite: BenchSuite = {
  name: 'sim-engine',
  title: 'Simulated engine model (virtual time, one core)',
  order: 60,
  async run(ctx: BenchContext): Promise<SuiteResult> {
    const figures: Figure[] = [];
    const rows = [
      '| Workload | requests | virtual time | wall time | requests/s | steps/s | output tokens/s | KV events/s (blocks/s) | prefix hit rate | preemptions | evictions | mean TTFT |',
      '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ];
    const runs: Record<string, Run> = {};
    for (const w of workloads(ctx.quick)) {
      ctx.progress(`${w.name}: ${formatCount(w.requests)} requests`);
      simulate({ ...w, requests: Math.min(200, w.requests), spanMs: w.spanMs * (Math.min(200, w.requests) / w.requests) }); // warm-up
      const r = simulate(w);
      runs[w.name] = r;
      const s = r.wallMs / 1000;
      rows.push(
        `| ${w.name} | ${formatCount(r.requests)} | ${formatNumber(r.virtualMs / 1000)} s | ${formatNumber(s)} s | ${formatNumber(r.requests / s)} | ` +
          `${formatNumber(r.steps / s)} | ${formatNumber(r.outputs / s)} | ${formatNumber(r.events / s)} (${formatNumber(r.eventBlocks / s)}) | ` +
          `${formatNumber(r.hitRate * 100)} % | ${formatCount(r.preemptions)} | ${formatCount(r.evictions)} | ${formatNumber(r.meanTtftMs)} ms |`,
      );
      const note = `${formatCount(r.requests)} requests, ${formatNumber(r.promptTokens / r.requests)} prompt tokens on average, one engine, one core`;
      const headline = w.name === 'one-hour trace';
      figures.push(
        { name: `simulated requests per second, ${w.name}`, value: r.requests / s, unit: 'req/s', better: 'higher', headline, note },
        {
          name: `KV events per second, ${w.name}`,
          value: r.events / s,
          unit: 'events/s',
          better: 'higher',
          headline,
          note: `${formatNumber(r.eventBlocks / s)} blocks/s in them`,
        },
        { name: `engine steps per second, ${w.name}`, value: r.steps / s, unit: 'steps/s', better: 'higher' },
        { name: `virtual time per wall second, ${w.name}`, value: r.virtualMs / r.wallMs, unit: 'x', better: 'higher' },
      );
    }
    const hour = runs['one-hour trace'];
    const hourWallS = (hour.wallMs / 1000) * (10_000 / hour.requests);
    figures.push({
      name: 'wall time to replay a one-hour, 10k-request trace on one engine',
      value: hourWallS,
      unit: 's',
      better: 'lower',
      headline: true,
      note: ctx.quick ? 'extrapolated from the quick run' : 'measured',
    });
    return {
      figures,
      sections: [
        {
          title: 'Throughput of the engine model',
          markdown:
            rows.join('\n') +
            '\n\nPrompts share one of the system prompts (prefix caching), then a unique user part; outputs stop at ' +
            'their length. The default engine has 16,384 blocks of 16 tokens; the overloaded one 2,048. Wall time ' +
            'covers the model only (prompt synthesis included), not the router or any I/O.',
        },
      ],
      data: runs,
    };
  },
};
