// The stage split of stage-probe.ts: a traced request's times (ns, one monotonic clock) cut into
// stages, their percentiles, and what the slowest 1% spent beyond the median request, with the
// router's GC pauses that overlap them.
import { percentile, sorted } from '../../lib/stats.js';

/** One routed request: the load generator's send / done and the router's stage times (ns). */
export interface StageRow {
  round: number;
  sent: number;
  recv: number;
  body: number;
  create: number;
  headers: number;
  written: number;
  head: number;
  ended: number;
  done: number;
}

/** The stages, in order; "own" ones are the router's code running for this request. */
export const STAGES: ReadonlyArray<{ name: string; from: keyof StageRow; to: keyof StageRow; own: boolean }> = [
  { name: 'client -> router handler (kernel, waits)', from: 'sent', to: 'recv', own: false },
  { name: 'router: body read', from: 'recv', to: 'body', own: false },
  { name: 'router: body -> engine call (own code)', from: 'body', to: 'create', own: true },
  { name: 'router: engine call created -> head built (undici)', from: 'create', to: 'headers', own: true },
  { name: 'router: engine request written (socket write)', from: 'headers', to: 'written', own: true },
  { name: 'engine leg (kernel, engine, waits)', from: 'written', to: 'head', own: false },
  { name: 'router: engine head -> client end (own code)', from: 'head', to: 'ended', own: true },
  { name: 'router end -> client done (kernel, waits)', from: 'ended', to: 'done', own: false },
];

export interface StageStats {
  name: string;
  p50: number;
  p99: number;
  p999: number;
  tailMean: number;
}

export interface Attribution {
  stages: StageStats[];
  tailCount: number;
  tailFrom: number;
  tailWithGc: number;
  allWithGc: number;
  gcCount: number;
  gcTotalMs: number;
  gcMaxMs: number;
}

/** Stage durations in ms per request (a time the router did not record makes its stages NaN). */
function durations(r: StageRow): Record<string, number> {
  const t = r as unknown as Record<string, number | undefined>;
  const out: Record<string, number> = {};
  for (const s of STAGES) out[s.name] = ((t[s.to] ?? Number.NaN) - (t[s.from] ?? Number.NaN)) / 1e6;
  out.own = STAGES.filter((s) => s.own).reduce((n, s) => n + out[s.name], 0);
  out.rest = STAGES.filter((s) => !s.own).reduce((n, s) => n + out[s.name], 0);
  out.total = (r.done - r.sent) / 1e6;
  return out;
}

/** `gc`: `gcWidth` entries per pause, the first two its start and duration (ns). */
export function attribute(rows: readonly StageRow[], gc: readonly number[], gcWidth: number): Attribution {
  const d = rows.map(durations);
  const names = [...STAGES.map((s) => s.name), 'own', 'rest', 'total'];
  const totals = sorted(d.map((x) => x.total));
  const tailFrom = percentile(totals, 99);
  const tail = d.map((x, i) => ({ x, i })).filter(({ x }) => x.total >= tailFrom);
  const pauses: Array<[number, number]> = [];
  let gcTotal = 0;
  let gcMax = 0;
  for (let i = 0; i + gcWidth <= gc.length; i += gcWidth) {
    pauses.push([gc[i], gc[i] + gc[i + 1]]);
    gcTotal += gc[i + 1] / 1e6;
    gcMax = Math.max(gcMax, gc[i + 1] / 1e6);
  }
  const overlapsGc = (r: StageRow) => pauses.some(([a, b]) => a < r.done && b > r.sent);
  return {
    stages: names.map((name) => {
      const v = sorted(d.map((x) => x[name]).filter((x) => !Number.isNaN(x)));
      const tv = tail.map(({ x }) => x[name]).filter((x) => !Number.isNaN(x));
      return {
        name,
        p50: percentile(v, 50),
        p99: percentile(v, 99),
        p999: percentile(v, 99.9),
        tailMean: tv.reduce((n, x) => n + x, 0) / Math.max(1, tv.length),
      };
    }),
    tailCount: tail.length,
    tailFrom,
    tailWithGc: tail.filter(({ i }) => overlapsGc(rows[i])).length,
    allWithGc: rows.filter(overlapsGc).length,
    gcCount: pauses.length,
    gcTotalMs: gcTotal,
    gcMaxMs: gcMax,
  };
}
