// The prefix-heavy workload of the vllm-router comparison, as `vllm bench serve --dataset-name
// prefix_repetition` builds it: a few shared prefixes of a fixed token length, each request one of
// them (in a seeded order, each prefix equally often) plus a suffix of its own, sent open-loop at a
// fixed rate, streamed. The client measures what a user sees: time to first token, and the end.
import { request } from 'undici';
import { loadHfTokenizer } from '../../../src/preprocess/hf-tokenizer.js';
import { promptText } from '../../lib/prompt-text.js';

export interface PrefixWorkload {
  prefixes: number;
  prefixTokens: number;
  suffixTokens: number;
  outputTokens: number;
  requests: number;
  ratePerSecond: number;
}

export const FULL: PrefixWorkload = { prefixes: 16, prefixTokens: 1536, suffixTokens: 128, outputTokens: 16, requests: 80, ratePerSecond: 1 };
export const QUICK: PrefixWorkload = { ...FULL, prefixes: 4, requests: 16 };

/** The prompts, in sending order (the same for every contender and round). */
export async function buildPrefixPrompts(tokenizerDir: string, w: PrefixWorkload): Promise<string[]> {
  const tok = await loadHfTokenizer(tokenizerDir);
  const count = (t: string) => tok.encode(t).length;
  const cut = (text: string, n: number) => tok.decode(tok.encode(text).subarray(0, n));
  const prefixes = Array.from({ length: w.prefixes }, (_, i) => cut(promptText(w.prefixTokens + 16, count, 100 + i), w.prefixTokens));
  const order = Array.from({ length: w.requests }, (_, i) => i % w.prefixes);
  let x = 12345;
  for (let i = order.length - 1; i > 0; i--) {
    x = (x * 1_103_515_245 + 12_345) >>> 0;
    const j = x % (i + 1);
    [order[i], order[j]] = [order[j], order[i]];
  }
  return order.map((p, i) => `${prefixes[p]}\n\n${cut(promptText(w.suffixTokens + 16, count, 10_000 + i), w.suffixTokens)}`);
}

export interface RequestSample {
  status: number;
  ttftMs: number;
  e2eMs: number;
  outputTokens: number;
}

async function one(url: string, model: string, prompt: string, outputTokens: number): Promise<RequestSample> {
  const t0 = performance.now();
  let ttft = Number.NaN;
  let tokens = 0;
  try {
    const res = await request(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model,
        prompt,
        max_tokens: outputTokens,
        temperature: 0,
        ignore_eos: true,
        stream: true,
        stream_options: { include_usage: true },
      }),
    });
    if (res.statusCode !== 200) {
      await res.body.dump();
      return { status: res.statusCode, ttftMs: Number.NaN, e2eMs: performance.now() - t0, outputTokens: 0 };
    }
    let partial = '';
    for await (const chunk of res.body) {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
        const c = JSON.parse(line.slice(6)) as { choices?: Array<{ text?: string }>; usage?: { completion_tokens?: number } | null };
        if (Number.isNaN(ttft) && c.choices?.some((ch) => ch.text)) ttft = performance.now() - t0;
        if (c.usage?.completion_tokens) tokens = c.usage.completion_tokens;
      }
    }
    return { status: 200, ttftMs: ttft, e2eMs: performance.now() - t0, outputTokens: tokens };
  } catch {
    return { status: 0, ttftMs: Number.NaN, e2eMs: performance.now() - t0, outputTokens: 0 };
  }
}

/** Sends every prompt at the workload's rate (open loop) and waits for all; seconds from the first send to the last end. */
export async function runRound(
  url: string,
  model: string,
  prompts: readonly string[],
  w: PrefixWorkload,
): Promise<{ samples: RequestSample[]; seconds: number }> {
  const t0 = performance.now();
  const pending = prompts.map(async (p, i) => {
    const wait = t0 + (i * 1000) / w.ratePerSecond - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    return one(url, model, p, w.outputTokens);
  });
  const samples = await Promise.all(pending);
  return { samples, seconds: (performance.now() - t0) / 1000 };
}
