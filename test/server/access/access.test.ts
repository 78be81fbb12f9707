import { describe, expect, it } from 'vitest';
import { AccessControl, RateLimitedError } from '../../../src/server/access/access.js';
import { HttpError } from '../../../src/server/call/errors.js';

const KEY = 'sk-team-a-0123456789abcdef';
const OTHER = 'sk-team-b-0123456789abcdef';

function thrown(fn: () => unknown): HttpError {
  try {
    fn();
  } catch (err) {
    if (err instanceof HttpError) return err;
    throw err;
  }
  throw new Error('nothing was thrown');
}

describe('AccessControl', () => {
  it('knows a caller by its Bearer key, and answers 401 the OpenAI way otherwise', () => {
    const a = new AccessControl([{ name: 'team-a', key: KEY }], {});
    expect(a.authenticate(`Bearer ${KEY}`).name).toBe('team-a');
    expect(a.authenticate(`bearer   ${KEY}`).name).toBe('team-a');
    for (const header of [undefined, '', 'Basic abc', `Bearer ${OTHER}`, `Bearer ${KEY}x`]) {
      const err = thrown(() => a.authenticate(header));
      expect(err.status).toBe(401);
      expect(err.code).toBe('invalid_api_key');
      expect(err.headers['www-authenticate']).toBe('Bearer');
      expect(err.message).not.toContain(KEY);
    }
  });

  it('limits requests per minute with a Retry-After, per key, taking nothing from a refused request', () => {
    let now = 0;
    const a = new AccessControl(
      [
        { name: 'a', key: KEY },
        { name: 'b', key: OTHER, requestsPerMinute: 100 },
      ],
      { requestsPerMinute: 2 },
      () => now,
    );
    const ca = a.authenticate(`Bearer ${KEY}`);
    a.admit(ca, 10);
    a.admit(ca, 10);
    const err = thrown(() => a.admit(ca, 10));
    expect(err).toBeInstanceOf(RateLimitedError);
    expect(err.status).toBe(429);
    expect(err.headers['retry-after']).toBe('30');
    expect(err.message).toBe("rate limit of key 'a' reached (2 requests per minute); retry in 30 s");
    expect((err as RateLimitedError).limit).toBe('requests');
    // Another key has its own bucket (and its own limit).
    const cb = a.authenticate(`Bearer ${OTHER}`);
    for (let i = 0; i < 10; i++) a.admit(cb, 10);
    now += 30_000;
    a.admit(ca, 10);
  });

  it('limits tokens per minute (prompt + max_tokens), and refuses with 400 what no minute could admit', () => {
    let now = 0;
    const a = new AccessControl([{ name: 'a', key: KEY }], { tokensPerMinute: 1000 }, () => now);
    const c = a.authenticate(`Bearer ${KEY}`);
    a.admit(c, 800);
    const err = thrown(() => a.admit(c, 300));
    expect(err.status).toBe(429);
    expect((err as RateLimitedError).limit).toBe('tokens');
    expect(err.headers['retry-after']).toBe('6'); // 100 tokens at 1000 a minute
    now += 6_000;
    a.admit(c, 300);
    const huge = thrown(() => a.admit(c, 1001));
    expect(huge.status).toBe(400);
    expect(huge.code).toBe('request_exceeds_rate_limit');
  });
});
