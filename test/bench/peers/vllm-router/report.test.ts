import { describe, expect, it } from 'vitest';
import { summarizeContender, vllmRouterReport, type ContenderRound } from '../../../../bench/peers/vllm-router/report.js';
import { FULL } from '../../../../bench/peers/vllm-router/workload.js';

const sample = (ttftMs: number, status = 200) => ({ status, ttftMs, e2eMs: ttftMs + 50, outputTokens: status === 200 ? 16 : 0 });

describe('the vllm-router comparison', () => {
  const rounds: ContenderRound[] = [
    { contender: 'a', round: 1, samples: [sample(100), sample(200), sample(300), sample(0, 502)], seconds: 4, hits: 300, queries: 1000 },
    { contender: 'a', round: 2, samples: [sample(110), sample(210), sample(310), sample(410)], seconds: 4, hits: 500, queries: 1000 },
  ];
  it('takes medians over rounds of each round, the hit rate from the engines, failures counted', () => {
    const s = summarizeContender(rounds);
    expect(s.ttftP50Ms).toBeCloseTo((200 + 260) / 2);
    expect(s.hitRatePercent).toBeCloseTo(40);
    expect(s.requestsPerSecond).toBeCloseTo((3 / 4 + 4 / 4) / 2);
    expect(s.failed).toBe(1);
    expect(s.rounds).toBe(2);
  });
  it('reports each contender with its figures and a table row', () => {
    const r = vllmRouterReport({ version: '0.1.17', workload: FULL, engines: 2, blockSize: 32, rounds: [...rounds, { ...rounds[1], contender: 'b' }] });
    expect(r.figures.filter((f) => f.name.startsWith('a: '))).toHaveLength(4);
    expect(r.sections?.[0].markdown).toMatch(/\| b \| 260 ms \|/);
  });
});
