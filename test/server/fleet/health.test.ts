import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { HealthMonitor, HealthTracker } from '../../../src/server/fleet/health.js';

describe('HealthTracker', () => {
  it('turns unhealthy at the first failed check and healthy at the first good one', () => {
    const t = new HealthTracker(1000);
    t.add(1);
    expect(t.isHealthy(1)).toBe(true);
    expect(t.record(1, false, 100, 'refused')).toBe('became_unhealthy');
    expect(t.isHealthy(1)).toBe(false);
    expect(t.status(1)).toMatchObject({ unhealthySince: 100, lastError: 'refused', blocksDropped: false });
    expect(t.record(1, false, 200)).toBe('unchanged');
    expect(t.record(1, true, 300)).toBe('became_healthy');
    expect(t.isHealthy(1)).toBe(true);
    expect(t.record(1, true, 400)).toBe('unchanged');
  });

  it('expires the grace period once, measured from the first failure', () => {
    const t = new HealthTracker(1000);
    t.add(1);
    t.add(2);
    t.record(1, false, 0);
    expect(t.expired(999)).toEqual([]);
    expect(t.record(1, false, 1000)).toBe('grace_expired');
    expect(t.expired(5000)).toEqual([]);
    t.record(2, false, 500);
    expect(t.expired(1500)).toEqual([2]);
    expect(t.status(2)?.blocksDropped).toBe(true);
    // Back to healthy resets everything; a later failure starts a new grace period.
    t.record(2, true, 1600);
    t.record(2, false, 2000);
    expect(t.expired(2999)).toEqual([]);
    expect(t.expired(3000)).toEqual([2]);
  });

  it('with no grace the blocks go at once', () => {
    const t = new HealthTracker(0);
    t.add(1);
    t.record(1, false, 10);
    expect(t.expired(10)).toEqual([1]);
  });

  it('ignores unknown workers', () => {
    const t = new HealthTracker(0);
    expect(t.record(9, false, 0)).toBe('unchanged');
    expect(t.isHealthy(9)).toBe(false);
  });
});

describe('HealthMonitor', () => {
  let server: Server;
  let url = '';
  let status = 200;
  let hang = false;
  /** What GET /metrics answers (undefined: 404). */
  let metrics: string | undefined;
  let metricsScrapes = 0;

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (hang) return; // never answers
      if (req.url === '/metrics') {
        metricsScrapes++;
        if (metrics === undefined) res.writeHead(404).end();
        else res.writeHead(200, { 'content-type': 'text/plain' }).end(metrics);
        return;
      }
      res.writeHead(req.url === '/health' ? status : 404).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('reports 2xx as healthy, other statuses, timeouts and refused connections as unhealthy', async () => {
    const results: Array<[number, boolean, string | undefined]> = [];
    let rounds = 0;
    const events = {
      targets: () => [
        { id: 1, baseUrl: url },
        { id: 2, baseUrl: 'http://127.0.0.1:1' },
      ],
      onResult: (w: number, ok: boolean, err?: string) => results.push([w, ok, err]),
      onRound: () => rounds++,
    };
    // A timeout no loaded machine reaches for the answers that come; a short one for the hang.
    const m = new HealthMonitor(events, 0, 10_000);
    const impatient = new HealthMonitor(events, 0, 300);
    await m.checkAll();
    expect(results.find((r) => r[0] === 1)?.[1]).toBe(true);
    expect(results.find((r) => r[0] === 2)?.[1]).toBe(false);
    expect(rounds).toBe(1);

    status = 503;
    expect(await m.checkOne({ id: 1, baseUrl: url })).toBe(false);
    expect(results.at(-1)).toEqual([1, false, 'GET /health answered 503']);

    hang = true;
    expect(await impatient.checkOne({ id: 1, baseUrl: url })).toBe(false);
    expect(results.at(-1)?.[2]).toMatch(/timed out after 300 ms/);
    hang = false;
    status = 200;
    await m.close();
    await impatient.close();
  });

  it("reads the engine's start time from /metrics after a passed check, and stops asking an engine that has none", async () => {
    const results: Array<number | undefined> = [];
    const events = {
      targets: () => [{ id: 1, baseUrl: url }],
      onResult: (_w: number, ok: boolean, _e?: string, start?: number) => results.push(ok ? start : -1),
    };
    const m = new HealthMonitor(events, 0, 10_000);
    metrics =
      '# HELP process_start_time_seconds Start time\n# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds 1.7650123456789e+09\nvllm:num_requests_running{engine="0"} 0\n';
    await m.checkAll();
    metrics = 'process_start_time_seconds{model_name="m",engine="3"} 1765012399.5\n';
    await m.checkAll();
    expect(results).toEqual([1765012345.6789, 1765012399.5]);
    // A failed check reads nothing.
    status = 503;
    await m.checkAll();
    status = 200;
    expect(results.at(-1)).toBe(-1);
    // An engine whose /metrics has no start time is not scraped again.
    metrics = 'vllm:num_requests_running 0\n';
    const before = metricsScrapes;
    await m.checkAll();
    await m.checkAll();
    expect(metricsScrapes - before).toBe(1);
    expect(results.slice(-2)).toEqual([undefined, undefined]);
    await m.close();
    metrics = undefined;
  });

  it('checks every interval once started, and stops on close', async () => {
    // Only the interval timer is faked: each round is started by advancing it, and the checks
    // themselves are real requests.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      let started = 0;
      let rounds = 0;
      let roundDone = () => {};
      const m = new HealthMonitor(
        {
          targets: () => {
            started++;
            return [{ id: 1, baseUrl: url }];
          },
          onResult: () => undefined,
          onRound: () => {
            rounds++;
            roundDone();
          },
        },
        30,
        1000,
      );
      // Resolves once a round has reported and settled (the microtasks after onRound have run).
      const nextRound = () => new Promise<void>((r) => (roundDone = r)).then(() => new Promise<void>((r) => setImmediate(r)));
      m.start();
      vi.advanceTimersByTime(29);
      expect(started).toBe(0);
      let done = nextRound();
      vi.advanceTimersByTime(1);
      expect(started).toBe(1);
      await done;
      done = nextRound();
      vi.advanceTimersByTime(30);
      expect(started).toBe(2);
      await done;
      expect(rounds).toBe(2);

      await m.close();
      vi.advanceTimersByTime(300); // ten intervals: none may start a round
      expect(started).toBe(2);
      expect(rounds).toBe(2);
    } finally {
      vi.useRealTimers();
    }
  });

  it('never overlaps rounds: an interval that fires during a round starts none', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      let started = 0;
      let rounds = 0;
      const m = new HealthMonitor({ targets: () => (started++, [{ id: 1, baseUrl: url }]), onResult: () => undefined, onRound: () => rounds++ }, 30, 60_000);
      hang = true; // the first round's check waits (for its timeout, or the close)
      m.start();
      vi.advanceTimersByTime(30);
      expect(started).toBe(1);
      vi.advanceTimersByTime(90); // three more intervals while the round is running
      expect(started).toBe(1);
      await m.close(); // aborts the hanging check; a round cut by the close reports nothing
      expect(started).toBe(1);
      expect(rounds).toBe(0);
    } finally {
      hang = false;
      vi.useRealTimers();
    }
  });
});
