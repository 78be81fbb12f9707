// Peer: Dynamo's offline replay (ai-dynamo 1.6.1 wheels, installed on demand) next to
// `kvroute replay`, on the synthetic Mooncake trace, per engine setting (block size and cache
// blocks, the same for both) and policy, in alternating rounds.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadTrace } from '../../../src/sim/replay/trace.js';
import type { BenchContext, BenchSuite, SuiteResult } from '../../lib/suite.js';
import { cachePath } from '../cache.js';
import { compareReplays, REPLAY_WORKERS } from '../replay/compare.js';
import { DynamoReplay, installDynamoReplay } from '../replay/peer.js';
import { replayReport } from '../replay/report.js';
import { REPLAY_SETTINGS } from '../replay/settings.js';

const TRACE = 'synthetic_trace.jsonl';
/** The repository's copy of the trace. */
const TRACE_DIRS = ['../../../traces/'].map((d) => fileURLToPath(new URL(d, import.meta.url)));

function traceFile(): string {
  const found = TRACE_DIRS.map((d) => d + TRACE).find((f) => existsSync(f));
  if (!found) throw new Error(`the replay comparison needs ${TRACE} (Mooncake's synthetic trace) in one of: ${TRACE_DIRS.join(', ')}`);
  return found;
}

async function run(ctx: BenchContext, python: unknown): Promise<SuiteResult> {
  let file = traceFile();
  let trace = await loadTrace(file);
  if (ctx.quick) {
    // The first 300 requests, in a file of their own for Dynamo.
    const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean).slice(0, 300);
    file = cachePath('synthetic_trace.first-300.jsonl');
    writeFileSync(file, `${lines.join('\n')}\n`);
    trace = trace.slice(0, 300);
  }
  const peer = await DynamoReplay.start(python as string, file, REPLAY_WORKERS);
  try {
    const groups = await compareReplays(trace, peer, REPLAY_SETTINGS, ctx.quick ? 2 : 5, ctx.progress);
    return replayReport({ trace: ctx.quick ? `the first 300 requests of ${TRACE}` : TRACE, requests: trace.length, groups });
  } finally {
    await peer.close();
  }
}

export const suite: BenchSuite = {
  name: 'dynamo-replay',
  title: "Peer: Dynamo's offline replay (ai-dynamo 1.6.1) and kvroute replay",
  order: 30,
  prepare: (ctx) => installDynamoReplay(ctx.progress),
  run,
};
