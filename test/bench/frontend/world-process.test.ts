import { existsSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { startWorld, type World, type WorldLayout } from '../../../bench/frontend/world-process.js';

const worlds: World[] = [];
afterEach(async () => {
  for (const w of worlds.splice(0)) await w.close();
});

const body = JSON.stringify({ model: 'bench', prompt: [1, 2, 3], max_tokens: 4, stream: true });
const load = (url: string, extra: object = {}) => ({ url, path: '/v1/completions', body, concurrency: 4, requests: 40, maxMs: 20_000, ...extra });

describe.each<[string, WorldLayout]>([
  ['engines on the main thread, the dispatch client', { engineThreads: false, loadClient: 'dispatch' }],
  ['engines on threads of their own, the request client', { engineThreads: true, loadClient: 'request' }],
  ['a load thread per run', { engineThreads: false, loadClient: 'dispatch', loadThreadPerRun: true }],
])('the bench world, %s', (_, layout) => {
  it('serves closed and open loops from its engines, names its threads, and survives a refused load', async () => {
    const world = await startWorld(4, 8, 2, layout);
    worlds.push(world);
    expect(world.engineUrls).toHaveLength(2);
    for (const url of world.engineUrls) {
      const closed = await world.load(load(url), { ownThread: true });
      expect(closed).toMatchObject({ completed: 40, failed: 0 });
    }
    const open = await world.load(load(world.engineUrl, { ratePerS: 400 }), { ownThread: false });
    expect(open).toMatchObject({ completed: 40, failed: 0 });
    // A load the generator refuses fails alone: the world serves the next one.
    await expect(world.load(load('http://example.com'), { ownThread: true })).rejects.toThrow('loopback only');
    expect(await world.load(load(world.engineUrl), { ownThread: true })).toMatchObject({ completed: 40 });
    if (existsSync('/proc/self/task')) {
      if (layout.engineThreads) {
        expect(new Set(world.threads.engine).size).toBe(2);
        expect(world.threads.engine).not.toContain(world.pid);
      } else expect(world.threads.engine).toEqual([world.pid, world.pid]);
      expect(world.threads.load).toHaveLength(1);
      expect(world.threads.load[0]).not.toBe(world.pid);
    }
  });
});
