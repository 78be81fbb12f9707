import { describe, expect, it } from 'vitest';
import { handleAdmin, type AdminDeps } from '../../../src/server/fleet/admin.js';
import { HttpError } from '../../../src/server/call/errors.js';
import type { HttpCall } from '../../../src/server/call/call.js';
import { WorkerRegistry } from '../../../src/server/fleet/registry.js';
import type { SchedulingPort } from '../../../src/server/fleet/scheduling.js';
import { checkQueueSettings, DEFAULT_QUEUE_SETTINGS } from '../../../src/routing/queue/admission-queue.js';
import { conditionalSettings, DEFAULT_CONDITIONAL_DISAGG } from '../../../src/routing/prefill/mode.js';

function deps(token?: string): AdminDeps {
  const pool = { enable() {}, disable() {}, remove() {}, dropBlocks() {}, activeRequests: () => 0 };
  const registry = new WorkerRegistry({
    pools: { prefill: pool, decode: pool },
    ingest: { subscribe() {}, unsubscribe() {}, continuous: () => true, resync() {} },
    healthGraceMs: 0,
  });
  return { registry, scheduling: scheduling(), token, readJson: async (call) => JSON.parse(String(call.body ?? '{}')) as Record<string, unknown> };
}

/** The scheduling settings with the routing layer's own checks, held here. */
function scheduling(): SchedulingPort {
  let queue = checkQueueSettings({ ...DEFAULT_QUEUE_SETTINGS });
  let conditional = conditionalSettings(DEFAULT_CONDITIONAL_DISAGG);
  return {
    queue: () => queue,
    setQueue: (s) => (queue = checkQueueSettings({ ...queue, ...s })),
    queueStats: () => ({}),
    conditionalDisagg: () => conditional,
    setConditionalDisagg: (s) => (conditional = conditionalSettings(conditional, s)),
  };
}

const call = (method: string, url: string, extra: Partial<HttpCall> = {}): HttpCall => ({ method, url, headers: {}, remoteAddress: '127.0.0.1', ...extra });

async function status(p: Promise<unknown>): Promise<number> {
  try {
    const r = (await p) as { status: number };
    return r.status;
  } catch (err) {
    if (err instanceof HttpError) return err.status;
    throw err;
  }
}

describe('admin API', () => {
  it('adds, lists, drains, activates and removes workers', async () => {
    const d = deps();
    const body = JSON.stringify({ id: 5, role: 'decode', baseUrl: 'http://127.0.0.1:9005' }) as unknown as Uint8Array;
    const added = await handleAdmin(call('POST', '/admin/workers', { body }), '/admin/workers', d);
    expect(added.status).toBe(201);
    expect(JSON.parse(added.body!).worker).toMatchObject({ id: 5, role: 'decode', state: 'healthy', inSelection: true });
    expect(await status(handleAdmin(call('POST', '/admin/workers', { body }), '/admin/workers', d))).toBe(409);
    const list = await handleAdmin(call('GET', '/admin/workers'), '/admin/workers', d);
    expect(JSON.parse(list.body!).workers).toHaveLength(1);
    const drained = await handleAdmin(call('POST', '/admin/workers/5/drain'), '/admin/workers/5/drain', d);
    expect(JSON.parse(drained.body!).worker.state).toBe('draining');
    const active = await handleAdmin(call('POST', '/admin/workers/5/activate'), '/admin/workers/5/activate', d);
    expect(JSON.parse(active.body!).worker.state).toBe('healthy');
    expect((await handleAdmin(call('DELETE', '/admin/workers/5'), '/admin/workers/5', d)).status).toBe(200);
    expect(await status(handleAdmin(call('DELETE', '/admin/workers/5'), '/admin/workers/5', d))).toBe(404);
  });

  it('refuses bad worker definitions with 400-class errors', async () => {
    const d = deps();
    const body = JSON.stringify({ id: 'x', baseUrl: 'http://h:1' }) as unknown as Uint8Array;
    await expect(handleAdmin(call('POST', '/admin/workers', { body }), '/admin/workers', d)).rejects.toThrow(
      new TypeError('worker.id must be a number, got string x'),
    );
    // Checked whole before anything changes: a worker whose last field is wrong is not half added.
    const late = JSON.stringify({
      id: 4,
      role: 'decode',
      baseUrl: 'http://h:1',
      kvEvents: 'tcp://h:5557',
      bootstrap: { host: 'h', port: 0 },
    }) as unknown as Uint8Array;
    await expect(handleAdmin(call('POST', '/admin/workers', { body: late }), '/admin/workers', d)).rejects.toThrow(
      new RangeError('worker.bootstrap.port must be an integer in [1, 65535], got 0'),
    );
    const unknown = JSON.stringify({ id: 4, baseUrl: 'http://h:1', colour: 'red' }) as unknown as Uint8Array;
    await expect(handleAdmin(call('POST', '/admin/workers', { body: unknown }), '/admin/workers', d)).rejects.toThrow(
      /^worker: unknown field 'colour' \(known: id, role, kind, baseUrl, /,
    );
    expect(d.registry.list()).toEqual([]);
    expect(await status(handleAdmin(call('PUT', '/admin/workers'), '/admin/workers', d))).toBe(405);
    expect(await status(handleAdmin(call('GET', '/admin/nope'), '/admin/nope', d))).toBe(404);
  });

  it('without a token answers loopback peers only', async () => {
    const d = deps();
    expect(await status(handleAdmin(call('GET', '/admin/workers', { remoteAddress: '10.1.2.3' }), '/admin/workers', d))).toBe(403);
    expect(await status(handleAdmin(call('GET', '/admin/workers', { remoteAddress: '::1' }), '/admin/workers', d))).toBe(200);
    expect(await status(handleAdmin(call('GET', '/admin/workers', { remoteAddress: '::ffff:127.0.0.1' }), '/admin/workers', d))).toBe(200);
  });

  it('with a token needs the bearer token, from anywhere', async () => {
    const d = deps('s3cret');
    expect(await status(handleAdmin(call('GET', '/admin/workers'), '/admin/workers', d))).toBe(401);
    const wrong = call('GET', '/admin/workers', { headers: { authorization: 'Bearer nope' } });
    expect(await status(handleAdmin(wrong, '/admin/workers', d))).toBe(401);
    const right = call('GET', '/admin/workers', { headers: { authorization: 'Bearer s3cret' }, remoteAddress: '10.1.2.3' });
    expect(await status(handleAdmin(right, '/admin/workers', d))).toBe(200);
  });

  it('reads and changes the scheduling settings, refusing a bad body whole', async () => {
    const d = deps();
    const put = (path: string, value: unknown) => handleAdmin(call('PUT', path, { body: JSON.stringify(value) as unknown as Uint8Array }), path, d);
    const got = JSON.parse((await handleAdmin(call('GET', '/admin/queue'), '/admin/queue', d)).body!);
    expect(got.settings).toMatchObject({ threshold: null, policy: 'fcfs' });
    expect(JSON.parse((await put('/admin/queue', { threshold: 1.5, policy: 'wspt' })).body!).settings).toMatchObject({ threshold: 1.5, policy: 'wspt' });
    await expect(put('/admin/queue', { maxRequests: 5, threshold: -1 })).rejects.toThrow(/threshold must be/);
    expect(JSON.parse((await put('/admin/queue', { maxWaitMs: 250 })).body!).settings).toMatchObject({ maxWaitMs: 250, policy: 'wspt' });
    expect(JSON.parse((await put('/admin/queue', { maxWaitMs: null })).body!).settings).toMatchObject({ maxWaitMs: null });
    await expect(put('/admin/queue', { maxWaitMs: -5 })).rejects.toThrow(/maxWaitMs/);
    await expect(put('/admin/queue', { colour: 'red' })).rejects.toThrow(/unknown field 'colour'/);
    await expect(put('/admin/queue', [])).rejects.toThrow(TypeError);
    expect(d.scheduling.queue()).toMatchObject({ threshold: 1.5, maxRequests: DEFAULT_QUEUE_SETTINGS.maxRequests });
    expect(JSON.parse((await put('/admin/queue', { threshold: null })).body!).settings.threshold).toBe(null);
    expect(JSON.parse((await put('/admin/conditional-disagg', { enabled: true, bypassBelowTokens: 100 })).body!).settings).toMatchObject({
      enabled: true,
      bypassBelowTokens: 100,
    });
    await expect(put('/admin/conditional-disagg', { enabled: 'yes' })).rejects.toThrow(TypeError);
    expect(d.scheduling.conditionalDisagg().enabled).toBe(true);
    expect(await status(handleAdmin(call('POST', '/admin/queue'), '/admin/queue', d))).toBe(405);
  });
});
