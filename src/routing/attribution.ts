// Which prefill worker served a request, for the response headers and metrics: the router's own
// booking first (it knows), then the direct target the client pinned, then what the engine says
// in its answer (`worker_id.prefill_worker_id`, Dynamo's payload), whose rank is ignored when it
// is out of the worker's range.
import { isPlainObject } from '../engines/handoff/common.js';

export interface WorkerRef {
  worker: number;
  dpRank?: number;
}

export function attributePrefillWorker(
  booked: WorkerRef | undefined,
  direct: WorkerRef | undefined,
  payload: unknown,
  dpSizeOf: (worker: number) => number | undefined,
): WorkerRef | undefined {
  if (booked) return booked;
  if (direct) return direct;
  return fromPayload(payload, dpSizeOf);
}

function fromPayload(payload: unknown, dpSizeOf: (worker: number) => number | undefined): WorkerRef | undefined {
  if (!isPlainObject(payload)) return undefined;
  const ids = isPlainObject(payload.worker_id)
    ? payload.worker_id
    : isPlainObject(payload.nvext) && isPlainObject(payload.nvext.worker_id)
      ? payload.nvext.worker_id
      : undefined;
  if (!ids) return undefined;
  const worker = ids.prefill_worker_id;
  if (typeof worker !== 'number' || !Number.isSafeInteger(worker) || worker < 0) return undefined;
  const rank = ids.prefill_dp_rank;
  const size = dpSizeOf(worker);
  if (typeof rank === 'number' && Number.isInteger(rank) && rank >= 0 && size !== undefined && rank < size) return { worker, dpRank: rank };
  return { worker };
}
