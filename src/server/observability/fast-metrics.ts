// The router's per-request histograms and counters, kept in its own arrays and handed to
// prom-client's registry only at scrape time. prom-client's observe() / inc() build a label hash
// string, a closure and a label/value object on every call, and find the bucket through a property
// keyed by the bound's number (a number-to-string lookup each time): about 15 such calls per
// streamed request cost more router CPU than the rest of the metrics. Here a child is resolved
// once per label set and observing is a bounds scan and three array writes.
//
// The registry renders these exactly as it renders prom-client's own Histogram and Counter (same
// series order, labels, bucket lines and number formatting): each metric hands it the values in
// prom-client's own shape (`getForPromString` / `get`), checked line for line by the tests.
import type { Registry } from 'prom-client';

type Labels = Record<string, string>;

/** A series' values as prom-client's registry formats them. */
interface ExportedValue {
  labels: Record<string, string | number>;
  sharedLabels?: Labels;
  value: number;
  metricName?: string;
}

interface ExportedMetric {
  name: string;
  help: string;
  type: 'histogram' | 'counter';
  values: ExportedValue[];
  aggregator: 'sum';
}

/** What the registry needs from a metric (prom-client's Registry.registerMetric takes any such object). */
interface RegistrableMetric {
  readonly name: string;
  get(): Promise<ExportedMetric>;
}

function register(registry: Registry, metric: RegistrableMetric): void {
  (registry as unknown as { registerMetric(m: RegistrableMetric): void }).registerMetric(metric);
}

/** The series key of a label set, in the metric's label order. */
function keyOf(labelNames: readonly string[], labels: Labels): string {
  let key = '';
  for (const name of labelNames) {
    const v = labels[name];
    if (typeof v !== 'string') throw new TypeError(`label "${name}" must be a string, got ${typeof v}`);
    key += `${v}\u0000`;
  }
  for (const name of Object.keys(labels)) {
    if (!labelNames.includes(name)) throw new TypeError(`Added label "${name}" is not included in initial labelset: ${JSON.stringify(labelNames)}`);
  }
  return key;
}

/** What both metrics are made with. */
interface FamilyOptions {
  name: string;
  help: string;
  labelNames?: readonly string[];
  registry: Registry;
}

/** A metric's series by label set, and its unlabelled series when it has no labels. */
abstract class SeriesFamily<S> implements RegistrableMetric {
  readonly name: string;
  protected readonly help: string;
  private readonly labelNames: readonly string[];
  protected readonly series = new Map<string, S>();
  /** The series of an unlabelled metric (present from the start, as prom-client's is). */
  protected readonly unlabelled?: S;

  constructor(
    o: FamilyOptions,
    private readonly make: (labels: Labels) => S,
  ) {
    this.name = o.name;
    this.help = o.help;
    this.labelNames = o.labelNames ?? [];
    if (this.labelNames.length === 0) this.unlabelled = this.labels({});
    register(o.registry, this);
  }

  /** Every series so far, to read totals off the hot path (the live page's history). */
  all(): IterableIterator<S> {
    return this.series.values();
  }

  /** The series of a label set (created on first use; resolve it once and keep it). */
  labels(labels: Labels): S {
    const key = keyOf(this.labelNames, labels);
    let s = this.series.get(key);
    if (!s) {
      s = this.make({ ...labels });
      this.series.set(key, s);
    }
    return s;
  }

  abstract get(): Promise<ExportedMetric>;
}

/** One labelled series of a FastHistogram. */
export class HistogramSeries {
  /** Per bucket (not cumulative); values above the last bound count only in `count`. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  /** Observed at least once: prom-client shows a labelled series from its first observation. */
  used = false;

  constructor(
    private readonly bounds: Float64Array,
    readonly labels: Labels,
  ) {
    this.counts = new Float64Array(bounds.length);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]) {
        this.counts[i]++;
        break;
      }
    }
    this.sum += value;
    this.count++;
    this.used = true;
  }
}

export interface FastHistogramOptions extends FamilyOptions {
  /** Upper bounds, ascending. */
  buckets: readonly number[];
}

export class FastHistogram extends SeriesFamily<HistogramSeries> {
  private readonly buckets: readonly number[];

  constructor(o: FastHistogramOptions) {
    for (let i = 1; i < o.buckets.length; i++) {
      if (!(o.buckets[i] > o.buckets[i - 1])) throw new RangeError(`histogram ${o.name}: buckets must ascend`);
    }
    const bounds = Float64Array.from(o.buckets);
    super(o, (labels) => new HistogramSeries(bounds, labels));
    this.buckets = [...o.buckets];
  }

  /** Observes into the unlabelled series. */
  observe(value: number): void {
    if (!this.unlabelled) throw new TypeError(`histogram ${this.name} has labels: observe through labels()`);
    this.unlabelled.observe(value);
  }

  /** The values as prom-client's Histogram.getForPromString() gives them. */
  getForPromString(): Promise<ExportedMetric> {
    const bucketName = `${this.name}_bucket`;
    const values: ExportedValue[] = [];
    for (const s of this.series.values()) {
      if (!s.used && s !== this.unlabelled) continue;
      let acc = 0;
      for (let i = 0; i < this.buckets.length; i++) {
        acc += s.counts[i];
        values.push({ labels: { le: this.buckets[i] }, sharedLabels: s.labels, value: acc, metricName: bucketName });
      }
      values.push({ labels: { le: '+Inf' }, sharedLabels: s.labels, value: s.count, metricName: bucketName });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${this.name}_count` });
    }
    return Promise.resolve({ name: this.name, help: this.help, type: 'histogram', values, aggregator: 'sum' });
  }

  /** The values as prom-client's Histogram.get() gives them (shared labels merged in). */
  override async get(): Promise<ExportedMetric> {
    const m = await this.getForPromString();
    const values = m.values.map((v) => ({ value: v.value, metricName: v.metricName, labels: Object.assign({}, v.labels, v.sharedLabels) }));
    return { name: m.name, help: m.help, type: m.type, values, aggregator: m.aggregator };
  }
}

/** One labelled series of a FastCounter. */
export class CounterSeries {
  value = 0;
  /** Counted at least once (inc(0) included), as prom-client shows a labelled series. */
  used = false;

  constructor(readonly labels: Labels) {}

  inc(value = 1): void {
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
    if (value < 0) throw new Error('It is not possible to decrease a counter');
    this.value += value;
    this.used = true;
  }
}

export type FastCounterOptions = FamilyOptions;

export class FastCounter extends SeriesFamily<CounterSeries> {
  constructor(o: FastCounterOptions) {
    super(o, (labels) => new CounterSeries(labels));
  }

  /** Adds to the unlabelled series. */
  inc(value = 1): void {
    if (!this.unlabelled) throw new TypeError(`counter ${this.name} has labels: count through labels()`);
    this.unlabelled.inc(value);
  }

  override get(): Promise<ExportedMetric> {
    const values: ExportedValue[] = [];
    for (const s of this.series.values()) if (s.used || s === this.unlabelled) values.push({ value: s.value, labels: { ...s.labels } });
    return Promise.resolve({ name: this.name, help: this.help, type: 'counter', values, aggregator: 'sum' });
  }
}

/** Children of one label, resolved once per value (a route, a pool, a mode). */
export class ChildCache<C> {
  private readonly children = new Map<string, C>();

  constructor(private readonly make: (value: string) => C) {}

  of(value: string): C {
    let c = this.children.get(value);
    if (c === undefined) {
      c = this.make(value);
      this.children.set(value, c);
    }
    return c;
  }
}
