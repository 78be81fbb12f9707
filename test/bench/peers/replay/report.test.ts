import { describe, expect, it } from 'vitest';
import { completeFigure } from '../../../../bench/lib/suite.js';
import type { ReplayRound } from '../../../../bench/peers/replay/compare.js';
import { dynamoSpeed, kvrouteSpeed, replayReport } from '../../../../bench/peers/replay/report.js';

const round = (kvWall: number, dynWallMs: number, mode: string): ReplayRound => ({
  kvroute: { wall_s: kvWall, simulated_s: 1000, completed: 3993, hit_rate: 0.31, median_ttft_ms: 50 },
  dynamo: { type: 'run', router_mode: mode, call_s: dynWallMs / 1000 + 0.3, wall_time_ms: dynWallMs, duration_ms: 1_000_000, requests: 3993, completed: 3993, prefix_cache_reused_ratio: 0.3137, median_ttft_ms: 45 },
});

describe('the replay comparison report', () => {
  it("measures each side by simulated seconds per wall second, Dynamo by its own wall time", () => {
    const r = round(20, 2500, 'kv_router');
    expect(kvrouteSpeed(r)).toBe(50);
    expect(dynamoSpeed(r)).toBe(400);
  });

  it('sets kvroute against Dynamo per policy, medians of rounds, with the target of at least its speed', () => {
    const r = replayReport({
      trace: 'synthetic_trace.jsonl',
      requests: 3993,
      rounds: { round_robin: [round(10, 2000, 'round_robin'), round(20, 1000, 'round_robin'), round(12.5, 2000, 'round_robin')], kv: [round(20, 2500, 'kv_router')] },
    });
    const rr = completeFigure(r.figures[0]);
    expect(rr.name).toMatch(/^replay speed, round_robin \(Dynamo round_robin\)/);
    expect(rr).toMatchObject({ value: 80, reference: { value: 500 }, target: { op: '>=', value: 500 }, met: false, headline: true });
    expect(rr.note).toContain('kvroute 100, 50, 80; Dynamo 500, 1000, 500');
    expect(completeFigure(r.figures[1])).toMatchObject({ value: 50, reference: { name: 'Dynamo offline replay, kv_router', value: 400 } });
    const md = r.sections![0].markdown;
    expect(md).toContain('| kv | kvroute replay | 20 | 1000 | 50 | 3993 | 31% | 50 |');
    expect(md).toContain('| kv_router | Dynamo replay | 2.5 (call 2.8) | 1000 | 400 | 3993 | 31.4% | 45 |');
  });
});
