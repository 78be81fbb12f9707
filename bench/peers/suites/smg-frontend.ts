// Peer: SMG 1.13.0's cache_aware router (pip, installed on demand) and kvroute's kv policy in front
// of the same two instant engines, text prompts through a real tokenizer (and token ids for
// kvroute), in interleaved rounds (bench/peers/smg/).
import { request } from 'undici';
import { startWorld } from '../../frontend/world-process.js';
import { compilePackage } from '../../lib/compiled.js';
import { realTokenizerDir } from '../../lib/real-tokenizer.js';
import type { BenchContext, BenchSuite, SuiteResult } from '../../lib/suite.js';
import { measureAddedLatency, measureThroughput, type Contender, type FrontendSizes } from '../smg/compare.js';
import { installSmg, SMG_VERSION } from '../smg/install.js';
import { startKvroute } from '../smg/kvroute-router.js';
import { routerNodeFlags } from '../smg/router-flags.js';
import { buildPrompts, completionBody } from '../smg/prompts.js';
import { KV_IDS, KV_TEXT, SMG, smgReport } from '../smg/report.js';
import { startSmg } from '../smg/smg-router.js';
import { ENGINES, MODEL, OUTPUT_TOKENS, PROMPT_TOKENS, PROMPTS } from '../smg/workload.js';

const FULL: FrontendSizes & { prompts: number } = {
  prompts: PROMPTS,
  rounds: 5,
  closedRequests: 10_000,
  warmupRequests: 3_000,
  overheadRounds: 5,
  overheadRequests: 2_500,
};
const QUICK: FrontendSizes & { prompts: number } = {
  prompts: 64,
  rounds: 2,
  closedRequests: 1_500,
  warmupRequests: 500,
  overheadRounds: 2,
  overheadRequests: 500,
};

interface Prepared {
  smg: string;
  tokenizerDir: string;
}

/** Status and error message of one request (SMG's answer to a token-id prompt). */
async function probe(url: string, body: string): Promise<{ status: number; message: string }> {
  const res = await request(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const text = await res.body.text();
  let message = text.slice(0, 300);
  try {
    message = (JSON.parse(text) as { error?: { message?: string } }).error?.message ?? message;
  } catch {
    // a stream or a non-JSON answer: keep its beginning
  }
  return { status: res.statusCode, message: res.statusCode === 200 ? 'served' : message };
}

async function run(ctx: BenchContext, prepared: unknown): Promise<SuiteResult> {
  const { smg: smgBin, tokenizerDir } = prepared as Prepared;
  const sizes = ctx.quick ? QUICK : FULL;
  ctx.progress(`tokenizing ${sizes.prompts} prompts of ${PROMPT_TOKENS} tokens`);
  const prompts = await buildPrompts(tokenizerDir, sizes.prompts, PROMPT_TOKENS);
  const textBodies = prompts.text.map((p) => completionBody(MODEL, p, OUTPUT_TOKENS));
  const idBodies = prompts.ids.map((p) => completionBody(MODEL, p, OUTPUT_TOKENS));
  const nodeFlags = routerNodeFlags();
  const world = await startWorld(OUTPUT_TOKENS, 64, ENGINES);
  const closing: Array<() => Promise<void>> = [() => world.close()];
  try {
    const smg = await startSmg({ smg: smgBin, tokenizerDir, model: MODEL, workers: world.engineUrls, log: ctx.progress });
    closing.unshift(() => smg.close());
    const kv = await startKvroute({ tokenizerDir, model: MODEL, workers: world.engineUrls, nodeFlags });
    closing.unshift(() => kv.close());
    ctx.progress(`kvroute ${kv.url} (pid ${kv.pid}, node ${nodeFlags.join(' ') || 'without flags'}) routes to ${world.engineUrls.join(', ')}`);
    const tokenIdProbe = { smg: await probe(smg.url, idBodies[0]), kvroute: { status: (await probe(kv.url, idBodies[0])).status } };
    ctx.progress(`a token-id prompt: SMG ${tokenIdProbe.smg.status} (${tokenIdProbe.smg.message}), kvroute ${tokenIdProbe.kvroute.status}`);
    for (const [name, url, body] of [
      [SMG, smg.url, textBodies[0]],
      [KV_TEXT, kv.url, textBodies[0]],
      [KV_IDS, kv.url, idBodies[0]],
    ] as const) {
      const p = await probe(url, body);
      if (p.status !== 200) throw new Error(`${name} does not serve the benchmark's requests: ${p.status} ${p.message}`);
    }
    const contenders: Contender[] = [
      { name: SMG, url: smg.url, pid: smg.pid, bodies: textBodies, direct: 'direct-text' },
      { name: KV_TEXT, url: kv.url, pid: kv.pid, bodies: textBodies, direct: 'direct-text' },
      { name: KV_IDS, url: kv.url, pid: kv.pid, bodies: idBodies, direct: 'direct-ids' },
    ];
    const directs = [
      { name: 'direct-text', url: world.engineUrl, bodies: textBodies },
      { name: 'direct-ids', url: world.engineUrl, bodies: idBodies },
    ];
    const throughput = await measureThroughput(world, contenders, sizes, ctx.progress);
    const added = await measureAddedLatency(world, contenders, directs, sizes, ctx.progress);
    return smgReport({
      smgVersion: SMG_VERSION,
      engines: ENGINES,
      promptTokens: prompts.meanTokens,
      prompts: sizes.prompts,
      outputTokens: OUTPUT_TOKENS,
      routerNodeFlags: nodeFlags,
      throughput,
      added,
      tokenIdProbe,
    });
  } finally {
    for (const close of closing) await close();
  }
}

export const suite: BenchSuite = {
  name: 'smg-frontend',
  title: `Peer: SMG ${SMG_VERSION} cache_aware and kvroute kv in front of the same engines`,
  order: 20,
  async prepare(ctx): Promise<Prepared> {
    await compilePackage(ctx.progress);
    return { smg: await installSmg(ctx.progress), tokenizerDir: realTokenizerDir() };
  },
  run,
};
