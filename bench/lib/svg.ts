// Small hand-written SVG charts for the reports: grouped bars, lines (linear or log axes) and
// CDFs, each with a title, labelled axes with gridlines, and a legend. No dependencies. Every
// series of a chart has its own colour (seriesColors), and the legend is laid out from the
// labels' measured widths: on the right when they fit there, else in columns under the plot, the
// chart growing as tall as it needs.
import { formatCompact, formatNumber } from './format.js';
import { cdfPoints } from './stats.js';

const WIDTH = 760;
const HEIGHT = 420;
const MARGIN = { top: 44, right: 180, bottom: 58, left: 76 };
const PLOT_W = WIDTH - MARGIN.left - MARGIN.right;
const PLOT_H = HEIGHT - MARGIN.top - MARGIN.bottom;
const FONT_SIZE = 12;
const LEGEND_ROW = 20;
/** A legend entry: the colour's line, a gap, then the label. */
const SWATCH = 28;
const LEGEND_GAP = 18;
// Okabe-Ito first (distinguishable with the common colour-vision deficiencies), then Paul Tol's
// muted and dark colours: 16 that differ from each other and read on white.
export const PALETTE = [
  '#0072B2',
  '#E69F00',
  '#009E73',
  '#D55E00',
  '#CC79A7',
  '#56B4E9',
  '#F0E442',
  '#000000',
  '#332288',
  '#882255',
  '#44AA99',
  '#999933',
  '#AA4499',
  '#661100',
  '#6699CC',
  '#888888',
];

/** `n` distinct colours: the palette, then hues spread by the golden angle (never a repeat). */
export function seriesColors(n: number): string[] {
  const out = PALETTE.slice(0, n);
  const seen = new Set(out);
  for (let i = 0; out.length < n; i++) {
    const hue = Math.round((i * 137.508) % 360);
    const light = [38, 52, 30][i % 3];
    const c = hslHex(hue, 70, light);
    if (!seen.has(c)) {
      seen.add(c);
      out.push(c);
    }
  }
  return out;
}

function hslHex(h: number, s: number, l: number): string {
  const a = (s / 100) * Math.min(l / 100, 1 - l / 100);
  const f = (k: number) => {
    const t = (k + h / 30) % 12;
    const v = l / 100 - a * Math.max(-1, Math.min(t - 3, 9 - t, 1));
    return Math.round(v * 255)
      .toString(16)
      .padStart(2, '0');
  };
  return `#${f(0)}${f(8)}${f(4)}`.toUpperCase();
}

// Helvetica's advance widths (its AFM, per 1000 em) for ASCII 32..126; Arial and Liberation Sans
// share them. Others count as 'M'-wide less a little (≤, ×, µ are narrower than that).
const HELVETICA = [
  278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, 556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584,
  556, 1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278,
  469, 556, 333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556, 556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260,
  334, 584,
];
/** Room for a wider fallback font (DejaVu Sans, where no Helvetica-metric font is installed, runs about 10% wider). */
const FONT_SLACK = 1.15;

/** The width of `text` in px at `size`, from Helvetica's metrics with slack for a wider font. */
export function textWidth(text: string, size = FONT_SIZE): number {
  let units = 0;
  for (const ch of text) {
    const c = ch.codePointAt(0)!;
    units += c >= 32 && c <= 126 ? HELVETICA[c - 32] : 750;
  }
  return (units / 1000) * size * FONT_SLACK;
}

export interface Scale {
  (v: number): number;
  ticks: number[];
}

export function escapeXml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** Round tick values (1, 2, 5 x 10^k) covering [lo, hi]. */
export function niceTicks(lo: number, hi: number, count = 6): number[] {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  const ticks: number[] = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push(Number(t.toPrecision(12)));
  return ticks;
}

/** Maps [lo, hi] onto [a, b] linearly, or logarithmically (lo must be > 0). */
export function makeScale(lo: number, hi: number, a: number, b: number, log = false): Scale {
  if (log) {
    const l0 = Math.log10(lo);
    const l1 = Math.log10(hi);
    const f = ((v: number) => a + ((Math.log10(Math.max(v, lo)) - l0) / (l1 - l0 || 1)) * (b - a)) as Scale;
    f.ticks = [];
    for (let e = Math.floor(l0); e <= Math.ceil(l1); e++) {
      const t = 10 ** e;
      if (t >= lo * 0.999 && t <= hi * 1.001) f.ticks.push(t);
    }
    if (f.ticks.length < 2) f.ticks = [lo, hi];
    return f;
  }
  const f = ((v: number) => a + ((v - lo) / (hi - lo || 1)) * (b - a)) as Scale;
  f.ticks = niceTicks(lo, hi);
  return f;
}

/** [min, max] of the values, padded to round numbers; log ranges span whole decades. */
function extent(values: number[], log: boolean, includeZero: boolean): [number, number] {
  const finite = values.filter((v) => Number.isFinite(v) && (!log || v > 0));
  if (finite.length === 0) return log ? [1, 10] : [0, 1];
  let lo = Math.min(...finite);
  let hi = Math.max(...finite);
  if (log) {
    // Whole decades; a smallest value near the bottom decade gets one more, so bars stay visible.
    let bottom = 10 ** Math.floor(Math.log10(lo));
    if (lo < bottom * 2) bottom /= 10;
    return [bottom, 10 ** Math.ceil(Math.log10(hi) + 1e-9)];
  }
  if (includeZero) lo = Math.min(0, lo);
  if (hi === lo) hi = lo + 1;
  const ticks = niceTicks(lo, hi);
  const step = ticks.length > 1 ? ticks[1] - ticks[0] : hi - lo;
  return [Math.floor(lo / step) * step, Math.ceil(hi / step) * step];
}

function frame(title: string, body: string[], height = HEIGHT): string {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="${FONT_SIZE}">`,
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    `<text x="${WIDTH / 2}" y="24" text-anchor="middle" font-size="15" font-weight="bold">${escapeXml(title)}</text>`,
    ...body,
    '</svg>',
    '',
  ].join('\n');
}

function yAxis(y: Scale, label: string): string[] {
  const out: string[] = [];
  for (const t of y.ticks) {
    const py = y(t).toFixed(1);
    out.push(`<line x1="${MARGIN.left}" y1="${py}" x2="${MARGIN.left + PLOT_W}" y2="${py}" stroke="#e3e3e3"/>`);
    out.push(`<text x="${MARGIN.left - 8}" y="${py}" text-anchor="end" dominant-baseline="middle">${formatCompact(t)}</text>`);
  }
  const cy = MARGIN.top + PLOT_H / 2;
  out.push(`<text x="18" y="${cy}" text-anchor="middle" transform="rotate(-90 18 ${cy})">${escapeXml(label)}</text>`);
  out.push(`<line x1="${MARGIN.left}" y1="${MARGIN.top}" x2="${MARGIN.left}" y2="${MARGIN.top + PLOT_H}" stroke="#333"/>`);
  return out;
}

function xAxis(x: Scale, label: string): string[] {
  const out: string[] = [];
  const base = MARGIN.top + PLOT_H;
  for (const t of x.ticks) {
    const px = x(t).toFixed(1);
    out.push(`<line x1="${px}" y1="${MARGIN.top}" x2="${px}" y2="${base}" stroke="#f0f0f0"/>`);
    out.push(`<line x1="${px}" y1="${base}" x2="${px}" y2="${base + 5}" stroke="#333"/>`);
    out.push(`<text x="${px}" y="${base + 18}" text-anchor="middle">${formatCompact(t)}</text>`);
  }
  out.push(`<line x1="${MARGIN.left}" y1="${base}" x2="${MARGIN.left + PLOT_W}" y2="${base}" stroke="#333"/>`);
  out.push(`<text x="${MARGIN.left + PLOT_W / 2}" y="${HEIGHT - 14}" text-anchor="middle">${escapeXml(label)}</text>`);
  return out;
}

/** A chart's legend, and the height the chart needs for it. */
interface Legend {
  svg: string[];
  height: number;
}

/**
 * One entry per series in its colour: on the right of the plot when every label fits there and
 * the entries fit its height, else in as many columns under the plot as the widest label allows.
 */
function legend(names: string[], colors: string[], dashed: boolean[] = []): Legend {
  const widest = Math.max(0, ...names.map((n) => textWidth(n)));
  const right = MARGIN.left + PLOT_W + 16;
  const onRight = right + SWATCH + widest <= WIDTH - 4 && names.length * LEGEND_ROW <= PLOT_H;
  const colW = SWATCH + widest + LEGEND_GAP;
  const columns = onRight ? 1 : Math.max(1, Math.floor((WIDTH - 2 * 16 + LEGEND_GAP) / colW));
  const rows = Math.ceil(names.length / columns);
  // Under the plot: below the x axis label, which sits at HEIGHT - 14.
  const top = onRight ? MARGIN.top + 8 : HEIGHT + 4;
  const left = onRight ? right : 16;
  const svg: string[] = [];
  names.forEach((name, i) => {
    const col = onRight ? 0 : i % columns;
    const row = onRight ? i : Math.floor(i / columns);
    const x = left + col * colW;
    const y = top + row * LEGEND_ROW;
    const dash = dashed[i] ? ' stroke-dasharray="6 4"' : '';
    svg.push(`<line x1="${x}" y1="${y}" x2="${x + 22}" y2="${y}" stroke="${colors[i]}" stroke-width="3"${dash}/>`);
    svg.push(`<text x="${x + SWATCH}" y="${y}" dominant-baseline="middle">${escapeXml(name)}</text>`);
  });
  return { svg, height: onRight ? HEIGHT : HEIGHT + rows * LEGEND_ROW + 4 };
}

export interface BarChartOptions {
  title: string;
  /** One group of bars per category (x axis). */
  categories: string[];
  /** One bar per series in each group; null leaves a gap. */
  series: Array<{ name: string; values: Array<number | null> }>;
  yLabel: string;
  /** Log y axis (for values spanning decades, e.g. native vs reference). */
  logY?: boolean;
}

export function barChart(o: BarChartOptions): string {
  const all = o.series.flatMap((s) => s.values.filter((v): v is number => v !== null));
  const [lo, hi] = extent(all, !!o.logY, true);
  const y = makeScale(lo, hi, MARGIN.top + PLOT_H, MARGIN.top, o.logY);
  const body = yAxis(y, o.yLabel);
  const groupW = PLOT_W / Math.max(1, o.categories.length);
  const barW = Math.min(48, (groupW * 0.8) / Math.max(1, o.series.length));
  const base = MARGIN.top + PLOT_H;
  const colors = seriesColors(o.series.length);
  o.categories.forEach((cat, ci) => {
    const gx = MARGIN.left + ci * groupW + (groupW - barW * o.series.length) / 2;
    o.series.forEach((s, si) => {
      const v = s.values[ci];
      if (v === null || v === undefined || !Number.isFinite(v)) return;
      const top = y(v);
      const bx = gx + si * barW;
      body.push(
        `<rect x="${bx.toFixed(1)}" y="${top.toFixed(1)}" width="${(barW - 2).toFixed(1)}" height="${Math.max(0, base - top).toFixed(1)}" fill="${colors[si]}"><title>${escapeXml(`${s.name}, ${cat}: ${formatNumber(v)}`)}</title></rect>`,
      );
      body.push(`<text x="${(bx + barW / 2 - 1).toFixed(1)}" y="${(top - 4).toFixed(1)}" text-anchor="middle" font-size="10">${formatNumber(v)}</text>`);
    });
    body.push(`<text x="${(MARGIN.left + (ci + 0.5) * groupW).toFixed(1)}" y="${base + 18}" text-anchor="middle">${escapeXml(cat)}</text>`);
  });
  body.push(`<line x1="${MARGIN.left}" y1="${base}" x2="${MARGIN.left + PLOT_W}" y2="${base}" stroke="#333"/>`);
  const key = legend(
    o.series.map((s) => s.name),
    colors,
  );
  body.push(...key.svg);
  return frame(o.title, body, key.height);
}

export interface LineSeries {
  name: string;
  points: Array<[number, number]>;
  dashed?: boolean;
  /** Draw as a step function (CDFs). */
  step?: boolean;
}

export interface LineChartOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  series: LineSeries[];
  logX?: boolean;
  logY?: boolean;
  /** Fixed y range (e.g. [0, 1] for fractions). */
  yRange?: [number, number];
  /** Dots on the points (sparse series such as a sweep). */
  markers?: boolean;
}

export function lineChart(o: LineChartOptions): string {
  const xs = o.series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = o.series.flatMap((s) => s.points.map((p) => p[1]));
  const [x0, x1] = extent(xs, !!o.logX, false);
  const [y0, y1] = o.yRange ?? extent(ys, !!o.logY, !o.logY);
  const x = makeScale(x0, x1, MARGIN.left, MARGIN.left + PLOT_W, o.logX);
  const y = makeScale(y0, y1, MARGIN.top + PLOT_H, MARGIN.top, o.logY);
  const body = [...xAxis(x, o.xLabel), ...yAxis(y, o.yLabel)];
  const colors = seriesColors(o.series.length);
  o.series.forEach((s, si) => {
    const color = colors[si];
    const pts = s.points.filter(([px, py]) => Number.isFinite(px) && Number.isFinite(py) && (!o.logX || px > 0) && (!o.logY || py > 0));
    if (pts.length === 0) return;
    let d = '';
    pts.forEach(([px, py], i) => {
      const sx = x(px).toFixed(1);
      const sy = y(py).toFixed(1);
      if (i === 0) d += `M${sx},${sy}`;
      else if (s.step) d += `H${sx}V${sy}`;
      else d += `L${sx},${sy}`;
    });
    const dash = s.dashed ? ' stroke-dasharray="6 4"' : '';
    body.push(`<path d="${d}" fill="none" stroke="${color}" stroke-width="2"${dash}/>`);
    if (o.markers) {
      for (const [px, py] of pts) {
        body.push(
          `<circle cx="${x(px).toFixed(1)}" cy="${y(py).toFixed(1)}" r="3" fill="${color}"><title>${escapeXml(`${s.name}: ${formatNumber(px)}, ${formatNumber(py)}`)}</title></circle>`,
        );
      }
    }
  });
  const key = legend(
    o.series.map((s) => s.name),
    colors,
    o.series.map((s) => !!s.dashed),
  );
  body.push(...key.svg);
  return frame(o.title, body, key.height);
}

export interface CdfChartOptions {
  title: string;
  xLabel: string;
  series: Array<{ name: string; values: ArrayLike<number>; dashed?: boolean }>;
  logX?: boolean;
}

/** Empirical CDFs of samples (latency distributions), one line per series. */
export function cdfChart(o: CdfChartOptions): string {
  return lineChart({
    title: o.title,
    xLabel: o.xLabel,
    yLabel: 'fraction of samples ≤ x',
    logX: o.logX,
    yRange: [0, 1],
    series: o.series.map((s) => ({ name: s.name, points: cdfPoints(s.values), dashed: s.dashed, step: true })),
  });
}
