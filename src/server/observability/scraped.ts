// Metrics read at scrape time from a source that may be absent (a feature that is off): a gauge
// of one value, a counter of one value per label. Absent source: no sample.
import { Counter, Gauge, type Registry } from 'prom-client';

export function scrapedGauge<S>(registry: Registry, source: () => S | undefined, name: string, help: string, pick: (s: S) => number | undefined): Gauge {
  return new Gauge({
    name,
    help,
    registers: [registry],
    collect() {
      this.reset();
      const s = source();
      const v = s === undefined ? undefined : pick(s);
      if (v !== undefined) this.set(v);
    },
  });
}

export function scrapedCounter<S>(
  registry: Registry,
  source: () => S | undefined,
  name: string,
  help: string,
  labelName: string,
  picks: Record<string, (s: S) => number>,
): Counter {
  return new Counter({
    name,
    help,
    labelNames: [labelName],
    registers: [registry],
    collect() {
      this.reset();
      const s = source();
      if (s !== undefined) for (const [label, pick] of Object.entries(picks)) this.inc({ [labelName]: label }, pick(s));
    },
  });
}
