import { describe, expect, it } from 'vitest';
import { completeFigure } from '../../../../bench/lib/suite.js';
import type { AddedLatency, ThroughputRound } from '../../../../bench/peers/smg/compare.js';
import { KV_IDS, KV_TEXT, SMG, smgReport, summarizeThroughput, type SmgComparison } from '../../../../bench/peers/smg/report.js';

const added = (p50: number, p99: number): AddedLatency => ({
  rounds: 3,
  round_overhead_p50_ms: [p50, p50, p50],
  round_overhead_p99_ms: [p99, p99 * 2, p99],
  overhead_p50_ms: p50,
  overhead_p99_ms: p99,
  direct_p50_ms: 0.2,
  direct_p99_ms: 0.5,
  routed_p50_ms: 0.2 + p50,
  routed_p99_ms: 0.5 + p99,
  pooled_overhead_p99_ms: p99 * 1.5,
  rate_per_s: 500,
  requests: 7500,
  failed: 0,
  cpu_us_per_request: 300,
});
const rounds = (rps: number[], cpu: number[]): ThroughputRound[] => rps.map((r, i) => ({ rps: r, cpuUsPerRequest: cpu[i], completed: 10_000, failed: 0 }));

function comparison(extra: Partial<SmgComparison> = {}): SmgComparison {
  return {
    smgVersion: '1.13.0',
    engines: 2,
    promptTokens: 1024,
    prompts: 256,
    outputTokens: 4,
    routerNodeFlags: ['--max-semi-space-size=8'],
    throughput: {
      [SMG]: rounds([5000, 5400, 5200], [160, 150, 170]),
      [KV_TEXT]: rounds([4000, 4200, 4400], [220, 210, 200]),
      [KV_IDS]: rounds([8000, 9000, 7000], [100, 90, 110]),
    },
    added: { [SMG]: added(0.3, 0.8), [KV_TEXT]: added(0.5, 1.5), [KV_IDS]: added(0.2, 0.45) },
    tokenIdProbe: { smg: { status: 400, message: 'prompt: data did not match any variant of untagged enum StringOrArray' }, kvroute: { status: 200 } },
    ...extra,
  };
}

const figure = (r: ReturnType<typeof smgReport>, start: string) => completeFigure(r.figures.find((f) => f.name.startsWith(start))!);

describe('the SMG comparison report', () => {
  it('takes medians of interleaved rounds and sets issue 14 targets from SMG of the same run', () => {
    const r = smgReport(comparison());
    expect(figure(r, 'requests per second, kvroute kv, text prompts')).toMatchObject({
      value: 4200,
      reference: { value: 5200 },
      target: { op: '>=', value: 7800 },
      met: false,
      headline: true,
    });
    expect(figure(r, 'requests per second, kvroute kv, token-id prompts')).toMatchObject({ value: 8000, met: true });
    expect(figure(r, 'router process CPU per request, kvroute kv, text prompts')).toMatchObject({
      value: 210,
      reference: { value: 160 },
      target: { op: '<=', value: 160 },
      met: false,
    });
    expect(figure(r, 'router process CPU per request, kvroute kv, token-id prompts')).toMatchObject({ value: 100, met: true });
    expect(figure(r, 'added latency p99 at a steady 500 req/s, kvroute kv, token-id prompts')).toMatchObject({
      value: 0.45,
      reference: { value: 0.8 },
      target: { op: '<=', value: 0.5 },
      met: true,
    });
    expect(figure(r, 'added latency p99 at a steady 500 req/s, kvroute kv, text prompts').met).toBe(false);
  });

  it('says that SMG refuses token-id prompts, with its own words', () => {
    const md = smgReport(comparison()).sections![0].markdown;
    expect(md).toContain(
      '**Token-id prompts**: SMG answered 400 (prompt: data did not match any variant of untagged enum StringOrArray); kvroute answered 200.',
    );
    expect(md).toContain('| kvroute kv, token-id prompts | 8000 | 100 | 0.2 / 0.45 | 0.45, 0.9, 0.45 |');
    expect(md).not.toContain('Below the offered rate');
  });

  it("names the router's node flags, and says when they are not npm start's", () => {
    expect(smgReport(comparison()).sections![0].markdown).toContain("node `--max-semi-space-size=8`, npm start's flags)");
    expect(smgReport(comparison({ routerNodeFlags: ['--max-semi-space-size=8', '--single-threaded-gc'] })).sections![0].markdown).toContain(
      "node `--max-semi-space-size=8` `--single-threaded-gc`, not npm start's (KVROUTE_BENCH_ROUTER_FLAGS))",
    );
    expect(smgReport(comparison({ routerNodeFlags: [] })).sections![0].markdown).toContain("node without flags, not npm start's)");
    expect(smgReport(comparison({ routerNodeFlags: ['--single-threaded-gc'] })).data).toMatchObject({ routerNodeFlags: ['--single-threaded-gc'] });
  });

  it('says when a router cannot serve the steady rate, so its added latency is a queue', () => {
    const md = smgReport(comparison({ throughput: { ...comparison().throughput, [KV_TEXT]: rounds([250, 260, 240], [3000, 3100, 3200]) } })).sections![0]
      .markdown;
    expect(md).toContain('**Below the offered rate**: kvroute kv, text prompts served 250 req/s in the closed loop, less than the steady 500 req/s');
  });

  it("adds where the machine's CPU went, and the bound it sets, when the rounds have machine figures", () => {
    const withMachine = (rs: ThroughputRound[], world: number, idleShare: number) =>
      rs.map((r) => ({ ...r, machine: { worldUsPerRequest: world, busyUsPerRequest: r.cpuUsPerRequest! + world + 10, idleShare, cores: 2 } }));
    const base = comparison().throughput;
    const r = smgReport(
      comparison({
        throughput: {
          [SMG]: withMachine(base[SMG], 140, 0.02),
          [KV_TEXT]: withMachine(base[KV_TEXT], 130, 0.05),
          [KV_IDS]: withMachine(base[KV_IDS], 120, 0.15),
        },
      }),
    );
    const md = r.sections![0].markdown;
    expect(md).toContain('**Where the CPU went in the closed loop**');
    expect(md).toContain('| SMG cache_aware, text prompts | 5200 | 160 | 140 | 10 | 310 | 2% |');
    expect(md).toContain('(160 + 140) / 1.5 = **200 us**');
    expect((r.data as { routerPlusWorldBoundUs: number }).routerPlusWorldBoundUs).toBe(200);
    expect(smgReport(comparison()).sections![0].markdown).not.toContain('Where the CPU went');
  });

  it('summarizes rounds without CPU figures where /proc is absent', () => {
    const s = summarizeThroughput([
      { rps: 10, completed: 1, failed: 2 },
      { rps: 30, completed: 1, failed: 0 },
    ]);
    expect(s).toMatchObject({ rps: 20, roundsCpu: [], failed: 2 });
    expect(s.cpuUsPerRequest).toBeNaN();
  });
});
