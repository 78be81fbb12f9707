// Faults under load (issue 13): a router in front of four `kvroute mock` worker processes under a
// steady load of streamed requests with fresh prompts; one worker is SIGKILLed, and the requests
// sent in the following seconds are counted by what became of them, for three routers: the
// defaults (failover before the first byte, passive ejection), failover without ejection, and
// neither (what kvroute did before). Health checks run as configured by default (every 5 s), so
// without failover the dead worker draws traffic until a health round notices. Each round starts
// a fresh fleet per router (a killed worker's ports stay held for 60 s), the routers taking turns.
import { formatCount } from '../lib/format.js';
import { median } from '../lib/stats.js';
import type { BenchSuite, Figure, SuiteResult } from '../lib/suite.js';
import { barChart } from '../lib/svg.js';
import { startFaultFleet } from '../faults/fleet.js';
import { runLoad, type LoadRun } from '../faults/load.js';

interface RouterSetup {
  key: 'defaults' | 'no-ejection' | 'neither';
  label: string;
  flags: string[];
}

const ROUTERS: RouterSetup[] = [
  { key: 'defaults', label: 'failover + ejection (the defaults)', flags: [] },
  { key: 'no-ejection', label: 'failover, no ejection (--no-ejection)', flags: ['--no-ejection'] },
  { key: 'neither', label: 'neither (--max-retries 0 --no-ejection)', flags: ['--max-retries', '0', '--no-ejection'] },
];

interface RoundResult {
  router: RouterSetup['key'];
  round: number;
  /** Requests sent after the kill, in the window. */
  sentAfter: number;
  failedAfter: number;
  /** How those failed: their answers' status (0: no answer, the connection failed; 200: an error frame or no [DONE]), counted. */
  failedHow: Record<string, number>;
  /** Requests sent before the kill that failed (in flight on the killed worker). */
  failedInFlight: number;
  /** Legs retried and workers ejected, from the router's /metrics. */
  retries: number;
  ejections: number;
}

async function metricSum(url: string, name: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) if (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  return sum;
}

function tally(router: RouterSetup['key'], round: number, run: LoadRun, windowMs: number, retries: number, ejections: number): RoundResult {
  const after = run.outcomes.filter((o) => o.sentMs >= 0 && o.sentMs < windowMs);
  const failedHow: Record<string, number> = {};
  for (const o of after) if (!o.ok) failedHow[String(o.status)] = (failedHow[String(o.status)] ?? 0) + 1;
  return {
    router,
    round,
    sentAfter: after.length,
    failedAfter: after.filter((o) => !o.ok).length,
    failedHow,
    failedInFlight: run.outcomes.filter((o) => o.sentMs < 0 && !o.ok).length,
    retries,
    ejections,
  };
}

function describeFailures(how: Record<string, number>): string {
  const name = (status: string) => (status === '0' ? 'no answer' : status === '200' ? 'error frame' : status);
  return (
    Object.entries(how)
      .map(([status, n]) => `${n}× ${name(status)}`)
      .join(', ') || '-'
  );
}

export const suite: BenchSuite = {
  name: 'faults',
  title: 'Faults: a worker SIGKILLed under load',
  order: 70,
  async run(ctx): Promise<SuiteResult> {
    const rounds = ctx.quick ? 1 : 3;
    const ratePerS = ctx.quick ? 100 : 200;
    const beforeMs = ctx.quick ? 500 : 2000;
    const windowMs = ctx.quick ? 2000 : 10_000;
    // Quick: the defaults against neither (each fleet takes seconds to start).
    const routers = ctx.quick ? ROUTERS.filter((r) => r.key !== 'no-ejection') : ROUTERS;
    const workers = 4;
    const results: RoundResult[] = [];
    for (let round = 0; round < rounds; round++) {
      // Who goes first rotates from round to round.
      const order = routers.map((_, i) => routers[(i + round) % routers.length]);
      for (const r of order) {
        ctx.progress(`round ${round + 1}/${rounds}: ${r.label}`);
        const fleet = await startFaultFleet({ workers, routerFlags: r.flags, speedup: 1 });
        try {
          const victim = fleet.ids[1];
          const run = await runLoad({
            url: fleet.url,
            ratePerS,
            beforeMs,
            afterMs: windowMs,
            maxTokens: 8,
            tag: `${r.key}-${round}`,
            victim,
            kill: () => fleet.kill(victim),
          });
          results.push(
            tally(
              r.key,
              round,
              run,
              windowMs,
              await metricSum(fleet.url, 'kvroute_leg_retries_total'),
              await metricSum(fleet.url, 'kvroute_worker_ejections_total'),
            ),
          );
        } finally {
          await fleet.close();
        }
      }
    }

    const med = (key: RouterSetup['key'], pick: (r: RoundResult) => number) => median(results.filter((r) => r.router === key).map(pick));
    const windowS = windowMs / 1000;
    const conditions = `${workers} kvroute mock workers, ${ratePerS} req/s of streamed requests with fresh prompts, health checks every 5 s; median of ${rounds} round${rounds > 1 ? 's' : ''}`;
    const neither = med('neither', (r) => r.failedAfter);
    const figures: Figure[] = [
      {
        name: `requests failed among those sent in the ${windowS} s after 1 of ${workers} workers was SIGKILLed, failover + ejection (the defaults)`,
        value: med('defaults', (r) => r.failedAfter),
        unit: 'requests',
        reference: { name: 'without failover and ejection', value: neither },
        target: { op: '<=', value: 0 },
        headline: true,
        note: `${conditions}; besides, ${formatCount(med('defaults', (r) => r.failedInFlight))} streams in flight on the killed worker ended with an error frame; ${formatCount(med('defaults', (r) => r.retries))} leg retried, ${formatCount(med('defaults', (r) => r.ejections))} ejection`,
      },
      {
        name: `requests failed among those sent in the ${windowS} s after the kill, without failover and ejection`,
        value: neither,
        unit: 'requests',
        better: 'lower',
        note: `of ${formatCount(med('neither', (r) => r.sentAfter))} sent; each 503 with Retry-After (the engine never got it), until a health round took the worker out`,
      },
    ];
    if (!ctx.quick) {
      figures.splice(1, 0, {
        name: `requests failed among those sent in the ${windowS} s after the kill, failover without ejection`,
        value: med('no-ejection', (r) => r.failedAfter),
        unit: 'requests',
        reference: { name: 'without failover and ejection', value: neither },
        target: { op: '<=', value: 0 },
        note: `${formatCount(med('no-ejection', (r) => r.retries))} legs retried: the dead worker kept drawing legs until a health round noticed it`,
      });
    }
    const rows = results
      .map(
        (r) =>
          `| ${r.round + 1} | ${ROUTERS.find((x) => x.key === r.router)!.label} | ${r.sentAfter} | ${r.failedAfter} | ${describeFailures(r.failedHow)} | ${r.failedInFlight} | ${r.retries} | ${r.ejections} |`,
      )
      .join('\n');
    return {
      figures,
      sections: [
        {
          title: 'Workload',
          markdown: [
            `Each round and router: four \`kvroute mock\` processes (speedup 1, 8 output tokens a request) behind a \`kvroute serve\` process with the router's flags; ${ratePerS} req/s evenly spaced (the pacer thread of the frontend suite), streamed, every prompt distinct; ${beforeMs / 1000} s of load, then SIGKILL of worker 2, then ${windowS} s more. A request failed when its status was not 200, its stream carried an error frame or did not end with [DONE], or its connection broke. Retries and ejections are the router's own counters (/metrics).`,
            '',
            '| round | router | sent after the kill | failed | how | failed, in flight before the kill | legs retried | ejections |',
            '| ---: | --- | ---: | ---: | --- | ---: | ---: | ---: |',
            rows,
          ].join('\n'),
        },
      ],
      charts: [
        {
          name: 'failed-after-kill',
          title: 'Requests failed after a worker was SIGKILLed',
          svg: barChart({
            title: `Requests failed in the ${windowS} s after 1 of ${workers} workers was SIGKILLed (${ratePerS} req/s)`,
            categories: routers.map((r) => r.label),
            series: [
              { name: 'sent after the kill, failed', values: routers.map((r) => med(r.key, (x) => x.failedAfter)) },
              { name: 'in flight on it, failed', values: routers.map((r) => med(r.key, (x) => x.failedInFlight)) },
            ],
            yLabel: 'requests',
          }),
        },
      ],
      data: { results, ratePerS, beforeMs, windowMs, workers },
    };
  },
};
