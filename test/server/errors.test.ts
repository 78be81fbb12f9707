import { describe, expect, it } from 'vitest';
import { errorReply, HttpError, payloadTooLarge } from '../../src/server/errors.js';

class FakeRoutingError extends Error {
  constructor(readonly code: string, message: string, readonly retryAfterMs?: number) {
    super(message);
  }
}
class FakeEngineError extends Error {
  constructor(readonly status: number, readonly body: unknown) {
    super(`engine answered ${status}`);
  }
}

const parse = (body: string) => JSON.parse(body) as { error: { message: string; type: string; code: string } };

describe('errorReply', () => {
  it('answers HttpErrors with their own status and an OpenAI-style body', () => {
    const r = errorReply(payloadTooLarge(1024));
    expect(r.status).toBe(413);
    expect(parse(r.body)).toEqual({ error: { message: 'request body exceeds the limit of 1024 bytes', type: 'invalid_request_error', code: 'payload_too_large' } });
    expect(errorReply(new HttpError(404, 'invalid_request_error', 'model_not_found', 'no')).status).toBe(404);
  });

  it('maps backpressure to 429 with Retry-After in whole seconds', () => {
    const r = errorReply(new FakeRoutingError('backpressure', 'queue full', 2500));
    expect(r.status).toBe(429);
    expect(r.headers['retry-after']).toBe('3');
    expect(parse(r.body).error.code).toBe('backpressure');
  });

  it('maps "nothing can serve" to 503 with Retry-After', () => {
    const r = errorReply(new FakeRoutingError('no_eligible_worker', 'all busy'));
    expect(r.status).toBe(503);
    expect(r.headers['retry-after']).toBe('1');
  });

  it('maps a missing direct-routing hint to 400 and a duplicate request id to 409', () => {
    expect(errorReply(new FakeRoutingError('missing_routing_hint', 'x')).status).toBe(400);
    expect(errorReply(new FakeRoutingError('duplicate_request_id', 'x')).status).toBe(409);
  });

  it("passes an engine's 4xx verdict through and turns engine failures into 502", () => {
    const r = errorReply(new FakeEngineError(400, { error: { message: 'prompt too long', type: 'BadRequestError', code: 400 } }));
    expect(r.status).toBe(400);
    expect(parse(r.body).error).toEqual({ message: 'prompt too long', type: 'BadRequestError', code: '400' });
    const e = errorReply(new FakeEngineError(500, 'boom'));
    expect(e.status).toBe(502);
    expect(parse(e.body).error.message).toMatch(/engine failed: boom/);
  });

  it('maps TypeError and RangeError to 400 and anything else to 500', () => {
    expect(errorReply(new TypeError('bad')).status).toBe(400);
    expect(errorReply(new RangeError('bad')).status).toBe(400);
    const r = errorReply(new Error('oops'));
    expect(r.status).toBe(500);
    expect(parse(r.body).error.type).toBe('internal_error');
  });

  it('does not mistake a system error code for a routing refusal', () => {
    const err = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    expect(errorReply(err).status).toBe(500);
  });
});
