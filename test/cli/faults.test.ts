// Faults as an operator meets them, with real processes: `kvroute serve` routers in front of four
// `kvroute mock` workers, one of them SIGKILLed mid-stream, later restarted, malformed input sent,
// then every worker killed. What each client sees is checked, and every router's load gauges return to 0. The
// assertions are about outcomes and counts, never timings: round robin makes which request meets
// the dead worker certain, and the routers without health checks see it only through their legs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, spawnCli, type CliProcess } from '../helpers/processes.js';
import { bookedLoad, metricSum, prompt } from '../server/helpers/router.js';

interface Mock {
  id: number;
  p: CliProcess;
  url: string;
  events: string;
  replay: string;
}

async function startMock(id: number, ports: { http: number; zmq: number; replay: number } = { http: 0, zmq: 0, replay: 0 }): Promise<Mock> {
  const p = spawnCli([
    'mock',
    '--id',
    String(id),
    '--port',
    String(ports.http),
    '--zmq-port',
    String(ports.zmq),
    '--replay-port',
    String(ports.replay),
    '--log-level',
    'warn',
  ]);
  // On the ports of a killed process the kernel holds them for the TIME_WAIT of its connections (60 s).
  const m = await p.waitFor(/http (http:\/\/\S+)\s+events (tcp:\/\/\S+)\s+replay (tcp:\/\/\S+)/, 90_000);
  return { id, p, url: m[1], events: m[2], replay: m[3] };
}

const portOf = (endpoint: string) => Number(/:(\d+)$/.exec(new URL(endpoint).host)?.[1]);

async function startRouter(mocks: Mock[], flags: string[]): Promise<{ p: CliProcess; url: string }> {
  const workers = mocks.flatMap((m) => ['--worker', `id=${m.id},url=${m.url},events=${m.events},replay=${m.replay}`]);
  const p = spawnCli(['serve', '--port', '0', '--log-level', 'warn', ...flags, ...workers]);
  return { p, url: (await p.waitFor(/kvroute listening on (http:\/\/\S+)/))[1] };
}

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

async function complete(url: string, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** A streamed completion: its answer head at once, its text as it arrives. */
async function openStream(url: string, maxTokens: number) {
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: prompt(64, maxTokens), max_tokens: maxTokens, ignore_eos: true, stream: true }),
  });
  expect(res.status).toBe(200);
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = '';
  const read = async () => {
    const { done, value } = await reader.read();
    if (!done) text += decoder.decode(value, { stream: true });
    return !done;
  };
  return {
    worker: Number(res.headers.get('x-kvroute-decode-worker')),
    /** Reads until the first token chunk arrived. */
    async started() {
      while (!text.includes('"text"')) if (!(await read())) break;
    },
    async rest(): Promise<string> {
      while (await read());
      return text;
    },
  };
}

async function adminWorker(url: string, id: number): Promise<Record<string, unknown>> {
  return ((await (await fetch(`${url}/admin/workers/${id}`)).json()) as { worker: Record<string, unknown> }).worker;
}

async function until(cond: () => Promise<boolean>, what: string, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function killed(m: Mock): Promise<void> {
  m.p.child.kill('SIGKILL');
  await m.p.exited();
}

let mocks: Mock[] = [];
/** kv policy, the defaults, health checks every 300 ms: the router. */
let kv: { p: CliProcess; url: string };
/** Round robin without health checks: it learns of the dead worker from its legs only (ejected for 5 min). */
let rr: { p: CliProcess; url: string };
/** Round robin with failover and ejection off: what the fault costs without them. */
let bare: { p: CliProcess; url: string };

beforeAll(async () => {
  mocks = await Promise.all([1, 2, 3, 4].map((id) => startMock(id)));
  [kv, rr, bare] = await Promise.all([
    startRouter(mocks, ['--health-interval-ms', '300']),
    startRouter(mocks, ['--policy', 'round_robin', '--health-interval-ms', '0', '--ejection-base-ms', '300000']),
    startRouter(mocks, ['--policy', 'round_robin', '--health-interval-ms', '0', '--max-retries', '0', '--no-ejection']),
  ]);
}, 120_000);

afterAll(() => killAll());

describe('kvroute serve in front of four kvroute mock workers, one SIGKILLed', () => {
  let victim: Mock;

  it('mid-stream: only the stream on the killed worker fails, with an error frame; the others end with [DONE]', async () => {
    // Round robin: four streams at once land on the four workers.
    const streams = await Promise.all([0, 1, 2, 3].map((i) => openStream(rr.url, 400 + i)));
    expect(streams.map((s) => s.worker).sort()).toEqual([1, 2, 3, 4]);
    await Promise.all(streams.map((s) => s.started()));
    victim = mocks[1];
    await killed(victim);
    const texts = await Promise.all(streams.map((s) => s.rest()));
    for (const [i, s] of streams.entries()) {
      if (s.worker === victim.id) {
        expect(texts[i]).toMatch(/data: \{"error":\{"message":"engine connection broke mid-response \(worker 2\)"/);
        expect(texts[i]).not.toContain('[DONE]');
      } else {
        expect(texts[i].trimEnd().endsWith('data: [DONE]')).toBe(true);
      }
    }
  }, 60_000);

  it('after it died, every request with a fresh prompt succeeds: its legs go to other workers (the issue: 8 of 12 got 502)', async () => {
    for (let i = 0; i < 12; i++) {
      const r = await complete(kv.url, { prompt: prompt(48, 1000 + i), max_tokens: 4, stream: i % 2 === 0 });
      expect(r.status, r.text).toBe(200);
      expect(r.headers.get('x-kvroute-decode-worker')).not.toBe(String(victim.id));
    }
    for (let i = 0; i < 8; i++) {
      const r = await complete(rr.url, { prompt: prompt(48, 2000 + i), max_tokens: 4, stream: i % 2 === 1 });
      expect(r.status, r.text).toBe(200);
      expect(r.headers.get('x-kvroute-decode-worker')).not.toBe(String(victim.id));
    }
    // Round robin met the dead worker once: one retry, and the refusal ejected it for the rest.
    expect(await metricSum(rr.url, 'kvroute_leg_retries_total', `worker="${victim.id}"`)).toBe(1);
    expect(await metricSum(rr.url, 'kvroute_leg_retries_total')).toBe(1);
    expect(await metricSum(rr.url, 'kvroute_worker_ejections_total', `worker="${victim.id}",reason="connect_failure"`)).toBe(1);
    expect(await adminWorker(rr.url, victim.id)).toMatchObject({
      state: 'healthy',
      inSelection: false,
      ejected: true,
      ejection: { ejections: 1, lastReason: 'connect_failure' },
    });
  });

  it('without failover and ejection, every request round robin sends to the dead worker fails (503, Retry-After: it never ran)', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      const r = await complete(bare.url, { prompt: prompt(48, 3000 + i), max_tokens: 4 });
      statuses.push(r.status);
      if (r.status !== 200) {
        expect(r.headers.get('retry-after')).toBe('1');
        expect(JSON.parse(r.text)).toMatchObject({ error: { code: 'engine_unreachable', type: 'service_unavailable' } });
      }
    }
    expect(statuses.filter((s) => s === 503)).toHaveLength(2);
    expect(statuses.filter((s) => s === 200)).toHaveLength(6);
  });

  it('restarted on its ports (once the kernel released them), it is back in selection after a passed health check, and serves', async () => {
    victim = await startMock(victim.id, { http: portOf(victim.url), zmq: portOf(victim.events), replay: portOf(victim.replay) });
    mocks[1] = victim;
    await until(async () => (await adminWorker(kv.url, victim.id)).inSelection === true, 'the restarted worker to be back in selection');
    const r = await complete(kv.url, { prompt: prompt(48, 4000), max_tokens: 4 }, { 'x-worker-instance-id': String(victim.id) });
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get('x-kvroute-decode-worker')).toBe(String(victim.id));
    // Without health checks nothing brings it back before its ejection ends.
    expect(await adminWorker(rr.url, victim.id)).toMatchObject({ ejected: true, inSelection: false });
  }, 150_000);

  it('refuses malformed input without harm: nesting past 64 levels is 400 invalid_json, a bad admin body registers no ghost', async () => {
    const deep = `{"prompt":${'['.repeat(100_000)}${']'.repeat(100_000)},"max_tokens":2}`;
    const res = await fetch(`${kv.url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: deep });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_json');
    const listed = async () => ((await (await fetch(`${kv.url}/admin/workers`)).json()) as { workers: Array<{ id: number }> }).workers.map((w) => w.id);
    const before = await listed();
    const bad = await fetch(`${kv.url}/admin/workers`, {
      method: 'POST',
      body: JSON.stringify({ id: 99, role: 'boss', baseUrl: 'http://user:pw@127.0.0.1:1' }),
    });
    expect(bad.status).toBe(400);
    expect(await bad.text()).not.toContain('pw@');
    expect(await listed()).toEqual(before);
    expect(before).not.toContain(99);
  });

  it('all workers down: 503 with Retry-After, whether the health checks noticed yet or not', async () => {
    await Promise.all(mocks.map((m) => killed(m)));
    for (const router of [kv, rr]) {
      for (let i = 0; i < 3; i++) {
        const r = await complete(router.url, { prompt: prompt(48, 5000 + i), max_tokens: 4, stream: i === 1 });
        expect(r.status, r.text).toBe(503);
        expect(r.headers.get('retry-after')).not.toBeNull();
      }
    }
  });

  it('leaves no booking behind: every load gauge of every router is back to 0', async () => {
    for (const router of [kv, rr, bare]) {
      await until(async () => {
        const load = await bookedLoad(router.url);
        return load.requests === 0 && load.prefillTokens === 0 && load.decodeBlocks === 0;
      }, 'the load gauges to return to zero');
    }
  });
});
