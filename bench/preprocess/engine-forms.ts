// What each form of a prompt costs the engine that receives it: the same completions request with
// the prompt as its text or as token ids (the JSON text the router writes), read by the bench's
// instant engine (JSON.parse), by the simulated worker (src/sim/worker: parse, check, byte-tokenize
// a text) and by an engine that tokenizes a text with the model's real tokenizer (parse, then the
// native tokenizer). Timed per call in alternating rounds; medians.
import { tokenIdsJsonText } from '../../src/core/prompt-scan.js';
import type { TextTokenizer } from '../../src/preprocess/types.js';
import { parseInferenceRequest, parseJsonBody } from '../../src/sim/worker/openai.js';
import { median } from '../lib/stats.js';
import { MODEL } from './requests.js';

export const ENGINES = ['instant engine', 'simulated worker', 'real tokenizer'] as const;
export type EngineKind = (typeof ENGINES)[number];

export interface EngineFormCost {
  engine: EngineKind;
  /** The prompt's size as asked (1024, 8192); its ids may be a few more. */
  size: number;
  tokens: number;
  textUs: number;
  idsUs: number;
}

/** Per-call medians of reading `text` as a text prompt and as ids, for each engine kind. */
export function engineFormCosts(size: number, text: string, tokenizer: TextTokenizer, o: { rounds: number; calls: number }): EngineFormCost[] {
  const ids = tokenizer.encode(text);
  const common = `"model":"${MODEL}","max_tokens":4,"stream":true`;
  const textBody = Buffer.from(`{${common},"prompt":${JSON.stringify(text)}}`);
  const idsBody = Buffer.from(`{${common},"prompt":${tokenIdsJsonText(ids)}}`);
  const read: Record<EngineKind, (body: Buffer) => number> = {
    'instant engine': (body) => {
      const json = JSON.parse(body.toString()) as { prompt: unknown[] | string };
      return json.prompt.length;
    },
    'simulated worker': (body) => parseInferenceRequest('completions', parseJsonBody(body), { defaultChatMaxTokens: 16 }).promptTokens.length,
    'real tokenizer': (body) => {
      const prompt = (parseJsonBody(body) as { prompt: unknown }).prompt;
      return typeof prompt === 'string' ? tokenizer.encode(prompt).length : Uint32Array.from(prompt as number[]).length;
    },
  };
  return ENGINES.map((engine) => {
    const textRounds: number[] = [];
    const idsRounds: number[] = [];
    for (let r = 0; r < o.rounds; r++) {
      // Alternate which form goes first.
      const order = r % 2 === 0 ? [textBody, idsBody] : [idsBody, textBody];
      for (const body of order) {
        const t0 = performance.now();
        let sink = 0;
        for (let i = 0; i < o.calls; i++) sink += read[engine](body);
        const us = ((performance.now() - t0) * 1000) / o.calls;
        if (sink === 0) throw new Error('the engine read no prompt');
        (body === textBody ? textRounds : idsRounds).push(us);
      }
    }
    return { engine, size, tokens: ids.length, textUs: median(textRounds), idsUs: median(idsRounds) };
  });
}
