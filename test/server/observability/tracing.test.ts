// Tracing end to end: a router in front of simulated engines (each behind a proxy that records the
// headers the engine received), exporting to an OTLP receiver on loopback that decodes what the
// official exporters send (protobuf with the official proto definitions, JSON, gRPC).
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createRouter, type Router } from '../../../src/server/app/router.js';
import { startEmbeddedFleet, type EmbeddedFleet } from '../../../src/server/app/embedded.js';
import { listenUws, type RunningServer } from '../../../src/server/http/uws.js';
import type { RouterConfigInput } from '../../../src/server/config/config.js';
import { startGrpcReceiver, startHttpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { startRecordingProxy, type RecordingProxy } from '../helpers/recording-proxy.js';
import type { Logger } from '../../../src/util/logger.js';
import { captureLog } from '../../helpers/log-capture.js';
import { BLOCK_SIZE, MODEL, prompt, waitFor } from '../helpers/router.js';

const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';
const traceparent = (sampled = true) => `00-${CLIENT_TRACE}-${CLIENT_SPAN}-${sampled ? '01' : '00'}`;

interface Setup {
  url: string;
  router: Router;
  proxies: RecordingProxy[];
  close(): Promise<void>;
}

/** Simulated engines behind recording proxies, and a router over the proxies. */
async function start(fleetShape: { prefill: number; decode: number }, config: RouterConfigInput, logger?: Logger): Promise<Setup> {
  const fleet: EmbeddedFleet = await startEmbeddedFleet({ ...fleetShape, style: 'vllm', speedup: 200, blockSize: BLOCK_SIZE, kvBlocks: 2048, model: MODEL });
  const proxies = await Promise.all(fleet.workers.map((w) => startRecordingProxy(w.baseUrl)));
  const workers = fleet.workers.map((w, i) => ({ ...w, baseUrl: proxies[i].url }));
  const router = await createRouter({ port: 0, blockSize: BLOCK_SIZE, model: MODEL, health: { intervalMs: 0 }, seed: 7, ...config, workers }, { logger });
  const server: RunningServer = await listenUws(router, { host: '127.0.0.1', port: 0 });
  return {
    url: server.url,
    router,
    proxies,
    async close() {
      await server.close();
      await router.close();
      await Promise.all(proxies.map((p) => p.close()));
      await fleet.close();
    },
  };
}

async function post(
  url: string,
  path: string,
  body: object,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string; headers: Headers }> {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

const byName = (spans: ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);
const one = (spans: ReceivedSpan[], name: string) => {
  const found = byName(spans, name);
  expect(found, name).toHaveLength(1);
  return found[0];
};

/** The spans of one trace once its request span (the server span) arrived. */
async function traceOf(receiver: OtlpReceiver, router: Router, traceId: string, count: number): Promise<ReceivedSpan[]> {
  await waitFor(async () => {
    await (router as unknown as { tracing?: { flush(): Promise<void> } }).tracing?.flush();
    return receiver.spans.filter((s) => s.traceId === traceId).length >= count;
  }, `${count} spans of trace ${traceId}`);
  return receiver.spans.filter((s) => s.traceId === traceId);
}

/** The traceparents the engines received, as [trace id, parent span id]. */
function engineParents(proxies: RecordingProxy[]): Array<{ path: string; traceId: string; parent: string; tracestate?: string }> {
  return proxies.flatMap((p) =>
    p.seen
      .filter((r) => r.path.startsWith('/v1/'))
      .map((r) => {
        const tp = r.headers.traceparent as string | undefined;
        expect(tp, `traceparent of ${r.path}`).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
        const [, traceId, parent] = tp!.split('-');
        return { path: r.path, traceId, parent, tracestate: r.headers.tracestate as string | undefined };
      }),
  );
}

describe('tracing over OTLP/HTTP protobuf, aggregated serving', () => {
  let receiver: OtlpReceiver;
  let t: Setup;
  beforeAll(async () => {
    receiver = await startHttpReceiver();
    t = await start({ prefill: 0, decode: 2 }, { tracing: { enabled: true, endpoint: receiver.url, protocol: 'http/protobuf', serviceName: 'kvroute-test' } });
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });
  afterEach(() => {
    for (const p of t.proxies) p.seen.length = 0;
  });

  it("joins the client's trace: request span under the client's, its steps under it, the engine's traceparent naming the leg span", async () => {
    const r = await post(
      t.url,
      '/v1/chat/completions',
      { model: MODEL, messages: [{ role: 'user', content: prompt(80, 1) }], max_tokens: 4, stream: true },
      { traceparent: traceparent(), tracestate: 'vendor=abc', 'x-request-id': 'req-trace-1' },
    );
    expect(r.status).toBe(200);
    expect(r.text).toContain('[DONE]');
    const spans = await traceOf(receiver, t.router, CLIENT_TRACE, 5);

    const request = one(spans, 'POST /v1/chat/completions');
    expect(request.parentSpanId).toBe(CLIENT_SPAN);
    expect(request.kind).toBe(2); // server
    expect(request.resource['service.name']).toBe('kvroute-test');
    expect(request.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/v1/chat/completions',
      'http.response.status_code': 200,
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': MODEL,
      'gen_ai.request.stream': true,
      'kvroute.request_id': 'req-trace-1',
      'kvroute.mode': 'aggregated',
      'kvroute.mode_reason': 'no_prefill_workers',
      'gen_ai.usage.output_tokens': 4,
    });
    expect(request.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(80);
    expect(request.attributes['kvroute.prompt_tokens']).toBe(request.attributes['gen_ai.usage.input_tokens']);

    for (const name of ['kvroute.preprocess', 'kvroute.route', 'kvroute.leg decode', 'kvroute.relay'])
      expect(one(spans, name).parentSpanId, name).toBe(request.spanId);
    expect(one(spans, 'kvroute.preprocess').attributes).toMatchObject({
      'kvroute.preprocess.kind': 'chat',
      'kvroute.prompt_tokens': request.attributes['kvroute.prompt_tokens'],
    });
    const route = one(spans, 'kvroute.route');
    expect(route.attributes).toMatchObject({
      'kvroute.pool': 'decode',
      'kvroute.policy': 'ttft',
      'kvroute.mode': 'aggregated',
      'kvroute.mode_reason': 'no_prefill_workers',
    });
    expect(typeof route.attributes['kvroute.overlap_blocks']).toBe('number');
    expect(route.attributes['kvroute.predicted_ttft_ms']).toBeGreaterThan(0);
    const leg = one(spans, 'kvroute.leg decode');
    expect(leg.kind).toBe(3); // client
    expect(leg.attributes).toMatchObject({
      'kvroute.worker': route.attributes['kvroute.worker'],
      'server.address': '127.0.0.1',
      'kvroute.retries': 0,
      'kvroute.leg.outcome': 'end',
      'gen_ai.request.stream': true,
    });
    expect(leg.events.map((e) => e.name)).toEqual(['sent', 'first_byte', 'first_token']);
    expect(one(spans, 'kvroute.relay').events.map((e) => e.name)).toEqual(['first_token']);

    // The engine got the leg span's context, the client's tracestate passed on.
    const received = engineParents(t.proxies);
    expect(received).toEqual([{ path: '/v1/completions', traceId: CLIENT_TRACE, parent: leg.spanId, tracestate: 'vendor=abc' }]);
  });

  it('starts a trace of its own without a traceparent; a non-streamed answer records its id and usage', async () => {
    const r = await post(t.url, '/v1/completions', { model: MODEL, prompt: prompt(40, 2), max_tokens: 3 });
    expect(r.status).toBe(200);
    const answer = JSON.parse(r.text) as { id: string };
    const [{ traceId, parent }] = engineParents(t.proxies);
    expect(traceId).not.toBe(CLIENT_TRACE);
    const spans = await traceOf(receiver, t.router, traceId, 4);
    const request = one(spans, 'POST /v1/completions');
    expect(request.parentSpanId).toBe('');
    expect(request.attributes).toMatchObject({
      'gen_ai.operation.name': 'text_completion',
      'gen_ai.response.id': answer.id,
      'gen_ai.request.stream': false,
      'gen_ai.usage.output_tokens': 3,
      'kvroute.request_id': r.headers.get('x-request-id'),
    });
    const leg = one(spans, 'kvroute.leg decode');
    expect(leg.spanId).toBe(parent);
    expect(leg.events.map((e) => e.name)).toEqual(['sent', 'first_byte']);
    expect(byName(spans, 'kvroute.relay')).toEqual([]);
  });

  it('follows a client that did not sample: nothing exported, the engine still gets the trace context (unsampled)', async () => {
    const unsampled = 'aaaabbbbccccddddeeeeffff00001111';
    const r = await post(
      t.url,
      '/v1/completions',
      { model: MODEL, prompt: prompt(20, 3), max_tokens: 2 },
      { traceparent: `00-${unsampled}-${CLIENT_SPAN}-00` },
    );
    expect(r.status).toBe(200);
    const [{ traceId }] = engineParents(t.proxies);
    expect(traceId).toBe(unsampled);
    expect(t.proxies.flatMap((p) => p.seen).map((s) => (s.headers.traceparent as string).slice(-2))).toEqual(['00']);
    await (t.router as unknown as { tracing: { flush(): Promise<void> } }).tracing.flush();
    expect(receiver.spans.filter((s) => s.traceId === unsampled)).toEqual([]);
  });

  it('records an error with its OpenAI error code on the request span', async () => {
    const r = await post(t.url, '/v1/completions', { model: 'no-such-model', prompt: 'x' }, { traceparent: `00-${'12'.repeat(16)}-${CLIENT_SPAN}-01` });
    expect(r.status).toBe(404);
    const [request] = await traceOf(receiver, t.router, '12'.repeat(16), 1);
    expect(request.name).toBe('POST /v1/completions');
    expect(request.attributes).toMatchObject({ 'http.response.status_code': 404, 'error.type': 'model_not_found' });
    expect(request.status.code).toBe(2);
    expect(request.status.message).toContain('no-such-model');
  });
});

describe('tracing a disaggregated request', () => {
  it('has a route span and a leg span per pool, each engine under its own leg', async () => {
    const receiver = await startHttpReceiver();
    const t = await start({ prefill: 1, decode: 1 }, { tracing: { enabled: true, endpoint: receiver.url } });
    try {
      const r = await post(t.url, '/v1/completions', { model: MODEL, prompt: prompt(64, 4), max_tokens: 3, stream: true }, { traceparent: traceparent() });
      expect(r.status).toBe(200);
      const spans = await traceOf(receiver, t.router, CLIENT_TRACE, 7);
      const request = one(spans, 'POST /v1/completions');
      expect(request.attributes).toMatchObject({
        'kvroute.mode': 'disaggregated',
        'kvroute.prefill_worker': expect.any(Number),
        'kvroute.decode_worker': expect.any(Number),
      });
      const routes = byName(spans, 'kvroute.route').map((s) => s.attributes['kvroute.pool']);
      expect(routes.sort()).toEqual(['decode', 'prefill']);
      const legs = { prefill: one(spans, 'kvroute.leg prefill'), decode: one(spans, 'kvroute.leg decode') };
      for (const leg of Object.values(legs)) expect(leg.parentSpanId).toBe(request.spanId);
      const received = engineParents(t.proxies);
      expect(received.map((e) => e.traceId)).toEqual([CLIENT_TRACE, CLIENT_TRACE]);
      expect(received.map((e) => e.parent).sort()).toEqual([legs.prefill.spanId, legs.decode.spanId].sort());
      expect(received.find((e) => e.parent === legs.prefill.spanId)).toBeDefined();
    } finally {
      await t.close();
      await receiver.close();
    }
  });
});

describe('the other OTLP protocols', () => {
  it('exports OTLP/HTTP JSON', async () => {
    const receiver = await startHttpReceiver();
    const t = await start({ prefill: 0, decode: 1 }, { tracing: { enabled: true, endpoint: receiver.url, protocol: 'http/json' } });
    try {
      expect((await post(t.url, '/v1/completions', { model: MODEL, prompt: prompt(20, 5), max_tokens: 2 }, { traceparent: traceparent() })).status).toBe(200);
      const spans = await traceOf(receiver, t.router, CLIENT_TRACE, 4);
      expect(one(spans, 'POST /v1/completions').parentSpanId).toBe(CLIENT_SPAN);
      expect(new Set(receiver.contentTypes)).toEqual(new Set(['application/json']));
    } finally {
      await t.close();
      await receiver.close();
    }
  });

  it('exports OTLP/gRPC', async () => {
    const receiver = await startGrpcReceiver();
    const t = await start({ prefill: 0, decode: 1 }, { tracing: { enabled: true, endpoint: receiver.url, protocol: 'grpc' } });
    try {
      expect((await post(t.url, '/v1/completions', { model: MODEL, prompt: prompt(20, 6), max_tokens: 2 }, { traceparent: traceparent() })).status).toBe(200);
      const spans = await traceOf(receiver, t.router, CLIENT_TRACE, 4);
      const request = one(spans, 'POST /v1/completions');
      expect(request.parentSpanId).toBe(CLIENT_SPAN);
      expect(one(spans, 'kvroute.leg decode').parentSpanId).toBe(request.spanId);
      expect(new Set(receiver.contentTypes)).toEqual(new Set(['grpc']));
    } finally {
      await t.close();
      await receiver.close();
    }
  });
});

describe('tracing off (the default)', () => {
  it('exports nothing and sends engines no traceparent, even when the client sent one', async () => {
    const receiver = await startHttpReceiver();
    const t = await start({ prefill: 0, decode: 1 }, {});
    try {
      expect((t.router as unknown as { tracing?: unknown }).tracing).toBeUndefined();
      for (const stream of [false, true]) {
        expect(
          (await post(t.url, '/v1/completions', { model: MODEL, prompt: prompt(20, 7), max_tokens: 2, stream }, { traceparent: traceparent() })).status,
        ).toBe(200);
      }
      const legs = t.proxies.flatMap((p) => p.seen).filter((s) => s.path.startsWith('/v1/'));
      expect(legs).toHaveLength(2);
      for (const leg of legs) {
        expect(leg.headers.traceparent).toBeUndefined();
        expect(leg.headers.tracestate).toBeUndefined();
      }
    } finally {
      await t.close();
    }
    expect(receiver.spans).toEqual([]);
    expect(receiver.contentTypes).toEqual([]);
    await receiver.close();
  });
});

describe('log lines', () => {
  it('carry the trace id beside the request id', async () => {
    const receiver = await startHttpReceiver();
    const logs = captureLog('debug');
    const t = await start({ prefill: 0, decode: 1 }, { tracing: { enabled: true, endpoint: receiver.url } }, logs.logger);
    try {
      expect(
        (
          await post(
            t.url,
            '/v1/completions',
            { model: MODEL, prompt: prompt(20, 8), max_tokens: 2 },
            { traceparent: traceparent(), 'x-request-id': 'req-log-1' },
          )
        ).status,
      ).toBe(200);
      const line = logs.lines().find((l) => l.request_id === 'req-log-1');
      expect(line).toMatchObject({ msg: 'request', request_id: 'req-log-1', trace_id: CLIENT_TRACE });
    } finally {
      await t.close();
      await receiver.close();
    }
  });
});
