// The contract of a benchmark suite. A suite is one file in bench/suites/ that exports
// `suite: BenchSuite`; bench/run.ts finds it, runs it in its own process and writes its figures,
// Markdown sections and charts into the report. Targets are reported, never asserted.

export interface BenchContext {
  /** Reduced run (CI): the whole `--quick` run of every suite stays under two minutes. */
  readonly quick: boolean;
  /** One line of progress, shown while the suite runs. */
  progress(message: string): void;
}

export type TargetOp = '<=' | '>=';

export interface Figure {
  /** What was measured, with its conditions: "findMatches p99, 8k-token prompt, 1M blocks". */
  name: string;
  value: number;
  /** 'us', 'ms', 'GB/s', 'bytes', 'events/s', 'req/s', '%', ... */
  unit: string;
  /** The same measure of the plain TypeScript reference, from the same run. */
  reference?: { name: string; value: number };
  /** value / reference.value; filled in by the harness when absent. */
  ratio?: number;
  /** Which way is better; inferred from the target when absent ('>=' means higher). */
  better?: 'higher' | 'lower';
  /** The goal from the issues, e.g. { op: '<=', value: 10 } for "p99 at most 10 us". */
  target?: { op: TargetOp; value: number };
  /** Whether the target was met; filled in by the harness (absent when the figure is below noise). */
  met?: boolean;
  /**
   * The figure may be negative (a change that can go either way). Left unset, a figure is a
   * magnitude (a latency, an overhead, a rate), which a measurement can show negative only when
   * noise swamps it.
   */
  signed?: boolean;
  /** A magnitude measured negative: noise-dominated, so no ratio and no verdict on its target. Filled in by the harness. */
  belowNoise?: boolean;
  /** Headline figures go to the report's summary table (and the README). */
  headline?: boolean;
  note?: string;
}

export interface Section {
  title: string;
  /** Markdown body (tables, explanations). */
  markdown: string;
}

export interface Chart {
  /** File stem: [a-z0-9-]+, unique within the suite. */
  name: string;
  title: string;
  /** A complete SVG document (see bench/lib/svg.ts). */
  svg: string;
}

export interface SuiteResult {
  figures: Figure[];
  sections?: Section[];
  charts?: Chart[];
  /** Raw data kept in the JSON report for other tools (e.g. a replay's `policies`). */
  data?: unknown;
}

export interface BenchSuite {
  /** Short id used by `--only`: [a-z0-9-]+. */
  name: string;
  title: string;
  /** Order in the report (lower first; default 100). */
  order?: number;
  /**
   * `--quick` (CI) leaves the suite out unless `--only` names it: its figures need loads that
   * cannot fit the quick run's budget.
   */
  fullOnly?: boolean;
  /** Node/V8 flags for the suite's process (the frontend suite runs the router as deployed). */
  nodeFlags?: readonly string[];
  /**
   * Installs or builds what the suite needs (the peers: a crate, a Python venv), before its time
   * limit starts; what it returns is handed to `run`.
   */
  prepare?(ctx: BenchContext): Promise<unknown>;
  run(ctx: BenchContext, prepared?: unknown): Promise<SuiteResult>;
}

/**
 * The figure with `ratio`, `better` and `met` filled in from its reference and target. A magnitude
 * measured negative (say an overhead p99 of -13 ms: the routed and direct runs differ by less than
 * their noise) is marked `belowNoise` instead: it meets no target and compares with nothing.
 */
export function completeFigure(f: Figure): Figure {
  const out: Figure = { ...f };
  if (out.better === undefined && out.target) out.better = out.target.op === '>=' ? 'higher' : 'lower';
  if (!out.signed && out.value < 0) {
    out.belowNoise = true;
    delete out.ratio;
    delete out.met;
    return out;
  }
  if (out.ratio === undefined && out.reference && out.reference.value !== 0 && Number.isFinite(out.reference.value)) {
    out.ratio = out.value / out.reference.value;
  }
  if (out.target) out.met = out.target.op === '<=' ? out.value <= out.target.value : out.value >= out.target.value;
  return out;
}

export type TargetVerdict = 'met' | 'missed' | 'below noise';

/** What a completed figure says about its target, if it has one. */
export function targetVerdict(f: Figure): TargetVerdict | undefined {
  if (!f.target) return undefined;
  if (f.belowNoise) return 'below noise';
  return f.met ? 'met' : 'missed';
}

/** How many times better than the reference (> 1: better), when the direction is known. */
export function advantage(f: Figure): number | undefined {
  if (f.ratio === undefined || f.better === undefined || f.ratio === 0) return undefined;
  return f.better === 'higher' ? f.ratio : 1 / f.ratio;
}

/** Checks a module's `suite` export; throws a TypeError naming the file when it is malformed. */
export function expectSuite(value: unknown, file: string): BenchSuite {
  const s = value as Partial<BenchSuite> | undefined;
  if (!s || typeof s !== 'object') throw new TypeError(`${file} must export \`suite: BenchSuite\``);
  if (typeof s.name !== 'string' || !/^[a-z0-9-]+$/.test(s.name)) throw new TypeError(`${file}: suite.name must match [a-z0-9-]+`);
  if (typeof s.title !== 'string') throw new TypeError(`${file}: suite.title must be a string`);
  if (typeof s.run !== 'function') throw new TypeError(`${file}: suite.run must be a function`);
  if (s.prepare !== undefined && typeof s.prepare !== 'function') throw new TypeError(`${file}: suite.prepare must be a function`);
  if (s.order !== undefined && typeof s.order !== 'number') throw new TypeError(`${file}: suite.order must be a number`);
  if (s.fullOnly !== undefined && typeof s.fullOnly !== 'boolean') throw new TypeError(`${file}: suite.fullOnly must be a boolean`);
  if (s.nodeFlags !== undefined && (!Array.isArray(s.nodeFlags) || !s.nodeFlags.every((f) => typeof f === 'string' && f.startsWith('--')))) {
    throw new TypeError(`${file}: suite.nodeFlags must be an array of --flags`);
  }
  return s as BenchSuite;
}

/** Checks what a suite returned, so that a broken suite fails loudly instead of writing junk. */
export function expectSuiteResult(value: unknown, suite: string): SuiteResult {
  const r = value as Partial<SuiteResult> | undefined;
  if (!r || typeof r !== 'object' || !Array.isArray(r.figures)) throw new TypeError(`suite ${suite} must return { figures: Figure[] }`);
  for (const f of r.figures) {
    if (!f || typeof f.name !== 'string' || typeof f.value !== 'number' || typeof f.unit !== 'string') {
      throw new TypeError(`suite ${suite}: every figure needs name (string), value (number), unit (string)`);
    }
    if (f.target && ((f.target.op !== '<=' && f.target.op !== '>=') || typeof f.target.value !== 'number')) {
      throw new TypeError(`suite ${suite}: figure "${f.name}" has a malformed target`);
    }
  }
  const names = new Set<string>();
  for (const c of r.charts ?? []) {
    if (!c || !/^[a-z0-9-]+$/.test(c.name) || typeof c.svg !== 'string' || !c.svg.startsWith('<svg')) {
      throw new TypeError(`suite ${suite}: charts need a [a-z0-9-]+ name and an <svg> document`);
    }
    if (names.has(c.name)) throw new TypeError(`suite ${suite}: chart names must be unique, '${c.name}' repeats`);
    names.add(c.name);
  }
  for (const s of r.sections ?? []) {
    if (!s || typeof s.title !== 'string' || typeof s.markdown !== 'string') {
      throw new TypeError(`suite ${suite}: sections need a title and markdown`);
    }
  }
  return r as SuiteResult;
}
