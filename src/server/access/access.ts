// Who may call the OpenAI routes: a Bearer key of the configured set (401 otherwise), and within its
// limits (429 with Retry-After): requests per minute and tokens per minute, a request costing its
// prompt tokens plus the max_tokens it asks for (what it may cost; charged when admitted, nothing
// refunded). Without keys every call is admitted.
import { HttpError } from '../call/errors.js';
import { digest, type ApiKey } from './api-keys.js';
import { TokenBucket } from './rate-limit.js';

export interface RateLimits {
  requestsPerMinute?: number;
  tokensPerMinute?: number;
}

/** An authenticated caller: the key's name and its buckets. */
export interface Caller {
  readonly name: string;
  readonly requests?: TokenBucket;
  readonly tokens?: TokenBucket;
}

/** A 429 of one of a key's limits. */
export class RateLimitedError extends HttpError {
  constructor(
    readonly caller: string,
    readonly limit: 'requests' | 'tokens',
    message: string,
    retryAfterS: number,
  ) {
    super(429, 'rate_limit_error', 'rate_limit_exceeded', message, { 'retry-after': String(retryAfterS) });
  }
}

export class AccessControl {
  private readonly byDigest = new Map<string, Caller>();

  constructor(
    keys: readonly ApiKey[],
    defaults: RateLimits,
    private readonly clock: () => number = Date.now,
  ) {
    const now = clock();
    for (const k of keys) {
      const rpm = k.requestsPerMinute ?? defaults.requestsPerMinute;
      const tpm = k.tokensPerMinute ?? defaults.tokensPerMinute;
      this.byDigest.set(digest(k.key), {
        name: k.name,
        requests: rpm === undefined ? undefined : new TokenBucket(rpm, now),
        tokens: tpm === undefined ? undefined : new TokenBucket(tpm, now),
      });
    }
  }

  get keys(): number {
    return this.byDigest.size;
  }

  /** The caller an Authorization header names; a 401 when it names none. */
  authenticate(authorization: string | undefined): Caller {
    const m = authorization === undefined ? null : /^Bearer +(\S+) *$/i.exec(authorization);
    const caller = m ? this.byDigest.get(digest(m[1])) : undefined;
    if (caller) return caller;
    const message = m ? 'Incorrect API key provided.' : 'You did not provide an API key: send it as Authorization: Bearer <key>.';
    throw new HttpError(401, 'invalid_request_error', 'invalid_api_key', message, { 'www-authenticate': 'Bearer' });
  }

  /**
   * Takes one request and `tokens` from the caller's buckets, or throws a 429 saying when to retry
   * (nothing is taken then); a request larger than a whole minute's tokens is a 400.
   */
  admit(caller: Caller, tokens: number): void {
    const now = this.clock();
    const waitRequests = caller.requests?.waitFor(1, now) ?? 0;
    const waitTokens = caller.tokens?.waitFor(tokens, now) ?? 0;
    if (waitTokens === Infinity) {
      throw new HttpError(
        400,
        'invalid_request_error',
        'request_exceeds_rate_limit',
        `this request needs ${tokens} tokens (prompt + max_tokens), more than key '${caller.name}' may use in a minute (${caller.tokens?.perMinute}): lower max_tokens or shorten the prompt`,
      );
    }
    if (waitRequests > 0 || waitTokens > 0) {
      const limit = waitRequests >= waitTokens ? 'requests' : 'tokens';
      const perMinute = limit === 'requests' ? caller.requests?.perMinute : caller.tokens?.perMinute;
      const seconds = Math.max(1, Math.ceil(Math.max(waitRequests, waitTokens) / 1000));
      throw new RateLimitedError(
        caller.name,
        limit,
        `rate limit of key '${caller.name}' reached (${perMinute} ${limit} per minute); retry in ${seconds} s`,
        seconds,
      );
    }
    caller.requests?.take(1, now);
    caller.tokens?.take(tokens, now);
  }
}
