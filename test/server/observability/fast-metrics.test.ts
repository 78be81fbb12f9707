import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ChildCache, FastCounter, FastHistogram } from '../../../src/server/observability/fast-metrics.js';

const BUCKETS = [0, 0.001, 0.5, 1, 2.5, 10];

/** The same metrics twice: prom-client's own in one registry, the fast ones in another. */
function pair() {
  const ours = new Registry();
  const theirs = new Registry();
  return {
    ours,
    theirs,
    fast: {
      h: new FastHistogram({ name: 'h_seconds', help: 'a "histogram"\\ with labels', labelNames: ['route'], buckets: BUCKETS, registry: ours }),
      plain: new FastHistogram({ name: 'plain_us', help: 'unlabelled', buckets: BUCKETS, registry: ours }),
      c: new FastCounter({ name: 'c_total', help: 'labelled counter', labelNames: ['route', 'status'], registry: ours }),
      total: new FastCounter({ name: 'n_total', help: 'unlabelled counter', registry: ours }),
    },
    prom: {
      h: new Histogram({ name: 'h_seconds', help: 'a "histogram"\\ with labels', labelNames: ['route'], buckets: BUCKETS, registers: [theirs] }),
      plain: new Histogram({ name: 'plain_us', help: 'unlabelled', buckets: BUCKETS, registers: [theirs] }),
      c: new Counter({ name: 'c_total', help: 'labelled counter', labelNames: ['route', 'status'], registers: [theirs] }),
      total: new Counter({ name: 'n_total', help: 'unlabelled counter', registers: [theirs] }),
    },
  };
}

describe('FastHistogram and FastCounter', () => {
  it('render exactly as prom-client renders the same observations', async () => {
    const m = pair();
    expect(await m.ours.metrics()).toBe(await m.theirs.metrics()); // nothing observed yet
    let x = 12345;
    const rand = () => (x = (x * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const routes = ['/v1/completions', '/v1/chat/completions', 'we"ird\\route\n'];
    for (let i = 0; i < 2_000; i++) {
      const route = routes[i % 3];
      // Bounds themselves, values between them, above the last one, zero and negatives.
      const v = i % 7 === 0 ? BUCKETS[i % BUCKETS.length] : i % 11 === 0 ? -rand() : rand() * 15;
      m.fast.h.labels({ route }).observe(v);
      m.prom.h.labels({ route }).observe(v);
      m.fast.plain.observe(v * 1e6);
      m.prom.plain.observe(v * 1e6);
      const status = String([200, 499, 502][i % 3]);
      m.fast.c.labels({ route, status }).inc();
      m.prom.c.inc({ route, status });
      m.fast.total.inc(i % 5);
      m.prom.total.inc(i % 5);
    }
    expect(await m.ours.metrics()).toBe(await m.theirs.metrics());
    // The JSON form too (the same values; prom-client adds an empty exemplar to each bucket).
    const json = async (r: Registry) =>
      JSON.parse(JSON.stringify(await r.getMetricsAsJSON(), (k, v: unknown) => (k === 'exemplar' && v === null ? undefined : v))) as unknown;
    expect(await json(m.ours)).toEqual(await json(m.theirs));
  });

  it('shows a labelled series only once it was observed or counted, inc(0) included', async () => {
    const m = pair();
    m.fast.h.labels({ route: 'a' });
    m.fast.c.labels({ route: 'a', status: '200' });
    expect(await m.ours.metrics()).toBe(await m.theirs.metrics());
    m.fast.c.labels({ route: 'a', status: '200' }).inc(0);
    m.prom.c.inc({ route: 'a', status: '200' }, 0);
    expect(await m.ours.metrics()).toBe(await m.theirs.metrics());
    expect(await m.ours.metrics()).toContain('c_total{route="a",status="200"} 0');
  });

  it('refuses what prom-client refuses', () => {
    const m = pair();
    expect(() => m.fast.h.labels({ route: 'a' }).observe(Number.NaN)).toThrow(TypeError);
    expect(() => m.fast.plain.observe(Number.POSITIVE_INFINITY)).toThrow(TypeError);
    expect(() => m.fast.c.labels({ route: 'a', status: '200' }).inc(-1)).toThrow(/decrease/);
    expect(() => m.fast.total.inc(Number.NaN)).toThrow(TypeError);
    expect(() => m.fast.h.labels({ route: 'a', other: 'b' })).toThrow(TypeError);
    expect(() => m.fast.h.labels({} as { route: string })).toThrow(TypeError);
    expect(() => m.fast.h.observe(1)).toThrow(TypeError);
    expect(() => m.fast.c.inc()).toThrow(TypeError);
    expect(() => new FastHistogram({ name: 'bad', help: 'x', buckets: [1, 1], registry: new Registry() })).toThrow(RangeError);
    expect(() => new FastCounter({ name: 'c_total', help: 'again', registry: m.ours })).toThrow(/already been registered/);
  });

  it('ChildCache makes each child once', () => {
    let made = 0;
    const cache = new ChildCache((v) => ({ v, n: ++made }));
    expect(cache.of('a')).toBe(cache.of('a'));
    expect(cache.of('b').v).toBe('b');
    expect(made).toBe(2);
  });
});
