import { describe, expect, it } from 'vitest';
import { MissingRoutingHintError, NoEligibleWorkerError } from '../../src/core/routing-errors.js';
import { EngineError } from '../../src/engines/errors.js';
import type { EngineKind } from '../../src/engines/types.js';
import { DisaggregationRequiredError, UnknownWorkerHintError } from '../../src/routing/errors.js';
import { PrefillRouter } from '../../src/routing/prefill-router.js';
import { SessionAffinity } from '../../src/routing/session-affinity.js';
import { startFakeEngine } from '../engines/fake-engine.js';
import { type Fleet, collect, fleetPerTest, request, startFleet, zeroTotals } from './harness.js';

const start = fleetPerTest();

const streamBody = (tokens = 16) => ({
  model: 'fake',
  prompt: Array.from({ length: tokens }, (_, i) => i + 1),
  max_tokens: 3,
  min_tokens: 2,
  stream: true,
  stream_options: { include_usage: true },
});

async function drained(f: Fleet) {
  await f.router.idle();
  expect(zeroTotals(f.prefillCore)).toBe(true);
  expect(zeroTotals(f.decodeCore)).toBe(true);
}

describe('aggregated serving (no prefill workers)', () => {
  it('passes the client body untouched to a decode-pool worker and relays its stream verbatim', async () => {
    const f = await start({ kind: 'vllm', prefill: 0, decode: 1, prefillBehaviour: {} });
    expect(f.router.active).toBe(false);
    expect(f.router.canServeRequests()).toBe(true);
    const body = streamBody();
    const res = await f.router.handle(request({ body, requestId: 'agg-1' }));
    expect(res.status).toBe(200);
    expect(res.headers).toMatchObject({
      'x-request-id': 'agg-1',
      'x-kvroute-mode': 'aggregated',
      'x-kvroute-decode-worker': '200',
      'x-kvroute-overlap-blocks': '0',
    });
    expect(res.headers['x-kvroute-prefill-worker']).toBeUndefined();
    const events = await collect(res.stream);
    expect(events.map((e) => e.data).at(-1)).toBe('[DONE]');
    expect(events.filter((e) => (e.json as { choices?: unknown[] })?.choices?.length)).toHaveLength(3);
    const got = f.decodeEngines[0].received[0];
    expect(got.body).toEqual(body);
    expect(got.headers['x-request-id']).toBe('agg-1');
    // Verbatim: the relayed data is the engine's text, byte for byte.
    expect(events[0].data).toBe(JSON.stringify(events[0].json));
    expect(f.router.stats()).toMatchObject({ requests: 1, aggregated: 1, disaggregated: 0 });
    expect(f.done).toHaveLength(1);
    // The engine's usage chunk (0 of 16 prompt tokens cached on a decode-role engine) is the request's.
    expect(f.done[0]).toMatchObject({ mode: 'aggregated', outcome: 'end', summary: { requestId: 'agg-1', outputTokens: 3, engineKvHitRate: 0 } });
    await drained(f);
  });

  it('enforceDisagg refuses with a clear error, and canServeRequests() says so', async () => {
    const f = await start({ kind: 'vllm', prefill: 0, decode: 1, router: { enforceDisagg: true } });
    expect(f.router.canServeRequests()).toBe(false);
    await expect(f.router.handle(request())).rejects.toThrow(DisaggregationRequiredError);
    await expect(f.router.handle(request())).rejects.toMatchObject({ code: 'disaggregation_required', message: expect.stringMatching(/no prefill worker/) });
    expect(() => f.router.query(Uint32Array.of(1, 2, 3, 4))).toThrow(DisaggregationRequiredError);
    expect(f.decodeEngines[0].received).toHaveLength(0);
    const p = await startFakeEngine({ id: 150, kind: 'vllm', role: 'prefill', world: f.world });
    try {
      f.prefillPool.add(f.info(p));
      expect(f.router.canServeRequests()).toBe(true);
      const res = await f.router.handle(request({ body: { model: 'fake', prompt: [1], max_tokens: 1 } }));
      expect(res.headers['x-kvroute-prefill-worker']).toBe('150');
      await drained(f);
    } finally {
      await p.close();
    }
  });
});

describe.each<EngineKind>(['vllm', 'trtllm'])('%s sequential handoff, end to end', (kind) => {
  it('prefills one token, hands the transfer state to decode, and streams the decode with the prefill cache report', async () => {
    const f = await start({ kind, prefill: 1, decode: 1, prefillBehaviour: { cachedTokens: 12 } });
    const body = streamBody();
    const res = await f.router.handle(request({ body, requestId: `${kind}-1` }));
    expect(res.headers).toMatchObject({
      'x-kvroute-mode': 'disaggregated',
      'x-kvroute-prefill-worker': '100',
      'x-kvroute-prefill-dp-rank': '0',
      'x-kvroute-decode-worker': '200',
    });
    const events = await collect(res.stream);
    const [pre] = f.prefillEngines[0].received;
    const [dec] = f.decodeEngines[0].received;
    // Prefill leg: one token, not streamed, no stream_options / min_tokens, the engine's marker.
    expect(pre.body).toMatchObject({ max_tokens: 1, stream: false, prompt: body.prompt });
    expect('stream_options' in pre.body || 'min_tokens' in pre.body).toBe(false);
    if (kind === 'vllm') {
      expect(pre.body.kv_transfer_params).toEqual({
        do_remote_decode: true,
        do_remote_prefill: false,
        remote_engine_id: null,
        remote_block_ids: null,
        remote_host: null,
        remote_port: null,
      });
      expect(dec.body.kv_transfer_params).toMatchObject({ do_remote_prefill: true, remote_request_id: `${kind}-1`, remote_engine_id: 'engine-100' });
    } else {
      expect(pre.body.disaggregated_params).toEqual({ request_type: 'context_only' });
      expect(dec.body.disaggregated_params).toMatchObject({ request_type: 'generation_only', ctx_request_id: 1, encoded_opaque_state: 'ctx:100:1' });
    }
    // Decode leg: the client's body (its max_tokens, stream, stream_options) plus the state.
    expect(dec.body).toMatchObject({ max_tokens: 3, min_tokens: 2, stream: true, stream_options: { include_usage: true } });
    expect(pre.headers['x-request-id']).toBe(`${kind}-1`);
    expect(dec.headers['x-request-id']).toBe(`${kind}-1`);
    // The final usage carries the prefill's cached tokens (the decode reported 0).
    const usage = events.map((e) => (e.json as { usage?: { prompt_tokens_details?: unknown } })?.usage).find(Boolean);
    expect(usage?.prompt_tokens_details).toEqual({ cached_tokens: 12 });
    expect(events.at(-1)?.data).toBe('[DONE]');
    expect(f.world.strandedHolds()).toEqual([]);
    expect(f.done[0]).toMatchObject({
      mode: 'disaggregated',
      outcome: 'end',
      summary: { workers: { prefill: { worker: 100 }, decode: { worker: 200 } }, engineKvHitRate: 12 / 16 },
    });
    await drained(f);
  });

  it('serves a non-streamed request the same way', async () => {
    const f = await start({ kind, prefill: 1, decode: 1, prefillBehaviour: { cachedTokens: 4 } });
    const res = await f.router.handle(request({ body: { model: 'fake', prompt: [1, 2, 3, 4, 5], max_tokens: 2 }, tokens: Uint32Array.of(1, 2, 3, 4, 5) }));
    expect(res.stream).toBeUndefined();
    expect(res.body).toMatchObject({ choices: [{ text: 't0t1', finish_reason: 'length' }], usage: { prompt_tokens_details: { cached_tokens: 4 } } });
    expect(f.decodeEngines[0].received[0].body).toMatchObject({ max_tokens: 2 });
    await drained(f);
  });

  it('returns the prefill answer when prefill already finished the request (EOS), without decode', async () => {
    const f = await start({ kind, prefill: 1, decode: 1, prefillBehaviour: { eos: true, cachedTokens: 3 } });
    const res = await f.router.handle(request({ body: streamBody() }));
    const events = await collect(res.stream);
    expect(events.map((e) => e.data).at(-1)).toBe('[DONE]');
    expect(events[0].json).toMatchObject({ object: 'text_completion', choices: [{ text: 't0', finish_reason: 'stop' }] });
    expect(events[1].json).toMatchObject({ choices: [], usage: { prompt_tokens_details: { cached_tokens: 3 } } });
    expect(f.decodeEngines[0].received).toHaveLength(0);
    expect(res.headers['x-kvroute-decode-worker']).toBeUndefined();
    const plain = await f.router.handle(request({ body: { model: 'fake', prompt: [1], max_tokens: 9 }, route: '/v1/chat/completions' }));
    expect(plain.body).toMatchObject({ object: 'chat.completion', choices: [{ message: { content: 't0' }, finish_reason: 'stop' }] });
    expect(plain.body).not.toHaveProperty('kv_transfer_params');
    expect(f.router.stats().finishedAtPrefill).toBe(2);
    await drained(f);
  });
});

describe('prefill failure', () => {
  it('falls back to aggregated decode when allowed, counted', async () => {
    const f = await start({ kind: 'vllm', prefill: 1, decode: 1, prefillBehaviour: { failStatus: 500 } });
    const res = await f.router.handle(request({ body: streamBody() }));
    expect(res.headers['x-kvroute-mode']).toBe('fallback');
    await collect(res.stream);
    const dec = f.decodeEngines[0].received[0];
    expect(dec.body).not.toHaveProperty('kv_transfer_params');
    expect(f.router.stats().fallbacks).toBe(1);
    expect(f.events).toEqual([{ type: 'fallback', requestId: expect.any(String), error: expect.any(EngineError) }]);
    await drained(f);
  });

  it('fails the request when fallback is not allowed, and on an engine 4xx verdict', async () => {
    const f = await start({ kind: 'trtllm', prefill: 1, decode: 1, prefillBehaviour: { failStatus: 502 }, router: { fallbackToAggregated: false } });
    await expect(f.router.handle(request())).rejects.toMatchObject({ status: 502 });
    expect(f.decodeEngines[0].received).toHaveLength(0);
    await drained(f);
    const g = await startFleet({ kind: 'vllm', prefill: 1, decode: 1, prefillBehaviour: { failStatus: 400 } });
    try {
      await expect(g.router.handle(request())).rejects.toMatchObject({ status: 400 });
      expect(g.router.stats().fallbacks).toBe(0);
    } finally {
      await g.close();
    }
  });

  it('falls back when the prefill answer breaks the protocol (a vLLM worker without NIXL)', async () => {
    const f = await start({ kind: 'vllm', prefill: 1, decode: 1, prefillBehaviour: { omitTransferParams: true } });
    const res = await f.router.handle(request({ body: { model: 'fake', prompt: [1], max_tokens: 2 } }));
    expect(res.headers['x-kvroute-mode']).toBe('fallback');
    expect(f.router.stats().fallbacks).toBe(1);
    await drained(f);
  });
});

describe('activation', () => {
  it('deactivates when the prefill pool empties and reactivates when it refills', async () => {
    const f = await start({ kind: 'vllm', prefill: 2, decode: 1 });
    expect(f.router.active).toBe(true);
    f.prefillPool.setHealthy(100, false);
    expect(f.router.active).toBe(true);
    f.prefillPool.setDraining(101, true);
    expect(f.router.active).toBe(false);
    const agg = await f.router.handle(request({ body: { model: 'fake', prompt: [1], max_tokens: 1 } }));
    expect(agg.headers['x-kvroute-mode']).toBe('aggregated');
    f.prefillPool.setHealthy(100, true);
    const dis = await f.router.handle(request({ body: { model: 'fake', prompt: [1], max_tokens: 1 } }));
    expect(dis.headers).toMatchObject({ 'x-kvroute-mode': 'disaggregated', 'x-kvroute-prefill-worker': '100' });
    f.prefillPool.remove(100);
    f.prefillPool.remove(101);
    expect(f.router.active).toBe(false);
    f.prefillPool.add(f.info(f.prefillEngines[1]));
    expect(f.events.map((e) => e.type)).toEqual(['deactivated', 'reactivated', 'deactivated', 'reactivated']);
    expect(f.router.stats()).toMatchObject({ deactivations: 2, reactivations: 2 });
    await drained(f);
  });

  it('under enforceDisagg, refuses while deactivated and serves again once reactivated', async () => {
    const f = await start({ kind: 'vllm', prefill: 1, decode: 1, router: { enforceDisagg: true } });
    f.prefillPool.setHealthy(100, false);
    expect(f.router.canServeRequests()).toBe(false);
    await expect(f.router.handle(request())).rejects.toThrow(DisaggregationRequiredError);
    f.prefillPool.setHealthy(100, true);
    expect(f.router.canServeRequests()).toBe(true);
    const res = await f.router.handle(request({ body: { model: 'fake', prompt: [1], max_tokens: 1 } }));
    expect(res.headers['x-kvroute-mode']).toBe('disaggregated');
    await drained(f);
  });
});

describe('choosing workers', () => {
  const plain = () => ({ model: 'fake', prompt: [1, 2], max_tokens: 1 });

  it('round-robin prefill advances only when a prefill worker is used', async () => {
    const f = await start({ kind: 'vllm', prefill: 3, decode: 1, prefillPolicy: 'round_robin' });
    const order: string[] = [];
    for (let i = 0; i < 4; i++) order.push((await f.router.handle(request({ body: plain() }))).headers['x-kvroute-prefill-worker']);
    // No decode worker: refused before any prefill work, the rotation stays.
    f.decodePool.setHealthy(200, false);
    await expect(f.router.handle(request({ body: plain() }))).rejects.toThrow(NoEligibleWorkerError);
    f.decodePool.setHealthy(200, true);
    order.push((await f.router.handle(request({ body: plain() }))).headers['x-kvroute-prefill-worker']);
    const expected = [0, 1, 2, 0, 1].map((k) => String(100 + ((Number(order[0]) - 100 + k) % 3)));
    expect(order).toEqual(expected);
    expect(f.prefillEngines.map((e) => e.received.length).sort()).toEqual([1, 2, 2]);
    await drained(f);
  });

  it('direct prefill mode requires x-prefill-instance-id and uses it', async () => {
    const f = await start({ kind: 'vllm', prefill: 2, decode: 1, prefillPolicy: 'direct' });
    await expect(f.router.handle(request())).rejects.toThrow(MissingRoutingHintError);
    await expect(f.router.handle(request())).rejects.toThrow(/x-prefill-instance-id/);
    expect(() => f.router.query(Uint32Array.of(1))).toThrow(MissingRoutingHintError);
    const res = await f.router.handle(request({ body: plain(), hints: { prefillWorkerId: 101 } }));
    expect(res.headers['x-kvroute-prefill-worker']).toBe('101');
    expect(f.prefillEngines[1].received).toHaveLength(1);
    expect(f.prefillEngines[0].received).toHaveLength(0);
    await drained(f);
  });

  it('pins the decode worker, the prefill worker and their ranks from hints', async () => {
    const f = await start({ kind: 'vllm', prefill: 2, decode: 3, prefillDpSize: 2, decodeDpSize: 4 });
    const res = await f.router.handle(request({ body: plain(), hints: { workerId: 202, dpRank: 3, prefillWorkerId: 100, prefillDpRank: 1 } }));
    expect(res.headers).toMatchObject({
      'x-kvroute-prefill-worker': '100',
      'x-kvroute-prefill-dp-rank': '1',
      'x-kvroute-decode-worker': '202',
      'x-kvroute-decode-dp-rank': '3',
    });
    expect(f.decodeEngines[2].received[0].headers['x-data-parallel-rank']).toBe('3');
    expect(f.prefillEngines[0].received[0].headers['x-data-parallel-rank']).toBe('1');
    await expect(f.router.handle(request({ hints: { workerId: 999 } }))).rejects.toThrow(UnknownWorkerHintError);
    await expect(f.router.handle(request({ hints: { prefillWorkerId: 999 } }))).rejects.toThrow(UnknownWorkerHintError);
    f.decodePool.setDraining(201, true);
    await expect(f.router.handle(request({ hints: { workerId: 201 } }))).rejects.toThrow(NoEligibleWorkerError);
    expect(f.prefillEngines.every((e) => e.received.length <= 1)).toBe(true);
    await drained(f);
    const agg = await startFleet({ kind: 'vllm', prefill: 0, decode: 2 });
    try {
      const r2 = await agg.router.handle(request({ body: plain(), hints: { workerId: 201 } }));
      expect(r2.headers['x-kvroute-decode-worker']).toBe('201');
      await drained(agg);
    } finally {
      await agg.close();
    }
  });

  it('session affinity: a session keeps its workers while they can serve; explicit hints win', async () => {
    const sessions = new SessionAffinity();
    const f = await start({ kind: 'vllm', prefill: 2, decode: 3, prefillPolicy: 'round_robin', decodePolicy: 'round_robin', router: { sessions } });
    const where = (h: Record<string, string>) => [h['x-kvroute-prefill-worker'], h['x-kvroute-decode-worker']];
    // Without a session, round robin moves every request on.
    const free = new Set<string>();
    for (let i = 0; i < 3; i++) free.add(where((await f.router.handle(request({ body: plain() }))).headers)[1]);
    expect(free.size).toBe(3);
    const first = where((await f.router.handle(request({ body: plain(), hints: { sessionId: 's1' } }))).headers);
    for (let i = 0; i < 3; i++) {
      expect(where((await f.router.handle(request({ body: plain(), hints: { sessionId: 's1' } }))).headers)).toEqual(first);
    }
    expect(sessions.stats()).toMatchObject({ sessions: 1, bound: 1, hits: 3, rebound: 0 });
    // The session's decode worker stops serving: routed anew, then kept on the new one.
    f.decodePool.setHealthy(Number(first[1]), false);
    const moved = where((await f.router.handle(request({ body: plain(), hints: { sessionId: 's1' } }))).headers);
    expect(moved[0]).toBe(first[0]);
    expect(moved[1]).not.toBe(first[1]);
    expect(f.router.query(Uint32Array.of(1, 2, 3, 4), { sessionId: 's1' }).decode.worker).toBe(Number(moved[1]));
    expect(where((await f.router.handle(request({ body: plain(), hints: { sessionId: 's1' } }))).headers)).toEqual(moved);
    expect(sessions.stats()).toMatchObject({ hits: 4, rebound: 1 });
    // A client's own pin overrides the session (and the session follows it).
    const pinned = String(f.decodeEngines.map((e) => e.id).find((id) => id !== Number(first[1]) && id !== Number(moved[1])));
    expect(where((await f.router.handle(request({ body: plain(), hints: { sessionId: 's1', workerId: Number(pinned) } }))).headers)[1]).toBe(pinned);
    expect(where((await f.router.handle(request({ body: plain(), hints: { sessionId: 's1' } }))).headers)[1]).toBe(pinned);
    await drained(f);
  });

  it('decode is routed with overlap credit 0: a decode worker holding the prompt gains nothing', async () => {
    const f = await start({ kind: 'vllm', prefill: 1, decode: 2 });
    const tokens = Uint32Array.from({ length: 16 }, (_, i) => i + 1);
    // Decode worker 201 holds the whole prompt (4 blocks); 200 holds nothing; both are idle.
    f.decodeCore.indexer.applyStored(201, 0, null, BigUint64Array.of(11n, 12n, 13n, 14n), tokens);
    const cost = (d: { candidates: Array<{ worker: number; cost: number; overlapBlocks: number }> }, w: number) => d.candidates.find((c) => c.worker === w)!;
    const disagg = f.router.query(tokens);
    expect(disagg.mode).toBe('disaggregated');
    expect(cost(disagg.decode, 201).overlapBlocks).toBe(4);
    expect(cost(disagg.decode, 201).cost).toBe(cost(disagg.decode, 200).cost);
    // The same pool routing aggregated (credit 1) would prefer 201.
    const aggregated = f.router.decode.query(tokens, {});
    expect(cost(aggregated, 201).cost).toBeLessThan(cost(aggregated, 200).cost);
    // A served request's decode leg gets credit 0 too: with 201 also carrying a small booking,
    // credit 1 would still choose 201 (its overlap outweighs the load), credit 0 chooses 200.
    f.decodeCore.route(Uint32Array.of(90, 91, 92, 93), { requestId: 'load', pinnedWorker: 201 });
    expect(f.router.decode.query(tokens, {}).worker).toBe(201);
    const res = await f.router.handle(request({ tokens, body: { model: 'fake', prompt: [...tokens], max_tokens: 2 } }));
    expect(res.headers['x-kvroute-decode-worker']).toBe('200');
    f.decodeCore.free('load');
    await drained(f);
  });
});

describe('bad requests', () => {
  it('refuses malformed RouterRequests with TypeError or RangeError', async () => {
    const f = await start({ kind: 'vllm', prefill: 0, decode: 1 });
    const ok = request();
    const cases: Array<[unknown, ErrorConstructor]> = [
      [null, TypeError],
      [{ ...ok, route: '/v1/embeddings' }, TypeError],
      [{ ...ok, body: [] }, TypeError],
      [{ ...ok, tokens: [1, 2] }, TypeError],
      [{ ...ok, requestId: '' }, RangeError],
      [{ ...ok, requestId: 'has space' }, RangeError],
      [{ ...ok, signal: {} }, TypeError],
      [{ ...ok, hints: { workerId: -1 } }, RangeError],
      [{ ...ok, hints: { dpRank: 70000 } }, RangeError],
      [{ ...ok, loraName: 5 }, TypeError],
      [{ ...ok, body: { stream: 'yes' } }, TypeError],
    ];
    for (const [req, type] of cases) await expect(f.router.handle(req as never)).rejects.toThrow(type);
    expect(f.decodeEngines[0].received).toHaveLength(0);
    await drained(f);
  });

  it('refuses bad options', async () => {
    const f = await start({ kind: 'vllm', prefill: 0, decode: 1 });
    const { prefill, decode } = f.router;
    expect(() => new PrefillRouter(null as never)).toThrow(TypeError);
    expect(() => new PrefillRouter({ prefill: {} as never, decode })).toThrow(/options.prefill must be a KvRouter/);
    expect(() => new PrefillRouter({ prefill: decode, decode })).toThrow(/two different pools/);
    expect(() => new PrefillRouter({ prefill, decode, enforceDisagg: 'yes' as never })).toThrow(/enforceDisagg must be a boolean/);
    expect(() => new PrefillRouter({ prefill, decode, clock: 5 as never })).toThrow(/clock must be a function/);
    for (const timers of [5, {}, { at: 'soon' }, null]) {
      expect(() => new PrefillRouter({ prefill, decode, timers: timers as never })).toThrow(
        expect.objectContaining({ name: 'TypeError', message: expect.stringMatching(/options.timers must have an at/) }),
      );
    }
  });
});
