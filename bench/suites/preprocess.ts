// Preprocessing of text and chat requests with a real tokenizer (Qwen2.5's tokenizer.json and chat
// template, bench/lib/real-tokenizer.ts), time per stage: parse, template, tokenize, hash, decide
// (match + select + book) and the engine body, for 1k and 8k-token prompts. The native path (the
// router's) beside the JavaScript one it replaced (bench/reference/js-preprocess.ts), in
// alternating rounds of the same run; medians. And what each prompt form (text, token ids) costs
// the engine that receives it.
import { KvIndexer } from '../../src/core/indexer.js';
import { RoutingCore } from '../../src/core/routing-core.js';
import { loadHfTokenizer } from '../../src/preprocess/hf-tokenizer.js';
import type { Preprocessor } from '../../src/server/openai/request.js';
import { engineFormCosts, type EngineFormCost } from '../preprocess/engine-forms.js';
import { benchRequest, MODEL, type BenchRequest, type RequestKind } from '../preprocess/requests.js';
import { jsRequest, nativeRequest, STAGES, type Stage, type StageTimes } from '../preprocess/stages.js';
import { formatValue } from '../lib/format.js';
import { REAL_TOKENIZER_PACKAGE, realTokenizerDir } from '../lib/real-tokenizer.js';
import { promptText } from '../lib/prompt-text.js';
import { median } from '../lib/stats.js';
import type { BenchContext, BenchSuite, Figure, SuiteResult } from '../lib/suite.js';
import { barChart } from '../lib/svg.js';
import { JsPreprocess } from '../reference/js-preprocess.js';

const SIZES = [1024, 8192];
const KINDS: RequestKind[] = ['text', 'chat'];
const BLOCK_SIZE = 16;

interface Sizes {
  rounds: number;
  /** Requests per round, per path and prompt size. */
  native: Record<number, number>;
  js: Record<number, number>;
  engineCalls: Record<number, number>;
}

const FULL: Sizes = { rounds: 5, native: { 1024: 2_000, 8192: 400 }, js: { 1024: 100, 8192: 12 }, engineCalls: { 1024: 2_000, 8192: 300 } };
const QUICK: Sizes = { rounds: 2, native: { 1024: 200, 8192: 40 }, js: { 1024: 10, 8192: 2 }, engineCalls: { 1024: 200, 8192: 30 } };

interface Measured {
  kind: RequestKind;
  tokens: number;
  /** Per stage: the median over rounds of each round's median. */
  native: StageTimes;
  js: StageTimes;
  samples: { native: number; js: number };
}

async function run(ctx: BenchContext): Promise<SuiteResult> {
  const sizes = ctx.quick ? QUICK : FULL;
  ctx.progress(`loading the real tokenizer (${REAL_TOKENIZER_PACKAGE})`);
  const dir = realTokenizerDir();
  const hf = await loadHfTokenizer(dir);
  const pre: Preprocessor = { tokenizer: hf, chatTemplate: hf.chatTemplate!, models: [MODEL] };
  const js = new JsPreprocess(dir, hf.specialTokens);
  const core = new RoutingCore(new KvIndexer({ blockSize: BLOCK_SIZE }), { blockSize: BLOCK_SIZE, seed: 1 });
  core.setWorkers(Array.from({ length: 4 }, (_, w) => ({ worker: w, kvCapacityBlocks: 100_000 })));
  const count = (text: string) => hf.encode(text).length;

  const results: Measured[] = [];
  for (const tokens of SIZES) {
    for (const kind of KINDS) {
      const req = benchRequest(kind, tokens, count);
      ctx.progress(`${kind} requests, ${tokens / 1024}k tokens`);
      results.push(measure(req, pre, js, core, sizes));
    }
  }
  ctx.progress('what each prompt form costs an engine');
  const forms: EngineFormCost[] = SIZES.flatMap((tokens) =>
    engineFormCosts(tokens, promptText(tokens, count), hf, { rounds: sizes.rounds * 2 + 1, calls: sizes.engineCalls[tokens] }),
  );
  const totals = core.totals();
  if (totals.requests !== 0) throw new Error(`bookings leaked: ${JSON.stringify(totals)}`);
  return report(results, forms);
}

function measure(req: BenchRequest, pre: Preprocessor, js: JsPreprocess, core: RoutingCore, sizes: Sizes): Measured {
  const rounds = { native: [] as StageTimes[][], js: [] as StageTimes[][] };
  let id = 0;
  const nativeRound = (n: number) => Array.from({ length: n }, () => nativeRequest(req, pre, core, `n${id++}`));
  const jsRound = (n: number) => Array.from({ length: n }, () => jsRequest(req, js, core, `j${id++}`));
  // Warm up both (JIT, the tokenizers' caches).
  nativeRound(Math.ceil(sizes.native[req.tokens] / 4));
  jsRound(Math.max(1, Math.ceil(sizes.js[req.tokens] / 4)));
  for (let r = 0; r < sizes.rounds; r++) {
    (globalThis as { gc?: () => void }).gc?.();
    if (r % 2 === 0) {
      rounds.native.push(nativeRound(sizes.native[req.tokens]));
      rounds.js.push(jsRound(sizes.js[req.tokens]));
    } else {
      rounds.js.push(jsRound(sizes.js[req.tokens]));
      rounds.native.push(nativeRound(sizes.native[req.tokens]));
    }
  }
  return {
    kind: req.kind,
    tokens: req.tokens,
    native: medianOfRounds(rounds.native),
    js: medianOfRounds(rounds.js),
    samples: { native: sizes.rounds * sizes.native[req.tokens], js: sizes.rounds * sizes.js[req.tokens] },
  };
}

function medianOfRounds(rounds: StageTimes[][]): StageTimes {
  const out = {} as StageTimes;
  for (const stage of STAGES) out[stage] = median(rounds.map((round) => median(round.map((t) => t[stage]))));
  return out;
}

const label = (m: { kind: RequestKind; tokens: number }) => `${m.kind === 'chat' ? 'chat request' : 'text prompt'}, ${m.tokens / 1024}k tokens`;
const us = (v: number) => (v === 0 ? '-' : formatValue(v, 'us'));

function report(results: Measured[], forms: EngineFormCost[]): SuiteResult {
  const figures: Figure[] = [];
  for (const m of results) {
    figures.push({
      name: `preprocessing + routing per request, ${label(m)} (parse, template, tokenize, hash, decide, engine body)`,
      value: m.native.total,
      unit: 'us',
      better: 'lower',
      reference: { name: 'JavaScript (JSON.parse, @huggingface/jinja, @huggingface/tokenizers, ids.join)', value: m.js.total },
      headline: m.tokens === 1024,
    });
    for (const stage of ['parse', 'template', 'tokenize', 'engine body'] as Stage[]) {
      if (stage === 'template' && m.kind !== 'chat') continue;
      figures.push({
        name: `${stage}, ${label(m)}`,
        value: m.native[stage],
        unit: 'us',
        better: 'lower',
        reference: { name: 'JavaScript', value: m.js[stage] },
      });
    }
  }
  for (const f of forms) {
    figures.push({
      name: `${f.engine} reading a ${f.size / 1024}k-token completions prompt sent as token ids`,
      value: f.idsUs,
      unit: 'us',
      better: 'lower',
      reference: { name: 'the same prompt sent as text', value: f.textUs },
    });
  }
  const rows = results.flatMap((m) => [
    `| ${label(m)} | native | ${STAGES.map((s) => us(m.native[s])).join(' | ')} | ${m.samples.native} |`,
    `| | JavaScript | ${STAGES.map((s) => us(m.js[s])).join(' | ')} | ${m.samples.js} |`,
  ]);
  const formRows = forms.map((f) => `| ${f.engine} | ${f.tokens} | ${us(f.textUs)} | ${us(f.idsUs)} |`);
  const markdown = [
    'Requests as a client sends them (a completions body with a text prompt; a chat body with a system and',
    "a user message), Qwen2.5's tokenizer.json and chat template, through the router's preprocessing",
    '(src/server/openai/request.ts: the body read, rendered and tokenized in one native call) and through',
    'the JavaScript path it replaced (bench/reference/js-preprocess.ts), each followed by the same routing',
    "decision (4 workers). Medians over alternating rounds of each round's median. parse: the body read",
    '(natively, then JSON.parse of the rest; JavaScript: JSON.parse and the message checks); template and',
    'tokenize: timed inside the native call; hash and decide (match + select + book): timed inside the',
    'routing core; engine body: the completions body with the prompt as token ids, serialised.',
    '',
    `| request | path | ${STAGES.join(' | ')} | requests |`,
    `|---|---|${STAGES.map(() => '---').join('|')}|---|`,
    ...rows,
    '',
    'What each prompt form costs the engine that reads it (per request, medians of alternating rounds):',
    '',
    '| engine | tokens | prompt as text | prompt as token ids |',
    '|---|---|---|---|',
    ...formRows,
    '',
    "Engines get token ids: their KV blocks then hash exactly as the router's (an engine tokenizing a",
    'completions text adds its special tokens, and a BOS-adding model would shift every block), and an',
    'engine that really tokenizes spends as much or more on the text as on reading the ids; text is',
    'cheaper only for engines that do not tokenize it (the instant engine, the byte-tokenizing simulator).',
  ].join('\n');
  const chart = barChart({
    title: 'Preprocessing + routing per request (medians)',
    categories: results.map(label),
    series: [
      { name: 'native', values: results.map((m) => m.native.total) },
      { name: 'JavaScript', values: results.map((m) => m.js.total) },
    ],
    yLabel: 'microseconds',
    logY: true,
  });
  return {
    figures,
    sections: [{ title: 'Preprocessing: time per stage', markdown }],
    charts: [{ name: 'per-request', title: 'Preprocessing + routing per request', svg: chart }],
    data: { results, engine_forms: forms },
  };
}

export const suite: BenchSuite = { name: 'preprocess', title: 'Preprocessing of text and chat requests (real tokenizer)', order: 55, run };
