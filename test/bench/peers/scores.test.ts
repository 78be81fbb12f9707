import { describe, expect, it } from 'vitest';
import { compareScores, describeScoreCheck, normalizeScores, scoresFromTriples, type Score } from '../../../bench/peers/scores.js';

describe('overlap score comparison', () => {
  it('reads flattened triples and refuses a ragged list', () => {
    expect(scoresFromTriples([1, 0, 5, 2, 1, 3])).toEqual([
      [1, 0, 5],
      [2, 1, 3],
    ]);
    expect(() => scoresFromTriples([1, 0])).toThrow(/triples/);
  });

  it('puts both sides in one order and treats a zero score as absent', () => {
    expect(
      normalizeScores([
        [2, 0, 3],
        [1, 1, 5],
        [1, 0, 5],
        [4, 0, 0],
      ]),
    ).toEqual([
      [1, 0, 5],
      [1, 1, 5],
      [2, 0, 3],
    ]);
  });

  it('finds no difference when only the order differs', () => {
    const ours: Score[][] = [
      [
        [1, 0, 10],
        [2, 0, 4],
      ],
      [],
    ];
    const theirs: Score[][] = [
      [
        [2, 0, 4],
        [1, 0, 10],
      ],
      [[7, 0, 0]],
    ];
    const c = compareScores('Dynamo', ours, theirs);
    expect(c).toEqual({ peer: 'Dynamo', queries: 2, differing: 0, examples: [] });
    expect(describeScoreCheck(c)).toBe('Dynamo: identical overlap scores on all 2 queries');
  });

  it('detects a different block count, a missing worker and a different dp rank, loudly', () => {
    const ours: Score[][] = [
      [[1, 0, 10]],
      [
        [1, 0, 10],
        [2, 0, 4],
      ],
      [[1, 0, 3]],
      [[5, 0, 1]],
    ];
    const theirs: Score[][] = [[[1, 0, 9]], [[1, 0, 10]], [[1, 1, 3]], [[5, 0, 1]]];
    const c = compareScores('Dynamo RadixTree', ours, theirs);
    expect(c.differing).toBe(3);
    expect(c.examples.map((m) => m.query)).toEqual([0, 1, 2]);
    expect(c.examples[1]).toEqual({
      query: 1,
      kvroute: [
        [1, 0, 10],
        [2, 0, 4],
      ],
      peer: [[1, 0, 10]],
    });
    const line = describeScoreCheck(c);
    expect(line).toMatch(/^SCORES DIFFER: Dynamo RadixTree disagrees with kvroute on 3 of 4 queries/);
    expect(line).toContain('query 1: kvroute 1/0:10 2/0:4 | Dynamo RadixTree 1/0:10');
  });

  it('keeps a few examples however many queries differ', () => {
    const ours: Score[][] = Array.from({ length: 10 }, () => [[1, 0, 2]]);
    const theirs: Score[][] = Array.from({ length: 10 }, () => []);
    const c = compareScores('p', ours, theirs);
    expect(c.differing).toBe(10);
    expect(c.examples).toHaveLength(3);
    expect(describeScoreCheck(c)).toContain('kvroute 1/0:2 | p none');
  });

  it('refuses lists of different lengths', () => {
    expect(() => compareScores('p', [[]], [])).toThrow(/kvroute scored 1 queries, p 0/);
  });
});
