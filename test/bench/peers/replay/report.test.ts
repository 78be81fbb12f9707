import { describe, expect, it } from 'vitest';
import { completeFigure } from '../../../../bench/lib/suite.js';
import { POLICY_PAIRS, type ReplayGroup, type ReplayRound } from '../../../../bench/peers/replay/compare.js';
import { dynamoSpeed, kvrouteSpeed, pairedWallRatio, replayReport } from '../../../../bench/peers/replay/report.js';
import { REPLAY_SETTINGS } from '../../../../bench/peers/replay/settings.js';

const [RR, KV] = POLICY_PAIRS;
const [DYNAMO_DEFAULT, VLLM_BLOCKS] = REPLAY_SETTINGS;

const round = (kvWall: number, dynWallMs: number, mode: string, blockSize = 64, blocks = 16_384, dynHitRate = 0.3137): ReplayRound => ({
  kvroute: { wall_s: kvWall, simulated_s: 1000, completed: 3993, hit_rate: 0.31, median_ttft_ms: 50 },
  dynamo: {
    type: 'run',
    router_mode: mode,
    block_size: blockSize,
    num_gpu_blocks: blocks,
    call_s: dynWallMs / 1000 + 0.3,
    wall_time_ms: dynWallMs,
    duration_ms: 1_000_000,
    requests: 3993,
    completed: 3993,
    prefix_cache_reused_ratio: dynHitRate,
    median_ttft_ms: 45,
  },
});

describe('the replay comparison report', () => {
  it('measures each side by simulated seconds per wall second, Dynamo by its own wall time, and pairs their wall times per round', () => {
    const r = round(20, 2500, 'kv_router');
    expect(kvrouteSpeed(r)).toBe(50);
    expect(dynamoSpeed(r)).toBe(400);
    expect(pairedWallRatio(r)).toBe(8);
  });

  it('sets kvroute against Dynamo per setting and policy, medians of the rounds after the warm-up, with the target of at least its speed', () => {
    const groups: ReplayGroup[] = [
      // The warm-up round (1 s against 100 ms) must not move the medians.
      {
        setting: DYNAMO_DEFAULT,
        policy: RR,
        rounds: [round(1000, 100, 'round_robin'), round(10, 2000, 'round_robin'), round(20, 1000, 'round_robin'), round(12.5, 2000, 'round_robin')],
      },
      { setting: DYNAMO_DEFAULT, policy: KV, rounds: [round(40, 5000, 'kv_router'), round(20, 2500, 'kv_router')] },
      // Dynamo's hit rate differs between rounds (random tie-breaks); the warm-up's is left out.
      {
        setting: VLLM_BLOCKS,
        policy: KV,
        rounds: [round(40, 5000, 'kv_router', 16, 65_536, 0.5), round(2, 4000, 'kv_router', 16, 65_536, 0.291), round(2, 4000, 'kv_router', 16, 65_536, 0.316)],
      },
    ];
    const r = replayReport({ trace: 'synthetic_trace.jsonl', requests: 3993, groups });
    expect(r.figures).toHaveLength(3);
    const rr = completeFigure(r.figures[0]);
    expect(rr.name).toMatch(/^replay speed, round_robin \(Dynamo round_robin\), both at 64-token blocks x 16,384, synthetic_trace\.jsonl/);
    expect(rr).toMatchObject({ value: 80, reference: { value: 500 }, target: { op: '>=', value: 500 }, met: false, headline: true });
    expect(rr.note).toContain('median of 3 alternating rounds after a warm-up round (kvroute 100, 50, 80; Dynamo 500, 1000, 500)');
    expect(rr.note).toContain('paired per round: 6.25 (5-20); warm-up round: kvroute 1, Dynamo 10k');
    expect(completeFigure(r.figures[1])).toMatchObject({ value: 50, reference: { name: 'Dynamo offline replay, kv_router', value: 400 } });
    const fast = completeFigure(r.figures[2]);
    expect(fast.name).toContain('both at 16-token blocks x 65,536');
    expect(fast).toMatchObject({ value: 500, reference: { value: 250 }, met: true });
    const md = r.sections![0].markdown;
    expect(md).toContain('| 64 x 16,384 | kv | kvroute replay | 20 | 40 | 1000 | 50 | 8 (8-8) | 3993 | 31% | 50 |');
    expect(md).toContain('| 64 x 16,384 | kv_router | Dynamo replay | 2.5 (call 2.8) | 5 | 1000 | 400 | | 3993 | 31.4% | 45 |');
    // The Dynamo row's setting is the one its replay echoed.
    expect(md).toContain('| 16 x 65,536 | kv_router | Dynamo replay | 4 (call 4.3) | 5 | 1000 | 250 | | 3993 | 29.1-31.6% | 45 |');
    expect(r.charts![0].svg).toContain('kv, 16 x 65,536');
  });
});
