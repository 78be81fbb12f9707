// What the chart tests read off an SVG: the legend's entries and the viewBox; and the overload
// suite's 11 setups, the chart that used to cut its labels and repeat colours.
/** The overload suite's setups: 11 series, the longest label about 65 characters. */
export const ELEVEN_SETUPS = [
  "no protection (kvroute's default: nothing refused)",
  'refuse above 1 x 8192 per worker',
  'refuse above 2 x 8192 per worker',
  'refuse above 4 x 8192 per worker',
  'refuse above 8 x 8192 per worker',
  'queue fcfs, threshold 2',
  'no router queue, engines schedule by priority',
  'queue fcfs, threshold 0.5',
  'queue fcfs, threshold 2, engines schedule by priority',
  'queue wspt, threshold 2, max 262144 queued tokens',
  'queue wspt, threshold 1, max 32768 queued tokens, max wait 200 ms',
];

/** The legend's entries: each label's text, position and the colour of the line before it. */
export function legendEntries(svg: string): Array<{ name: string; x: number; y: number; color: string }> {
  const out: Array<{ name: string; x: number; y: number; color: string }> = [];
  const re =
    /<line x1="([\d.]+)" y1="([\d.]+)" x2="[\d.]+" y2="[\d.]+" stroke="(#[0-9A-Fa-f]{6})" stroke-width="3"[^>]*\/>\n<text x="([\d.]+)" y="([\d.]+)" dominant-baseline="middle">([^<]*)<\/text>/g;
  for (const m of svg.matchAll(re))
    out.push({
      color: m[3],
      x: Number(m[4]),
      y: Number(m[5]),
      name: m[6]
        .replace(/&amp;/g, '&')
        .replace(/&quot;/g, '"')
        .replace(/&lt;/g, '<')
        .replace(/&gt;/g, '>'),
    });
  return out;
}

export function viewBoxOf(svg: string): { width: number; height: number } {
  const m = /viewBox="0 0 ([\d.]+) ([\d.]+)"/.exec(svg)!;
  return { width: Number(m[1]), height: Number(m[2]) };
}
