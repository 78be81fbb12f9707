// `kvroute replay --online --url URL [--url URL2 ...] --trace FILE`: replays a trace against a live
// router, or spreads it over several (router replicas behind no balancer), one request each in turn.
import { writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { hitRateBound } from '../sim/replay/bound.js';
import { replayOnline } from '../sim/replay/online.js';
import { offeredRps } from '../sim/replay/replay.js';
import { summarizeRun } from '../sim/replay/summary.js';
import { loadTrace } from '../sim/replay/trace.js';
import { ProgressLine } from './progress.js';
import { intFlag, UsageError } from './usage.js';

export const HELP = `usage: kvroute replay --online --url URL [--url URL ...] --trace FILE [options]

Sends the trace's requests with their timing to a live OpenAI-compatible router as streamed
/v1/completions with token-id prompts (ignore_eos, max_tokens = the trace's output length), and
measures TTFT, ITL, end-to-end latency and the engines' cached tokens from the client side.
  --url URL         the router (e.g. http://127.0.0.1:8000, what npm start serves); repeat it to
                    spread the requests over several routers, one each in turn (round robin)
  --trace FILE      Mooncake-format JSONL trace (required)
  --speedup S       compress arrivals by S (default 1)
  --limit N         send only the first N requests
  --model NAME      model name (default: the first of GET /v1/models)
  --seed X          seed of the synthesised prompts (default 0)
  --json OUT        write the JSON report
  --md OUT          write the Markdown report

Progress goes to stderr: in place on a terminal, otherwise a plain line every few seconds.
`;

export async function runOnline(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      online: { type: 'boolean' },
      url: { type: 'string', multiple: true },
      trace: { type: 'string' },
      speedup: { type: 'string', default: '1' },
      limit: { type: 'string' },
      model: { type: 'string' },
      seed: { type: 'string', default: '0' },
      json: { type: 'string' },
      md: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  const urls = values.url ?? [];
  if (urls.length === 0) throw new UsageError('--online needs --url URL');
  if (!values.trace) throw new UsageError('--trace FILE is required');
  for (const url of urls) {
    if (!URL.canParse(url)) throw new UsageError(`--url is not a URL: ${url}`);
  }
  if (values.model !== undefined && values.model.trim() === '') throw new UsageError('--model must not be empty');
  const speedup = Number(values.speedup);
  if (!(speedup > 0) || !Number.isFinite(speedup)) throw new UsageError(`--speedup must be a positive number, got ${values.speedup}`);
  const seed = intFlag(values.seed, '--seed', 0, 2 ** 31 - 1);
  let trace = await loadTrace(values.trace);
  if (values.limit) trace = trace.slice(0, intFlag(values.limit, '--limit', 1, Number.MAX_SAFE_INTEGER));

  const progress = new ProgressLine(process.stderr, { keepOnTerminal: true });
  const onProgress = (done: number, total: number, inFlight: number) => {
    const counts = `${done}/${total} done, ${inFlight} in flight`;
    if (!progress.interactive) return progress.update(`replay: ${counts}`);
    const width = 30;
    const filled = Math.round((done / total) * width);
    progress.update(`[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${counts}`);
  };
  const run = await replayOnline({ urls, trace, arrivalScale: speedup, seed, model: values.model, onProgress });
  progress.end();
  const summary = summarizeRun({ records: run.records, loadSpread: Number.NaN, simulatedMs: run.wallMs }, run.wallMs);
  const report = {
    mode: 'online',
    urls,
    trace: values.trace,
    seed,
    arrival_scale: speedup,
    requests: trace.length,
    offered_rps: offeredRps(trace, speedup),
    hit_rate_bound: hitRateBound(trace, 'tokens'),
    hit_rate_bound_blocks: hitRateBound(trace, 'blocks'),
    errors: run.errors,
    first_error: run.firstError,
    wall_s: run.wallMs / 1000,
    policies: { live: summary },
  };
  const fmt = (v: number, d = 1) => (Number.isFinite(v) ? v.toFixed(d) : 'n/a');
  const md = [
    `### Online replay of ${values.trace} against ${urls.join(', ')}${urls.length > 1 ? ' (round robin)' : ''}`,
    '',
    `${trace.length} requests, arrivals x${speedup} (${fmt(report.offered_rps, 2)} req/s offered), ${run.errors} errors, ${summary.refused} refused.`,
    '',
    '| TTFT p50 ms | TTFT p90 ms | TTFT p99 ms | ITL p50 ms | E2E p50 ms | hit rate | bound | req/s |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|',
    `| ${fmt(summary.ttft_ms.p50)} | ${fmt(summary.ttft_ms.p90)} | ${fmt(summary.ttft_ms.p99)} | ${fmt(summary.itl_ms.p50, 2)} | ${fmt(summary.e2e_ms.p50)} | ` +
      `${fmt(summary.hit_rate * 100)}% | ${fmt(report.hit_rate_bound * 100)}% | ${fmt(summary.throughput_rps, 2)} |`,
    '',
  ].join('\n');
  if (values.json) await writeFile(values.json, `${JSON.stringify(report, null, 2)}\n`);
  if (values.md) await writeFile(values.md, md);
  console.log(md);
  if (run.firstError) console.error(`first error: ${run.firstError}`);
  return run.errors > 0 && run.errors === trace.length ? 1 : 0;
}
