// The vllm-router comparison as report figures and a Markdown table: per contender, TTFT p50/p90
// (median over rounds of each round's percentile), throughput, and the prefix-cache hit rate the
// engines themselves counted (vllm:prefix_cache_hits_total / queries over the round).
import { formatNumber } from '../../lib/format.js';
import { median, summarize } from '../../lib/stats.js';
import type { Figure, SuiteResult } from '../../lib/suite.js';
import type { PrefixWorkload, RequestSample } from './workload.js';

export interface ContenderRound {
  contender: string;
  round: number;
  samples: RequestSample[];
  seconds: number;
  hits: number;
  queries: number;
}

export interface VllmRouterComparison {
  version: string;
  workload: PrefixWorkload;
  engines: number;
  blockSize: number;
  rounds: ContenderRound[];
}

export interface ContenderSummary {
  contender: string;
  ttftP50Ms: number;
  ttftP90Ms: number;
  requestsPerSecond: number;
  outputTokensPerSecond: number;
  hitRatePercent: number;
  failed: number;
  rounds: number;
}

export function summarizeContender(rounds: readonly ContenderRound[]): ContenderSummary {
  const each = rounds.map((r) => {
    const ok = r.samples.filter((s) => s.status === 200);
    const ttft = summarize(ok.map((s) => s.ttftMs).filter((x) => Number.isFinite(x)));
    return {
      p50: ttft.p50,
      p90: ttft.p90,
      rps: ok.length / r.seconds,
      tps: ok.reduce((a, s) => a + s.outputTokens, 0) / r.seconds,
      hit: (r.hits / r.queries) * 100,
      failed: r.samples.length - ok.length,
    };
  });
  return {
    contender: rounds[0].contender,
    ttftP50Ms: median(each.map((e) => e.p50)),
    ttftP90Ms: median(each.map((e) => e.p90)),
    requestsPerSecond: median(each.map((e) => e.rps)),
    outputTokensPerSecond: median(each.map((e) => e.tps)),
    hitRatePercent: median(each.map((e) => e.hit)),
    failed: each.reduce((a, e) => a + e.failed, 0),
    rounds: each.length,
  };
}

export function vllmRouterReport(c: VllmRouterComparison): SuiteResult {
  const names = [...new Set(c.rounds.map((r) => r.contender))];
  const sums = names.map((n) => summarizeContender(c.rounds.filter((r) => r.contender === n)));
  const w = c.workload;
  const setting = `${c.engines} vLLM CPU engines, ${w.prefixes} x ${w.prefixTokens}-token prefixes, ${w.requests} requests at ${w.ratePerSecond}/s`;
  // Every prefix computed once, on one engine: the best any router can do on this workload.
  const prefixBlocks = Math.floor(w.prefixTokens / c.blockSize) * c.blockSize;
  const queriesPerRequest = c.rounds[0] ? c.rounds[0].queries / c.rounds[0].samples.length : Number.NaN;
  const bestHit = (((w.requests - w.prefixes) * prefixBlocks) / (w.requests * queriesPerRequest)) * 100;
  const figures: Figure[] = sums.flatMap((s) => [
    { name: `${s.contender}: TTFT p50, ${setting}`, value: s.ttftP50Ms, unit: 'ms', better: 'lower' as const, headline: true },
    { name: `${s.contender}: TTFT p90, ${setting}`, value: s.ttftP90Ms, unit: 'ms', better: 'lower' as const },
    { name: `${s.contender}: output tokens/s, ${setting}`, value: s.outputTokensPerSecond, unit: 'tokens/s', better: 'higher' as const },
    { name: `${s.contender}: engines' prefix-cache hit rate, ${setting}`, value: s.hitRatePercent, unit: '%', better: 'higher' as const, headline: true },
  ]);
  const f = (x: number, d = 1) => formatNumber(Math.round(x * 10 ** d) / 10 ** d);
  const markdown = [
    `${setting}; each request a prefix plus a ${w.suffixTokens}-token suffix of its own, ${w.outputTokens} output tokens, streamed; block size ${c.blockSize}. ` +
      `Alternating rounds (${sums[0]?.rounds ?? 0} per router), each from cold caches and a fresh router process; figures are medians over rounds. ` +
      `Hit rate: the engines' own vllm:prefix_cache_hits_total / queries over the round (best possible here ${f(bestHit)}%: every prefix computed once).`,
    '',
    '| router | TTFT p50 | TTFT p90 | req/s | output tokens/s | hit rate (engines) | failed |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...sums.map(
      (s) =>
        `| ${s.contender} | ${f(s.ttftP50Ms)} ms | ${f(s.ttftP90Ms)} ms | ${f(s.requestsPerSecond, 2)} | ${f(s.outputTokensPerSecond)} | ${f(s.hitRatePercent)}% | ${s.failed} |`,
    ),
  ].join('\n');
  return {
    figures,
    sections: [{ title: `vllm-router ${c.version} and kvroute on real vLLM engines`, markdown }],
    data: {
      summaries: sums,
      bestHitRatePercent: bestHit,
      rounds: c.rounds.map((r) => ({
        ...r,
        samples: r.samples.map((s) => [s.status, Math.round(s.ttftMs * 10) / 10, Math.round(s.e2eMs * 10) / 10, s.outputTokens]),
      })),
    },
  };
}
