// The admin API under /admin: list, add, drain, activate and remove workers at runtime, and read
// or change the scheduling settings (scheduling.ts). With a
// configured token every call needs `Authorization: Bearer <token>`; without one, only loopback
// peers are answered (the router may listen on a public interface, its admin API must not:
// `kvroute serve` then serves it on a loopback listener of its own, see app/start.ts).
import { createHash, timingSafeEqual } from 'node:crypto';
import { parseWorkerConfig } from '../config/config.js';
import { HttpError, notFound } from '../call/errors.js';
import { isLoopback, type HttpCall, type HttpReply } from '../call/call.js';
import { DiscoveredWorkerError, UnknownWorkerError, WorkerExistsError, type WorkerRegistry } from './registry.js';
import { handleScheduling, SCHEDULING_PATHS, type SchedulingPort } from './scheduling.js';

export interface AdminDeps {
  registry: WorkerRegistry;
  scheduling: SchedulingPort;
  token?: string;
  /** Reads the request body as a JSON object (the router's bounded reader). */
  readJson(call: HttpCall): Promise<Record<string, unknown>>;
}

const WORKER_PATH = /^\/admin\/workers\/(\d{1,16})(\/(drain|activate))?$/;

export function checkAdminAccess(call: HttpCall, token: string | undefined): void {
  if (token === undefined) {
    if (!isLoopback(call.remoteAddress)) {
      throw new HttpError(403, 'permission_error', 'admin_loopback_only', 'the admin API answers loopback clients only (configure an admin token to open it)');
    }
    return;
  }
  const header = call.headers.authorization ?? '';
  const given = header.startsWith('Bearer ') ? header.slice(7) : '';
  // Compare digests: constant time, and the lengths never leak.
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(token).digest();
  if (given === '' || !timingSafeEqual(a, b)) {
    throw new HttpError(401, 'authentication_error', 'invalid_admin_token', 'missing or wrong bearer token for the admin API', {
      'www-authenticate': 'Bearer',
    });
  }
}

export async function handleAdmin(call: HttpCall, path: string, deps: AdminDeps): Promise<HttpReply> {
  checkAdminAccess(call, deps.token);
  const { registry } = deps;
  try {
    const scheduling = SCHEDULING_PATHS.get(path);
    if (scheduling !== undefined) {
      if (call.method !== 'GET' && call.method !== 'PUT') throw methodNotAllowed(call.method, path);
      const body = call.method === 'PUT' ? await deps.readJson(call) : undefined;
      return json(200, handleScheduling(scheduling, call.method, body, deps.scheduling));
    }
    if (path === '/admin/workers') {
      if (call.method === 'GET') return json(200, { workers: registry.list() });
      if (call.method === 'POST') {
        const config = parseWorkerConfig(await deps.readJson(call), 'worker');
        registry.add(config);
        return json(201, { worker: registry.list().find((w) => w.id === config.id) });
      }
      throw methodNotAllowed(call.method, path);
    }
    const m = WORKER_PATH.exec(path);
    if (!m) throw notFound(`no admin route ${call.method} ${path}`, 'unknown_route');
    const id = Number(m[1]);
    const action = m[3];
    if (action === undefined) {
      if (call.method === 'GET') {
        const w = registry.list().find((s) => s.id === id);
        if (!w) throw new UnknownWorkerError(id);
        return json(200, { worker: w });
      }
      if (call.method === 'DELETE') return json(200, { removed: registry.remove(id) });
      throw methodNotAllowed(call.method, path);
    }
    if (call.method !== 'POST') throw methodNotAllowed(call.method, path);
    return json(200, { worker: action === 'drain' ? registry.drain(id) : registry.activate(id) });
  } catch (err) {
    if (err instanceof UnknownWorkerError) throw notFound(err.message, 'unknown_worker');
    if (err instanceof WorkerExistsError) throw new HttpError(409, 'invalid_request_error', 'worker_exists', err.message);
    if (err instanceof DiscoveredWorkerError) throw new HttpError(409, 'invalid_request_error', 'worker_discovered', err.message);
    throw err;
  }
}

function methodNotAllowed(method: string, path: string): HttpError {
  return new HttpError(405, 'invalid_request_error', 'method_not_allowed', `${method} is not allowed on ${path}`);
}

function json(status: number, value: unknown): HttpReply {
  return { status, headers: { 'content-type': 'application/json' }, body: JSON.stringify(value) };
}
