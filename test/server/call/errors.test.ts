import { describe, expect, it } from 'vitest';
import { BackpressureError, DuplicateRequestError, MissingRoutingHintError, NoEligibleWorkerError } from '../../../src/core/routing-errors.js';
import { EngineError, transportError } from '../../../src/engines/errors.js';
import { DisaggregationRequiredError } from '../../../src/routing/errors.js';
import { errorReply, HttpError, payloadTooLarge } from '../../../src/server/call/errors.js';

const parse = (body: string) => JSON.parse(body) as { error: { message: string; type: string; code: string } };

describe('errorReply', () => {
  it('answers HttpErrors with their own status and an OpenAI-style body', () => {
    const r = errorReply(payloadTooLarge(1024));
    expect(r.status).toBe(413);
    expect(parse(r.body)).toEqual({
      error: { message: "request body exceeds the router's limit of 1024 bytes (--max-body-bytes)", type: 'invalid_request_error', code: 'payload_too_large' },
    });
    expect(errorReply(new HttpError(404, 'invalid_request_error', 'model_not_found', 'no')).status).toBe(404);
  });

  it('maps backpressure to 429 with Retry-After in whole seconds', () => {
    const r = errorReply(new BackpressureError('queue full', 2500));
    expect(r.status).toBe(429);
    expect(r.headers['retry-after']).toBe('3');
    expect(parse(r.body).error.code).toBe('backpressure');
  });

  it('maps "nothing can serve" to 503 with Retry-After', () => {
    for (const err of [new NoEligibleWorkerError('all busy'), new DisaggregationRequiredError()]) {
      const r = errorReply(err);
      expect(r.status).toBe(503);
      expect(r.headers['retry-after']).toBe('1');
    }
    expect(parse(errorReply(new DisaggregationRequiredError()).body).error.code).toBe('disaggregation_required');
  });

  it('maps a missing direct-routing hint to 400 and a duplicate request id to 409', () => {
    expect(errorReply(new MissingRoutingHintError('x')).status).toBe(400);
    expect(errorReply(new DuplicateRequestError('x')).status).toBe(409);
  });

  it("passes an engine's 4xx verdict through and turns engine failures into 502/504", () => {
    const r = errorReply(new EngineError(400, { error: { message: 'prompt too long', type: 'BadRequestError', code: 400 } }, 'engine answered 400'));
    expect(r.status).toBe(400);
    expect(parse(r.body).error).toEqual({ message: 'prompt too long', type: 'BadRequestError', code: '400' });
    const e = errorReply(new EngineError(500, 'boom', 'engine answered 500'));
    expect(e.status).toBe(502);
    expect(parse(e.body).error.message).toBe('engine failed (the engine): boom');
    const broken = errorReply(transportError('engine_stream_broken', 'http://127.0.0.1:1', 'socket hang up'));
    expect(broken.status).toBe(502);
    expect(parse(broken.body).error.code).toBe('engine_stream_broken');
    expect(errorReply(transportError('engine_first_byte_timeout', 'http://h:1', 'slow')).status).toBe(504);
    expect(errorReply(new EngineError(503, 'busy', 'engine answered 503')).headers['retry-after']).toBe('1');
  });

  it("names a failed engine by its worker id, never by URL, and leaves the transport's words to the log", () => {
    const workerOf = (url: string) => (url === 'http://user:secret@10.0.0.7:8000' ? 7 : undefined);
    const refused = transportError('engine_unreachable', 'http://user:secret@10.0.0.7:8000', 'connect ECONNREFUSED 10.0.0.7:8000');
    const r = errorReply(refused, workerOf);
    expect(r.status).toBe(502);
    expect(parse(r.body).error).toEqual({ message: 'engine unreachable (worker 7)', type: 'engine_error', code: 'engine_unreachable' });
    expect(r.body).not.toMatch(/10\.0\.0\.7|ECONNREFUSED|secret/);
    // Never sent (mayHaveAccepted false): 503 with Retry-After, the client may send it again.
    const unsent = errorReply(transportError('engine_connect_timeout', 'http://user:secret@10.0.0.7:8000', 'connect timeout', false), workerOf);
    expect(unsent.status).toBe(503);
    expect(unsent.headers['retry-after']).toBe('1');
    expect(parse(unsent.body).error).toEqual({
      message: 'engine connect timeout (worker 7): no engine got the request, it may be sent again',
      type: 'service_unavailable',
      code: 'engine_connect_timeout',
    });
    // Without a worker to name (an engine the registry no longer knows): still no URL.
    expect(parse(errorReply(refused).body).error.message).toBe('engine unreachable (the engine)');
    const failed = errorReply(
      new EngineError(
        500,
        { error: { message: 'CUDA out of memory' } },
        'engine http://user:secret@10.0.0.7:8000 answered 500',
        'engine_rejected',
        'http://user:secret@10.0.0.7:8000',
      ),
      workerOf,
    );
    expect(parse(failed.body).error.message).toBe('engine failed (worker 7): CUDA out of memory');
    const busy = errorReply(new EngineError(503, 'busy', 'engine answered 503', 'engine_rejected', 'http://user:secret@10.0.0.7:8000'), workerOf);
    expect(parse(busy.body).error.message).toBe('engine unavailable (worker 7): busy');
  });

  it("says an engine's 413 was the engine's limit, not the router's", () => {
    const r = errorReply(
      new EngineError(
        413,
        { error: { message: 'request body exceeds the limit of 8388608 bytes', type: 'invalid_request_error', code: 'payload_too_large' } },
        'engine answered 413',
        'engine_rejected',
        'http://h:1',
      ),
      () => 3,
    );
    expect(r.status).toBe(413);
    expect(parse(r.body).error.message).toBe(
      'worker 3 refused the request as too large (the router passed it on under its own limit): request body exceeds the limit of 8388608 bytes',
    );
  });

  it('maps TypeError and RangeError to 400 (keeping their code) and anything else to 500', () => {
    expect(errorReply(new TypeError('bad')).status).toBe(400);
    const coded = Object.assign(new RangeError('no such worker'), { code: 'unknown_worker' });
    expect(parse(errorReply(coded).body).error.code).toBe('unknown_worker');
    const r = errorReply(new Error('oops'));
    expect(r.status).toBe(500);
    expect(parse(r.body).error.type).toBe('internal_error');
  });

  it('does not mistake a system error code for a routing refusal', () => {
    const err = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    expect(errorReply(err).status).toBe(500);
  });
});
