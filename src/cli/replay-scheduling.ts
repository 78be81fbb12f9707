// `kvroute replay`'s scheduling flags: the router queue, priorities, refusing above a cap (the
// server's backpressure) and conditional disaggregation, checked by the routing layer's own
// settings checks so replay and the server accept the same values.
import { conditionalSettings, DEFAULT_CONDITIONAL_DISAGG } from '../routing/prefill/mode.js';
import { checkQueueSettings, DEFAULT_QUEUE_SETTINGS } from '../routing/queue/admission-queue.js';
import { QUEUE_POLICIES } from '../core/vocabulary.js';
import type { ReplayConfig } from '../sim/replay/replay.js';
import { intFlag, UsageError } from './usage.js';

export const SCHEDULING_HELP = `Scheduling (the server's settings of the same names):
  --router-queue-threshold X   hold requests in the router while every worker has more than X x
                        max_num_batched_tokens of prefill booked (default: off)
  --router-queue-policy P      ${QUEUE_POLICIES.join(', ')} (default ${DEFAULT_QUEUE_SETTINGS.policy})
  --router-queue-max-requests N  requests waiting at most per pool, refused beyond (default ${DEFAULT_QUEUE_SETTINGS.maxRequests})
  --router-queue-max-wait-ms MS  refuse a request the queue would hold longer than MS, shed one
                        that waited MS (default: no limit)
  --max-queued-prefill-tokens N  refuse (429) a request when a pool's booked prefill would pass N
  --high-priority-share F      priority 1 for a seeded share F of the requests whose trace line
                        has no priority field (default: none)
  --engine-priority     the router forwards priorities (--forward-priority) and the simulated
                        engines schedule by them (vLLM's --scheduling-policy priority)
  --conditional-disagg  per request, aggregated on the decode worker when remote prefill does not pay
  --disagg-bypass-below N      with it: aggregated below N uncached tokens (default ${DEFAULT_CONDITIONAL_DISAGG.bypassBelowTokens})
  --disagg-above N      with it: always disaggregated from N uncached tokens (default ${DEFAULT_CONDITIONAL_DISAGG.disaggAboveTokens})
`;

export const SCHEDULING_OPTIONS = {
  'router-queue-threshold': { type: 'string' },
  'router-queue-policy': { type: 'string' },
  'router-queue-max-requests': { type: 'string' },
  'router-queue-max-wait-ms': { type: 'string' },
  'max-queued-prefill-tokens': { type: 'string' },
  'high-priority-share': { type: 'string' },
  'engine-priority': { type: 'boolean' },
  'conditional-disagg': { type: 'boolean' },
  'disagg-bypass-below': { type: 'string' },
  'disagg-above': { type: 'string' },
} as const;

type Values = Partial<Record<keyof typeof SCHEDULING_OPTIONS, string | boolean>>;

/** The replay's scheduling options and routing overrides the flags give (undefined: none). */
export function schedulingFromFlags(v: Values, disaggregated: boolean): Pick<ReplayConfig, 'scheduling' | 'routing'> {
  const out: NonNullable<ReplayConfig['scheduling']> = {};
  let routing: ReplayConfig['routing'];
  const str = (k: keyof Values) => (typeof v[k] === 'string' ? (v[k] as string) : undefined);
  const threshold = str('router-queue-threshold');
  const maxWait = str('router-queue-max-wait-ms');
  if (threshold !== undefined || str('router-queue-policy') !== undefined || str('router-queue-max-requests') !== undefined || maxWait !== undefined) {
    if (threshold === undefined)
      throw new UsageError('--router-queue-policy, --router-queue-max-requests and --router-queue-max-wait-ms need --router-queue-threshold');
    const t = Number(threshold);
    const q = { ...DEFAULT_QUEUE_SETTINGS, threshold: threshold.trim() === '' ? NaN : t } as Parameters<typeof checkQueueSettings>[0];
    const policy = str('router-queue-policy');
    if (policy !== undefined) q.policy = policy as typeof q.policy;
    const max = str('router-queue-max-requests');
    if (max !== undefined) q.maxRequests = intFlag(max, '--router-queue-max-requests', 1, 10_000_000);
    if (maxWait !== undefined) q.maxWaitMs = maxWait.trim() === '' ? NaN : Number(maxWait);
    out.routerQueue = { threshold: q.threshold, policy: q.policy, maxRequests: q.maxRequests, maxWaitMs: q.maxWaitMs };
    usage(() => checkQueueSettings(q));
  }
  const cap = str('max-queued-prefill-tokens');
  if (cap !== undefined) routing = { maxQueuedPrefillTokens: intFlag(cap, '--max-queued-prefill-tokens', 1, Number.MAX_SAFE_INTEGER) };
  const share = str('high-priority-share');
  if (share !== undefined) {
    const f = Number(share);
    if (share.trim() === '' || !(f >= 0 && f <= 1)) throw new UsageError(`--high-priority-share must be a number in [0, 1], got ${share}`);
    out.highPriorityShare = f;
  }
  if (v['engine-priority'] === true) out.forwardPriority = true;
  const below = str('disagg-bypass-below');
  const above = str('disagg-above');
  if (v['conditional-disagg'] === true) {
    if (!disaggregated) throw new UsageError('--conditional-disagg needs --prefill and --decode');
    const c: Record<string, unknown> = { enabled: true };
    if (below !== undefined) c.bypassBelowTokens = intFlag(below, '--disagg-bypass-below', 0, Number.MAX_SAFE_INTEGER);
    if (above !== undefined) c.disaggAboveTokens = intFlag(above, '--disagg-above', 1, Number.MAX_SAFE_INTEGER);
    out.conditionalDisagg = usage(() => conditionalSettings(DEFAULT_CONDITIONAL_DISAGG, c));
  } else if (below !== undefined || above !== undefined) {
    throw new UsageError('--disagg-bypass-below and --disagg-above need --conditional-disagg');
  }
  return { scheduling: Object.keys(out).length > 0 ? out : undefined, routing };
}

/** A settings check's TypeError/RangeError as a command-line mistake. */
function usage<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof TypeError || err instanceof RangeError) throw new UsageError(err.message);
    throw err;
  }
}
