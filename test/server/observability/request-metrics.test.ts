// The request metrics operators look for, end to end: duration of streamed and non-streamed
// requests, time per output token of streams, errors by code, all by model.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODEL, metricSamples, metricSum, prompt, startTestRouter, type TestRouter } from '../helpers/router.js';

let t: TestRouter;
beforeAll(async () => {
  t = await startTestRouter({ decode: 1 });
});
afterAll(async () => {
  await t?.close();
});

async function complete(body: object | string, headers: Record<string, string> = {}): Promise<number> {
  const res = await fetch(`${t.url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  await res.text();
  return res.status;
}

const series = (labels: string) => `route="/v1/completions",model="${MODEL}",${labels}`;

describe('request metrics by model', () => {
  it('observe the end-to-end duration of non-streamed and streamed requests apart', async () => {
    const before = {
      json: await metricSum(t.url, 'kvroute_request_duration_seconds_count', series('stream="false"')),
      streamed: await metricSum(t.url, 'kvroute_request_duration_seconds_count', series('stream="true"')),
    };
    expect(await complete({ model: MODEL, prompt: prompt(30, 1), max_tokens: 3 })).toBe(200);
    expect(await complete({ model: MODEL, prompt: prompt(30, 2), max_tokens: 3 })).toBe(200);
    expect(await complete({ model: MODEL, prompt: prompt(30, 3), max_tokens: 5, stream: true })).toBe(200);
    expect(await metricSum(t.url, 'kvroute_request_duration_seconds_count', series('stream="false"'))).toBe(before.json + 2);
    expect(await metricSum(t.url, 'kvroute_request_duration_seconds_count', series('stream="true"'))).toBe(before.streamed + 1);
    const sum = await metricSum(t.url, 'kvroute_request_duration_seconds_sum', series('stream="true"'));
    expect(sum).toBeGreaterThan(0);
    // Every observation falls in a bucket: the +Inf bucket counts them all.
    expect(await metricSum(t.url, 'kvroute_request_duration_seconds_bucket', `le="+Inf",${series('stream="false"')}`)).toBe(before.json + 2);
    expect(await metricSum(t.url, 'kvroute_requests_total', series('status="200"'))).toBe(before.json + before.streamed + 3);
  });

  it('observe the time per output token of streams, and TTFT and ITL by model', async () => {
    const before = await metricSamples(t.url, 'kvroute_time_per_output_token_seconds_count', `model="${MODEL}"`);
    const ttft = await metricSum(t.url, 'kvroute_time_to_first_token_seconds_count', `model="${MODEL}"`);
    expect(await complete({ model: MODEL, prompt: prompt(30, 4), max_tokens: 6, stream: true })).toBe(200);
    // A one-token stream has no pace between tokens: not observed.
    expect(await complete({ model: MODEL, prompt: prompt(30, 5), max_tokens: 1, stream: true })).toBe(200);
    // Nor is a non-streamed one.
    expect(await complete({ model: MODEL, prompt: prompt(30, 6), max_tokens: 6 })).toBe(200);
    expect((await metricSamples(t.url, 'kvroute_time_per_output_token_seconds_count', `model="${MODEL}"`)).sum).toBe(before.sum + 1);
    expect(await metricSum(t.url, 'kvroute_time_per_output_token_seconds_sum', `model="${MODEL}"`)).toBeGreaterThan(0);
    expect(await metricSum(t.url, 'kvroute_time_to_first_token_seconds_count', `model="${MODEL}"`)).toBe(ttft + 2);
    expect(await metricSum(t.url, 'kvroute_inter_token_latency_seconds_count', `model="${MODEL}"`)).toBeGreaterThanOrEqual(5);
  });

  it('count errors by status and OpenAI error code, the model unknown when the body named none', async () => {
    expect(await complete({ model: 'other-model', prompt: 'x' })).toBe(404);
    expect(await complete('{"prompt": ')).toBe(400);
    expect(await complete({ model: MODEL, prompt: 'x' }, { 'x-request-id': 'bad id' })).toBe(400);
    t.fleet.sim[0].faults.failNext(1);
    expect(await complete({ model: MODEL, prompt: prompt(30, 7), max_tokens: 2 })).toBe(502);
    t.fleet.sim[0].faults.failNext(1);
    expect(await complete({ model: MODEL, prompt: prompt(30, 8), max_tokens: 2, stream: true })).toBe(502);
    const errors = (labels: string) => metricSum(t.url, 'kvroute_request_errors_total', `route="/v1/completions",${labels}`);
    expect(await errors('model="unknown",status="404",code="model_not_found"')).toBe(1);
    expect(await errors('model="unknown",status="400",code="invalid_json"')).toBe(1);
    expect(await errors('model="unknown",status="400",code="invalid_request_id"')).toBe(1);
    expect(await errors(`model="${MODEL}",status="502",code="engine_failed"`)).toBe(2);
    expect(await metricSum(t.url, 'kvroute_requests_total', `route="/v1/completions",model="${MODEL}",status="502"`)).toBe(2);
    // Errors are not answers: no duration observed for them.
    const durations = await metricSum(t.url, 'kvroute_request_duration_seconds_count', `model="unknown"`);
    expect(durations).toBe(0);
  });

  it('leave routes without a model unlabelled', async () => {
    await (await fetch(`${t.url}/health`)).text();
    const text = await (await fetch(`${t.url}/metrics`)).text();
    expect(text).toMatch(/^kvroute_requests_total\{route="\/health",model="",status="200"\} \d+$/m);
  });
});
