// `kvroute replay`: replays a Mooncake-format trace offline in virtual time (the default), or
// online against a live router (--online --url).
import { writeFile } from 'node:fs/promises';
import { ENGINE_KINDS, type EngineKind } from '../engines/types.js';
import { parseArgs } from 'node:util';
import { replayMarkdown } from '../sim/replay/markdown.js';
import { isReplayPolicy, REPLAY_POLICIES, type ReplayPolicy } from '../sim/replay/policies.js';
import { runReplay, sweepLoads, type ReplayConfig } from '../sim/replay/replay.js';
import { loadTrace } from '../sim/replay/trace.js';
import { ProgressLine } from './progress.js';
import { bandwidthFlag, intFlag, UsageError } from './usage.js';
import { SCHEDULING_HELP, SCHEDULING_OPTIONS, schedulingFromFlags } from './replay-scheduling.js';

export const HELP = `usage: kvroute replay --trace FILE [options]

Offline (default): a discrete-event simulation of a fleet of simulated engines in virtual time,
with kvroute's own router (PrefillRouter, as the server runs it) deciding.
  --trace FILE          Mooncake-format JSONL trace (required)
  --workers N           aggregated workers (default 4)
  --prefill P --decode D  disaggregated: P prefill and D decode workers instead
  --handoff STYLE       prefill -> decode handoff of a disaggregated fleet: vllm (default), sglang
                        or trtllm (vLLM and TensorRT-LLM hand off after the prefill; SGLang runs
                        both legs at once, the decode waiting for the prefill's KV)
  --policy NAME         repeatable; one of ${REPLAY_POLICIES.join(', ')} (default: all)
  --block-size B        router and engine block size, must divide 512 (default 16)
  --kv-blocks K         KV cache blocks per worker (default 65536)
  --offload-blocks N    a CPU offload tier of N blocks per worker: evicted GPU blocks move there
                        (KV events with medium CPU) and are reloaded instead of recomputed (default 0)
  --offload-bandwidth B reload bandwidth of the CPU tier, bytes/s (default 25e9: PCIe 4.0 x16)
  --no-lower-tiers      the router ignores the blocks engines report on their CPU tiers
  --speedup S           compress arrivals by S (default 1)
  --sweep               also run a load sweep: arrivals x1, x1.26, x1.59, x2, x2.52 ... until every policy saturates
  --sweep-max M         largest compression of the sweep (default 64)
  --limit N             replay only the first N requests
  --seed X              seed of prompts, routing ties and engines (default 0)
  --json OUT            write the JSON report
  --md OUT              write the Markdown report
${SCHEDULING_HELP}Online:
  --online --url URL    send the trace to a live router (see kvroute replay --online --help)

Progress goes to stderr: in place on a terminal, otherwise a plain line every few seconds.
`;

/** --online anywhere on the command line selects the online replay, its flags and its help. */
function isOnline(argv: string[]): boolean {
  const { tokens } = parseArgs({ args: argv, strict: false, tokens: true, options: { online: { type: 'boolean' } } });
  return tokens.some((t) => t.kind === 'option' && t.name === 'online');
}

const isEngineKind = (v: string): v is EngineKind => (ENGINE_KINDS as readonly string[]).includes(v);

export async function run(argv: string[]): Promise<number> {
  if (isOnline(argv)) {
    const { runOnline } = await import('./replay-online.js');
    return runOnline(argv);
  }
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      trace: { type: 'string' },
      workers: { type: 'string', default: '4' },
      prefill: { type: 'string' },
      decode: { type: 'string' },
      handoff: { type: 'string' },
      policy: { type: 'string', multiple: true },
      'block-size': { type: 'string', default: '16' },
      'kv-blocks': { type: 'string', default: '65536' },
      'offload-blocks': { type: 'string' },
      'offload-bandwidth': { type: 'string' },
      'no-lower-tiers': { type: 'boolean', default: false },
      speedup: { type: 'string', default: '1' },
      sweep: { type: 'boolean', default: false },
      'sweep-max': { type: 'string', default: '64' },
      limit: { type: 'string' },
      seed: { type: 'string', default: '0' },
      json: { type: 'string' },
      md: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
      ...SCHEDULING_OPTIONS,
    },
  });
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  if (!values.trace) throw new UsageError('--trace FILE is required');
  const workers = intFlag(values.workers, '--workers', 1, 1024);
  if ((values.prefill === undefined) !== (values.decode === undefined)) throw new UsageError('--prefill and --decode go together');
  const disaggregated =
    values.prefill === undefined ? undefined : { prefill: intFlag(values.prefill, '--prefill', 1, 1024), decode: intFlag(values.decode, '--decode', 1, 1024) };
  const handoff = values.handoff ?? 'vllm';
  if (!isEngineKind(handoff)) throw new UsageError(`unknown --handoff '${handoff}'; one of ${ENGINE_KINDS.join(', ')}`);
  if (values.handoff !== undefined && !disaggregated) throw new UsageError('--handoff needs --prefill and --decode');
  const blockSize = intFlag(values['block-size'], '--block-size', 1, 512);
  if (512 % blockSize !== 0) throw new UsageError(`--block-size must divide 512 (the traces' block), got ${blockSize}`);
  const kvBlocks = intFlag(values['kv-blocks'], '--kv-blocks', 1, 1 << 30);
  const { engine, lowerTiers } = offloadFromFlags(values['offload-blocks'], values['offload-bandwidth'], values['no-lower-tiers'] === true);
  const seed = intFlag(values.seed, '--seed', 0, 2 ** 31 - 1);
  const speedup = Number(values.speedup);
  if (!(speedup > 0) || !Number.isFinite(speedup)) throw new UsageError(`--speedup must be a positive number, got ${values.speedup}`);
  const policies = (values.policy ?? [...REPLAY_POLICIES]).map((p) => {
    if (!isReplayPolicy(p)) throw new UsageError(`unknown --policy '${p}'; one of ${REPLAY_POLICIES.join(', ')}`);
    return p as ReplayPolicy;
  });
  let trace = await loadTrace(values.trace);
  if (values.limit) trace = trace.slice(0, intFlag(values.limit, '--limit', 1, Number.MAX_SAFE_INTEGER));
  const sweepMax = intFlag(values['sweep-max'], '--sweep-max', 1, 4096);
  const sweepScales = values.sweep ? sweepLoads(speedup, sweepMax) : undefined;
  const { scheduling, routing } = schedulingFromFlags(values, disaggregated !== undefined);

  const progress = new ProgressLine(process.stderr);
  const report = await runReplay({
    trace,
    traceName: values.trace,
    workers,
    disaggregated,
    handoff,
    policies,
    blockSize,
    kvBlocks,
    engine,
    lowerTiers,
    arrivalScale: speedup,
    seed,
    sweepScales,
    scheduling,
    routing,
    onProgress: (m) => progress.update(m),
  });
  progress.end();
  const md = replayMarkdown(report);
  if (values.json) await writeFile(values.json, `${JSON.stringify(report, null, 2)}\n`);
  if (values.md) await writeFile(values.md, md);
  console.log(md);
  return 0;
}

/** The engines' CPU tier from --offload-blocks and --offload-bandwidth (checked as the engine checks them), and the router's use of it. */
export function offloadFromFlags(
  blocks: string | undefined,
  bandwidth: string | undefined,
  noLowerTiers: boolean,
): Pick<ReplayConfig, 'engine' | 'lowerTiers'> {
  if (blocks === undefined) {
    if (bandwidth !== undefined || noLowerTiers) throw new UsageError('--offload-bandwidth and --no-lower-tiers need --offload-blocks');
    return {};
  }
  const engine: NonNullable<ReplayConfig['engine']> = { offloadBlocks: intFlag(blocks, '--offload-blocks', 0, 1 << 28) };
  if (bandwidth !== undefined) engine.offloadBandwidthBytesPerS = bandwidthFlag(bandwidth, '--offload-bandwidth');
  return { engine, lowerTiers: noLowerTiers ? false : undefined };
}
