// API keys on the router end to end: the OpenAI routes want a Bearer key (401 otherwise), each key
// has its limits (429 with Retry-After), and its name, never the key, shows in metrics and logs.
import { afterEach, describe, expect, it } from 'vitest';
import { captureLog } from '../../helpers/log-capture.js';
import { metricSum, startTestRouter, type TestRouter } from '../helpers/router.js';

const KEY_A = 'sk-team-a-0123456789abcdef';
const KEY_B = 'sk-team-b-0123456789abcdef';

let t: TestRouter | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const completion = (key?: string, body: object = { prompt: 'hello', max_tokens: 2 }) =>
  fetch(`${t!.url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: JSON.stringify(body),
  });

describe('API keys', () => {
  it('answer 401 without a valid key on /v1/*, and leave /health, /live and /metrics open', async () => {
    const log = captureLog('debug');
    t = await startTestRouter({ apiKeys: [{ name: 'team-a', key: KEY_A }], logger: log.logger });
    const none = await completion();
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    expect(await none.json()).toEqual({
      error: { message: 'You did not provide an API key: send it as Authorization: Bearer <key>.', type: 'invalid_request_error', code: 'invalid_api_key' },
    });
    expect((await completion(KEY_B)).status).toBe(401);
    expect((await fetch(`${t.url}/v1/models`)).status).toBe(401);
    expect((await fetch(`${t.url}/v1/models`, { headers: { authorization: `Bearer ${KEY_A}` } })).status).toBe(200);
    for (const path of ['/health', '/live', '/metrics']) expect((await fetch(`${t.url}${path}`)).status).toBe(200);
    const ok = await completion(KEY_A);
    expect(ok.status).toBe(200);
    await ok.text();
    expect(await metricSum(t.url, 'kvroute_api_key_requests_total', 'key="team-a",result="admitted"')).toBe(1); // completions and chat are admitted (and limited); /v1/models only authenticated
    // The per-request debug line names the key; no line anywhere holds a key.
    expect(log.lines().some((l) => l.msg === 'request' && l.key === 'team-a')).toBe(true);
    expect(log.text()).not.toContain(KEY_A);
    expect(await (await fetch(`${t.url}/metrics`)).text()).not.toContain(KEY_A);
  });

  it('limit each key on its own: requests and tokens per minute, 429 with Retry-After', async () => {
    t = await startTestRouter({
      apiKeys: [
        { name: 'small', key: KEY_A, requestsPerMinute: 2 },
        { name: 'tokens', key: KEY_B, tokensPerMinute: 100 },
      ],
    });
    expect((await completion(KEY_A)).status).toBe(200);
    expect((await completion(KEY_A)).status).toBe(200);
    const limited = await completion(KEY_A);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await limited.json()) as { error: { code: string; message: string } }).error).toMatchObject({
      code: 'rate_limit_exceeded',
      message: expect.stringMatching(/^rate limit of key 'small' reached \(2 requests per minute\)/),
    });
    // 'hello' is 5 prompt tokens (byte tokenizer): 5 + 40 = 45 a request, 100 a minute.
    const body = { prompt: 'hello', max_tokens: 40 };
    expect((await completion(KEY_B, body)).status).toBe(200);
    expect((await completion(KEY_B, body)).status).toBe(200);
    const tokens = await completion(KEY_B, body);
    expect(tokens.status).toBe(429);
    expect(((await tokens.json()) as { error: { message: string } }).error.message).toMatch(/\(100 tokens per minute\)/);
    const tooLarge = await completion(KEY_B, { prompt: 'hello', max_tokens: 200 });
    expect(tooLarge.status).toBe(400);
    expect(await metricSum(t.url, 'kvroute_api_key_requests_total', 'key="small",result="rate_limited_requests"')).toBe(1);
    expect(await metricSum(t.url, 'kvroute_api_key_requests_total', 'key="tokens",result="rate_limited_tokens"')).toBe(1);
    expect(await metricSum(t.url, 'kvroute_api_key_tokens_total', 'key="tokens"')).toBe(90);
    // A key's 429 is not the routing layer's backpressure.
    expect(await metricSum(t.url, 'kvroute_backpressure_refusals_total')).toBe(0);
  });
});
