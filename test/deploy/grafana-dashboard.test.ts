// The shipped Grafana dashboard against a real Prometheus scraping a running router with traffic:
// every panel's query (its template variables substituted as Grafana would) returns data. The
// traffic makes the incidents the panels are for happen for real: errors (400, 401, 429 and 5xx),
// router queue waits and refusals, leg retries and an ejection (a worker whose engine is down), and
// KV event incidents (a gap, an undecodable message, a rejected event, an engine restart) from a
// scripted engine's ZeroMQ stream.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestEngine } from '../events/helpers.js';
import { killAll } from '../helpers/processes.js';
import { PROMETHEUS_SKIP_REASON, startPrometheus, type PrometheusServer } from '../helpers/prometheus.js';
import { MODEL, startTestRouter, waitFor, type TestRouter } from '../server/helpers/router.js';

const DASHBOARD = JSON.parse(readFileSync(new URL('../../deploy/grafana/kvroute.json', import.meta.url), 'utf8')) as Dashboard;
const JOB = 'kvroute';
const KEY = 'sk-dashboard-test-0123456789';
/** What Grafana puts for $__rate_interval with a 1 s scrape interval is 4 s; a wider window keeps sparse test traffic visible. */
const RATE_INTERVAL = '10s';
/** Panels whose value is NaN without sibling router replicas (a quantile of no observations); they must still return a series. */
const NAN_WITHOUT_REPLICAS = new Set(['Replica sync lag']);

interface Target {
  expr: string;
  legendFormat?: string;
  refId: string;
  datasource?: { uid: string };
}
interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  datasource?: { uid: string };
  targets?: Target[];
}
interface Dashboard {
  uid: string;
  panels: Panel[];
  templating: { list: Array<{ name: string; type: string; query: unknown; allValue?: string }> };
}
type Matrix = Array<{ metric: Record<string, string>; values: Array<[number, string]> }>;

const graphPanels = DASHBOARD.panels.filter((p) => p.type !== 'row');

/** The expression as Grafana sends it: $job as the job, $model as its All value's regex, $__rate_interval as a duration. */
function substitute(expr: string): string {
  return expr.replaceAll('$__rate_interval', RATE_INTERVAL).replaceAll('$job', JOB).replaceAll('$model', '.*');
}

describe('deploy/grafana/kvroute.json: the shape Grafana imports', () => {
  it('takes its data source, job and model from template variables', () => {
    const vars = DASHBOARD.templating.list;
    expect(vars.map((v) => v.name)).toEqual(['datasource', 'job', 'model']);
    expect(vars[0]).toMatchObject({ type: 'datasource', query: 'prometheus' });
    expect(vars[1]).toMatchObject({ type: 'query', allValue: '.*' });
    expect(vars[2]).toMatchObject({ type: 'query', allValue: '.*' });
    for (const p of graphPanels) {
      expect(p.datasource?.uid, p.title).toBe('${datasource}');
      expect(p.targets?.length, p.title).toBeGreaterThan(0);
      for (const t of p.targets ?? []) {
        expect(t.datasource?.uid, p.title).toBe('${datasource}');
        expect(t.expr, p.title).toContain('job=~"$job"');
      }
    }
  });

  it('has unique panel ids and a grid where no two panels overlap', () => {
    const ids = DASHBOARD.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    const cells = new Map<string, string>();
    for (const p of DASHBOARD.panels) {
      const { x, y, w, h } = p.gridPos;
      expect(x + w, p.title).toBeLessThanOrEqual(24);
      for (let i = x; i < x + w; i++) {
        for (let j = y; j < y + h; j++) {
          const key = `${i},${j}`;
          expect(cells.get(key), `${p.title} overlaps ${cells.get(key)}`).toBeUndefined();
          cells.set(key, p.title);
        }
      }
    }
  });
});

describe.skipIf(PROMETHEUS_SKIP_REASON !== null)('deploy/grafana/kvroute.json against Prometheus scraping a router with traffic', () => {
  let t: TestRouter;
  let engine: TestEngine;
  let prom: PrometheusServer;
  let started: number;

  beforeAll(async () => {
    t = await startTestRouter({
      prefill: 1,
      decode: 2,
      speedup: 20,
      apiKeys: [{ name: 'dashboard-test', key: KEY }],
      // Round robin: the dead worker below gets its share of legs (retried elsewhere) until it is ejected,
      // and again each time its 1 s ejection ends.
      // A queue that holds requests as soon as every worker has prefill work, and refuses beyond 3 waiting.
      config: {
        routerQueue: { threshold: 0.005, maxRequests: 3 },
        sessionAffinity: true,
        routing: { policy: 'round_robin' },
        outlierDetection: { baseEjectionTimeMs: 1000 },
      },
    });
    // A decode worker whose engine is down (legs sent there fail and are retried, then it is ejected),
    // with a scripted engine's KV event stream of its own.
    engine = await TestEngine.start();
    t.router.registry.add({
      id: 90,
      role: 'decode',
      kind: 'vllm',
      baseUrl: 'http://127.0.0.1:9',
      dpSize: 1,
      kvEvents: [engine.endpoint],
      replayEndpoints: [engine.replayEndpoint!],
    });
    prom = await startPrometheus(JOB, [new URL(t.url).host]);
    started = Date.now() / 1000;
  }, 60_000);

  afterAll(async () => {
    await prom?.close();
    await t?.close();
    await engine?.close();
    killAll();
  });

  it('answers every panel query with data', async () => {
    await waitFor(
      async () =>
        (
          await prom.api<Array<{ health: string }>>('targets', {}).then((d) => (d as unknown as { activeTargets: Array<{ health: string }> }).activeTargets)
        ).some((a) => a.health === 'up'),
      'the router target to be up',
      20_000,
    );
    await traffic(t, engine);
    // Two scrapes after the traffic, so the last increase is in.
    await new Promise((r) => setTimeout(r, 2500));
    const end = Date.now() / 1000;

    // The variables' own queries: label_values(kvroute_workers, job) and label_values(kvroute_requests_total{job=~"$job"}, model).
    expect(await prom.api<string[]>('label/job/values', { 'match[]': 'kvroute_workers' })).toContain(JOB);
    expect(await prom.api<string[]>('label/model/values', { 'match[]': `kvroute_requests_total{job=~"${JOB}"}` })).toContain(MODEL);

    const empty: string[] = [];
    const noValue: string[] = [];
    for (const p of graphPanels) {
      for (const target of p.targets ?? []) {
        const expr = substitute(target.expr);
        const data = await prom.api<{ resultType: string; result: Matrix }>('query_range', {
          query: expr,
          start: String(started),
          end: String(end),
          step: '1',
        });
        const where = `${p.title} [${target.refId}] ${expr}`;
        if (data.result.length === 0) empty.push(where);
        else if (!NAN_WITHOUT_REPLICAS.has(p.title) && !data.result.some((s) => s.values.some(([, v]) => Number.isFinite(Number(v))))) noValue.push(where);
      }
    }
    expect(empty, 'queries without any series').toEqual([]);
    expect(noValue, 'queries whose series hold no number').toEqual([]);
  }, 120_000);

  it('shows the incidents the traffic caused, not only zero lines', async () => {
    const end = Date.now() / 1000;
    const max = async (expr: string) => {
      const data = await prom.api<{ result: Matrix }>('query_range', { query: substitute(expr), start: String(started), end: String(end), step: '1' });
      return Math.max(0, ...data.result.flatMap((s) => s.values.map(([, v]) => Number(v)).filter(Number.isFinite)));
    };
    const panelExpr = (title: string, refId = 'A') => graphPanels.find((p) => p.title === title)!.targets!.find((x) => x.refId === refId)!.expr;
    expect(await max(panelExpr('Error share', 'B')), '5xx share').toBeGreaterThan(0);
    expect(await max(panelExpr('Leg retries')), 'leg retries').toBeGreaterThan(0);
    expect(await max(panelExpr('Worker ejections')), 'ejections').toBeGreaterThan(0);
    expect(await max(panelExpr('Router queue rejections')), 'queue rejections').toBeGreaterThan(0);
    expect(await max(panelExpr('Router queue wait', 'B')), 'queue wait p99').toBeGreaterThan(0);
    for (const ref of ['A', 'C']) expect(await max(panelExpr('Stream incidents', ref)), `stream incidents ${ref}`).toBeGreaterThan(0);
    for (const ref of ['A', 'B']) expect(await max(panelExpr('Rejected and undecodable events', ref)), `ingest errors ${ref}`).toBeGreaterThan(0);
    expect(await max(panelExpr('Time to first token', 'C')), 'TTFT p99').toBeGreaterThan(0);
    expect(await max(panelExpr('End-to-end request duration', 'C')), 'end-to-end p99').toBeGreaterThan(0);
    expect(await max(panelExpr('Errors by status and code')), 'errors by code').toBeGreaterThan(0);
    expect(await max(panelExpr('CPU')), 'router CPU').toBeGreaterThan(0);
    expect(await max(panelExpr('Predicted hit rate')), 'predicted hit rate').toBeGreaterThan(0);
  }, 60_000);
});

/** About 12 s of requests of every kind, with the scripted engine's incidents in the middle. */
async function traffic(t: TestRouter, engine: TestEngine): Promise<void> {
  const auth = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
  const post = (body: unknown, headers: Record<string, string> = auth) =>
    fetch(`${t.url}/v1/completions`, { method: 'POST', headers, body: JSON.stringify(body) }).then((r) => r.text().then(() => r.status));
  const prefix = 'The router keeps a radix tree of the KV blocks each engine holds. '.repeat(8);
  const statuses = new Map<number, number>();
  const count = (s: number) => statuses.set(s, (statuses.get(s) ?? 0) + 1);
  const until = Date.now() + 12_000;
  let n = 0;
  const incidents = (async () => {
    await new Promise((r) => setTimeout(r, 2000));
    const blocks = (from: number) => Array.from({ length: 16 }, (_, i) => from + i);
    await engine.publish([
      { type: 'BlockStored', blockHashes: [11n], parentBlockHash: null, tokenIds: blocks(0), blockSize: 16, loraName: null, medium: 'GPU' },
    ]);
    await engine.publish(
      [{ type: 'BlockStored', blockHashes: [12n], parentBlockHash: 11n, tokenIds: blocks(16), blockSize: 16, loraName: null, medium: 'GPU' }],
      { drop: true },
    );
    await engine.publish([{ type: 'BlockRemoved', blockHashes: [777n], medium: 'GPU' }]); // after the gap: replayed, then rejected (unknown block)
    await engine.publishPayload(Buffer.from('not msgpack at all'));
    await new Promise((r) => setTimeout(r, 2000));
    // A second rejection: a counter's series is born with the first, which increase() cannot see.
    await engine.publish([{ type: 'BlockRemoved', blockHashes: [778n], medium: 'GPU' }]);
    await engine.publishPayload(Buffer.from('still not msgpack'));
    await new Promise((r) => setTimeout(r, 2000));
    engine.restart();
    await engine.publish([
      { type: 'BlockStored', blockHashes: [21n], parentBlockHash: null, tokenIds: blocks(100), blockSize: 16, loraName: null, medium: 'GPU' },
    ]);
  })();
  // Rounds of 10 requests at once: each burst fills the router queue (waits and refusals) again.
  const one = async (i: number) => {
    const body = { model: MODEL, prompt: `${prefix} request ${i % 5}`, max_tokens: 6, stream: i % 2 === 0 };
    if (i % 17 === 3) return count(await post({ model: MODEL, prompt: 7 })); // 400
    if (i % 23 === 5) return count(await post(body, { 'content-type': 'application/json' })); // 401
    if (i % 13 === 7) return count(await post(body, { ...auth, 'x-worker-instance-id': '90' })); // pinned to the dead engine: 5xx
    if (i % 3 === 1) return count(await post(body, { ...auth, 'x-session-id': `session-${i % 4}` }));
    count(await post(body));
  };
  const rounds = async () => {
    while (Date.now() < until) {
      await Promise.all(Array.from({ length: 10 }, () => one(n++)));
      await new Promise((r) => setTimeout(r, 300));
    }
  };
  await Promise.all([incidents, rounds()]);
  for (const s of [200, 400, 401, 429]) expect(statuses.get(s), `answers with status ${s}: ${JSON.stringify([...statuses])}`).toBeGreaterThan(0);
  expect(
    [...statuses.keys()].some((s) => s >= 500),
    `a 5xx among ${JSON.stringify([...statuses])}`,
  ).toBe(true);
}
