import { describe, expect, it } from 'vitest';
import { RouterMetrics } from '../../../src/server/observability/metrics.js';

describe('RouterMetrics', () => {
  it('exports KV events skipped on purpose, by worker and reason', async () => {
    const m = new RouterMetrics();
    m.attach({
      workerLoads: () => [],
      workerStates: () => [],
      indexStats: () => [],
      fallbacksToAggregated: () => 0,
      eventStats: () => [
        {
          worker: 4,
          applied: 10,
          rejected: {},
          joins: 2,
          gaps: 0,
          replays: 0,
          decodeErrors: 0,
          restarts: 0,
          skipped: { unknown_type: 3, other_group: 0, other_medium: 2 },
        },
      ],
    });
    const text = await m.render();
    expect(text).toContain('kvroute_kv_events_skipped_total{worker="4",reason="unknown_type"} 3');
    expect(text).toContain('kvroute_kv_events_skipped_total{worker="4",reason="other_medium"} 2');
    expect(text).toContain('kvroute_kv_event_stream_joins_total{worker="4"} 2');
  });

  it("counts API key requests and tokens by the key's name", async () => {
    const m = new RouterMetrics();
    m.apiKeyRequest('team-a', 'admitted', 120);
    m.apiKeyRequest('team-a', 'rate_limited_tokens', 0);
    const text = await m.render();
    expect(text).toContain('kvroute_api_key_requests_total{key="team-a",result="admitted"} 1');
    expect(text).toContain('kvroute_api_key_requests_total{key="team-a",result="rate_limited_tokens"} 1');
    expect(text).toContain('kvroute_api_key_tokens_total{key="team-a"} 120');
  });
});
