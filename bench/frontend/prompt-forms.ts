// The frontend with a real tokenizer (Qwen2.5's tokenizer.json and chat template): the same 1k-token
// prompt sent as token ids, as text, and as a chat request, streamed, to a router configured with
// that tokenizer in front of the instant engine. Per form: requests per second with 64 in flight and
// the router thread's CPU per request (closed loops, the forms in alternating rounds; medians), and
// the latency the router adds at a steady 500 req/s (text and token ids; the instant engine has no
// chat endpoint to compare against).
import type { HfTokenizer } from '../../src/preprocess/hf-tokenizer.js';
import { promptText } from '../lib/prompt-text.js';
import { median } from '../lib/stats.js';
import type { LoadResult } from './loadgen.js';
import { percentile } from '../lib/stats.js';
import { round3 } from './overhead.js';
import { closedLoop, closedLoopWithCpu, measureOverheads, type OverheadMeasure } from './measure.js';
import { compiledRouter } from './compiled-router.js';
import type { World } from './world-process.js';

export const PROMPT_FORMS = ['token ids', 'text', 'chat'] as const;
export type PromptForm = (typeof PROMPT_FORMS)[number];

export interface PromptFormFigure {
  form: PromptForm;
  /** The prompt's tokens as the router hashes them (the rendered chat for chat). */
  prompt_tokens: number;
  concurrency: number;
  /** Closed-loop rounds (the forms alternate); rps and CPU are medians over them. */
  rounds: number;
  requests: number;
  failed: number;
  rps: number;
  round_rps: number[];
  p50_ms: number;
  p99_ms: number;
  router_cpu_us_per_request?: number;
  round_router_cpu_us?: number[];
  /** Added latency at a steady rate (text and token ids). */
  overhead?: OverheadMeasure;
}

export interface PromptFormOptions {
  quick: boolean;
  model: string;
  outputTokens: number;
  /** A HuggingFace model directory (tokenizer.json, tokenizer_config.json). */
  tokenizerDir: string;
  /** The same tokenizer, loaded here (to size the prompt and count the chat's tokens). */
  tokenizer: HfTokenizer;
  log: (line: string) => void;
}

const OVERHEAD_RATE_PER_S = 500;
const SYSTEM = 'You are a helpful assistant.';

export async function measurePromptForms(world: World, o: PromptFormOptions): Promise<PromptFormFigure[]> {
  const { createRouter, listenUws } = await compiledRouter();
  const router = await createRouter({
    port: 0,
    model: o.model,
    tokenizer: { type: 'huggingface', path: o.tokenizerDir },
    blockSize: 16,
    health: { intervalMs: 0 },
    maxBodyBytes: 16 << 20,
    workers: [{ id: 0, role: 'aggregated', kind: 'vllm', baseUrl: world.engineUrl }],
  });
  const server = await listenUws(router, { host: '127.0.0.1', port: 0 });
  try {
    const text = promptText(1024, (t) => o.tokenizer.encode(t).length);
    const ids = o.tokenizer.encode(text);
    const common = { model: o.model, max_tokens: o.outputTokens, stream: true, stream_options: { include_usage: true } };
    const bodies: Record<PromptForm, { path: string; body: string; tokens: number }> = {
      'token ids': { path: '/v1/completions', body: JSON.stringify({ ...common, prompt: Array.from(ids) }), tokens: ids.length },
      text: { path: '/v1/completions', body: JSON.stringify({ ...common, prompt: text }), tokens: ids.length },
      chat: {
        path: '/v1/chat/completions',
        body: JSON.stringify({
          ...common,
          messages: [
            { role: 'system', content: SYSTEM },
            { role: 'user', content: text },
          ],
        }),
        tokens: 0,
      },
    };
    bodies.chat.tokens = o.tokenizer.chatTemplate!.compiled.encodeBody(o.tokenizer.native, Buffer.from(bodies.chat.body))!.tokens.length;
    // Closed loops in alternating rounds (every form once a round, the order rotating), so a
    // stretch of the shared machine's other work moves one round of each form, not one form.
    const rounds = o.quick ? 1 : 5;
    const perRound = o.quick ? 2_000 : 8_000;
    const loads = PROMPT_FORMS.map((form) => ({
      url: server.url,
      path: bodies[form].path,
      body: bodies[form].body,
      concurrency: 64,
      maxMs: o.quick ? 2_000 : 10_000,
    }));
    for (const load of loads) await closedLoop(world, { ...load, requests: o.quick ? 1_000 : 5_000, maxMs: 5_000 });
    const measured = PROMPT_FORMS.map(() => ({ rps: [] as number[], cpu: [] as number[], results: [] as LoadResult[] }));
    for (let r = 0; r < rounds; r++) {
      for (let k = 0; k < PROMPT_FORMS.length; k++) {
        const f = (k + r) % PROMPT_FORMS.length;
        const { r: res, cpuPerRequest } = await closedLoopWithCpu(world, { ...loads[f], requests: perRound });
        measured[f].rps.push(res.rps);
        if (cpuPerRequest !== undefined) measured[f].cpu.push(cpuPerRequest);
        measured[f].results.push(res);
      }
    }
    const figures: PromptFormFigure[] = [];
    for (const [f, form] of PROMPT_FORMS.entries()) {
      const m = measured[f];
      const latencies = Float64Array.from(m.results.flatMap((x) => Array.from(x.latenciesMs))).sort();
      const fig: PromptFormFigure = {
        form,
        prompt_tokens: bodies[form].tokens,
        concurrency: 64,
        rounds,
        requests: m.results.reduce((n, x) => n + x.completed, 0),
        failed: m.results.reduce((n, x) => n + x.failed, 0),
        rps: Math.round(median(m.rps)),
        round_rps: m.rps.map(Math.round),
        p50_ms: round3(percentile(latencies, 50)),
        p99_ms: round3(percentile(latencies, 99)),
        ...(m.cpu.length > 0 ? { router_cpu_us_per_request: Math.round(median(m.cpu) * 10) / 10, round_router_cpu_us: m.cpu.map((c) => Math.round(c)) } : {}),
      };
      figures.push(fig);
    }
    // Added latency of the completions forms, measured in the same alternating rounds.
    const timed = figures.filter((f) => f.form !== 'chat');
    const overheads = await measureOverheads(world, {
      routedUrl: server.url,
      engineUrl: world.engineUrl,
      bodies: timed.map((f) => bodies[f.form].body),
      arrivals: 'uniform',
      requests: o.quick ? 400 : 8_000,
      rounds: o.quick ? 2 : 5,
      warmup: o.quick ? 200 : 1_000,
      ratePerS: OVERHEAD_RATE_PER_S,
    });
    timed.forEach((f, i) => (f.overhead = overheads[i]));
    for (const fig of figures) {
      const m = measured[PROMPT_FORMS.indexOf(fig.form)];
      const failedNote = fig.failed ? `, ${fig.failed} failed: ${m.results.find((x) => x.firstError)?.firstError}` : '';
      o.log(
        `frontend, ${fig.form} prompts (${fig.prompt_tokens} tokens, ${bodies[fig.form].path}, real tokenizer): ${fig.rps} req/s, router CPU ${fig.router_cpu_us_per_request ?? '?'} us/request (rounds ${fig.round_router_cpu_us?.join(', ') ?? '?'})` +
          (fig.overhead
            ? `, added latency at ${OVERHEAD_RATE_PER_S} req/s p50 ${fig.overhead.overhead_p50_ms} ms, p99 ${fig.overhead.overhead_p99_ms} ms (rounds ${fig.overhead.round_overhead_p99_ms.join(', ')})`
            : '') +
          failedNote,
      );
    }
    return figures;
  } finally {
    await server.close();
    await router.close();
  }
}
