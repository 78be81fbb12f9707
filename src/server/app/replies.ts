// The router's small pieces of an answer: JSON replies, the models list, a request's model and
// response id for its metrics and trace, an error tagged with the request id, the drain's cut.
import { HttpError } from '../call/errors.js';
import type { HttpReply } from '../call/call.js';
import type { PreparedRequest } from '../openai/request.js';

/** The 503 of a request cut by a drain that ran out of time. */
export function drainCut(): HttpError {
  return new HttpError(503, 'service_unavailable', 'router_shutting_down', 'the router shut down before this request finished (its drain timeout ran out)', {
    'retry-after': '1',
  });
}

/** Whether `p` settled within `ms`. */
export async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([p.then(() => true as const), expired]);
  } finally {
    clearTimeout(timer);
  }
}

export function json(status: number, value: unknown): HttpReply {
  return { status, headers: { 'content-type': 'application/json' }, body: JSON.stringify(value) };
}

export function modelsList(models: readonly string[]) {
  const created = Math.floor(Date.now() / 1000);
  return { object: 'list', data: models.map((id) => ({ id, object: 'model', created, owned_by: 'kvroute' })) };
}

/** The model label of a request: the engine body's model (one of config.models, so bounded). */
export function modelOf(prepared: PreparedRequest): string {
  const m = prepared.body.model;
  return typeof m === 'string' ? m : 'unknown';
}

/** The answer's id (gen_ai.response.id), when it has one. */
export function responseIdOf(body: unknown): string | undefined {
  const id = (body as { id?: unknown } | null | undefined)?.id;
  return typeof id === 'string' ? id : undefined;
}

/** Tags an error with the request's id, so its error reply echoes it (a generated id included). */
export function withRequestId(err: unknown, requestId: string): unknown {
  if (typeof err === 'object' && err !== null) (err as { requestId?: string }).requestId ??= requestId;
  return err;
}
