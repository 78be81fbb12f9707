// Overlap scores of kvroute and of a peer, query by query: the comparison is only fair if both
// indexers find the same cached prefixes, so the peers suite checks every query and reports any
// difference loudly (a headline figure with a missed target, and the first differences).

/** One (worker, dpRank) and the leading blocks of the query it holds. */
export type Score = readonly [worker: number, dpRank: number, blocks: number];

export interface QueryMismatch {
  query: number;
  kvroute: Score[];
  peer: Score[];
}

export interface ScoreCheck {
  peer: string;
  queries: number;
  /** Queries whose scores differ. */
  differing: number;
  /** The first few differences, for the report. */
  examples: QueryMismatch[];
}

const MAX_EXAMPLES = 3;

/** [worker, dpRank, blocks] triples flattened, as the Dynamo peer prints them, to scores. */
export function scoresFromTriples(flat: readonly number[]): Score[] {
  if (flat.length % 3 !== 0) throw new RangeError(`scores come in [worker, dpRank, blocks] triples, got ${flat.length} numbers`);
  const out: Score[] = [];
  for (let i = 0; i < flat.length; i += 3) out.push([flat[i], flat[i + 1], flat[i + 2]]);
  return out;
}

/**
 * One order for both sides (blocks descending, then worker, then dpRank); a (worker, dpRank)
 * with 0 blocks counts as absent, since one indexer may list it and the other not.
 */
export function normalizeScores(scores: Iterable<Score>): Score[] {
  return [...scores].filter((s) => s[2] !== 0).sort((a, b) => b[2] - a[2] || a[0] - b[0] || a[1] - b[1]);
}

function same(a: readonly Score[], b: readonly Score[]): boolean {
  return a.length === b.length && a.every((s, i) => s[0] === b[i][0] && s[1] === b[i][1] && s[2] === b[i][2]);
}

/** Compares the scores of every query; the two lists must cover the same queries. */
export function compareScores(peer: string, kvroute: ReadonlyArray<Iterable<Score>>, theirs: ReadonlyArray<Iterable<Score>>): ScoreCheck {
  if (kvroute.length !== theirs.length) {
    throw new RangeError(`kvroute scored ${kvroute.length} queries, ${peer} ${theirs.length}`);
  }
  const check: ScoreCheck = { peer, queries: kvroute.length, differing: 0, examples: [] };
  for (let q = 0; q < kvroute.length; q++) {
    const a = normalizeScores(kvroute[q]);
    const b = normalizeScores(theirs[q]);
    if (same(a, b)) continue;
    check.differing++;
    if (check.examples.length < MAX_EXAMPLES) check.examples.push({ query: q, kvroute: a, peer: b });
  }
  return check;
}

/** A line for the progress log and the report; loud when any query differs. */
export function describeScoreCheck(c: ScoreCheck): string {
  if (c.differing === 0) return `${c.peer}: identical overlap scores on all ${c.queries} queries`;
  const show = (s: readonly Score[]) => (s.length === 0 ? 'none' : s.map(([w, d, b]) => `${w}/${d}:${b}`).join(' '));
  const examples = c.examples.map((m) => `query ${m.query}: kvroute ${show(m.kvroute)} | ${c.peer} ${show(m.peer)}`).join('; ');
  return `SCORES DIFFER: ${c.peer} disagrees with kvroute on ${c.differing} of ${c.queries} queries (worker/dpRank:blocks); ${examples}`;
}
