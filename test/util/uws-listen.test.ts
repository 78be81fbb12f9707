// A busy port is refused, also when its holder is another uWebSockets.js process (uWS sets
// SO_REUSEPORT, and the kernel used to split connections between the two); --reuse-port shares it.
import uWS from 'uWebSockets.js';
import { afterEach, describe, expect, it } from 'vitest';
import { listenOn } from '../../src/util/uws-listen.js';
import { freePort, killAll, spawnCli } from '../helpers/processes.js';

afterEach(() => killAll());

const mockArgs = (port: number, extra: string[] = []) => [
  'mock',
  '--port',
  String(port),
  '--zmq-port',
  '0',
  '--replay-port',
  '0',
  '--log-level',
  'warn',
  ...extra,
];

describe('listenOn', () => {
  it('binds exclusively unless sharing is asked for, naming the port when it is taken', async () => {
    const port = await freePort();
    const apps = [uWS.App(), uWS.App(), uWS.App()];
    const first = await listenOn(apps[0], '127.0.0.1', port, false);
    try {
      await expect(listenOn(apps[1], '127.0.0.1', port, false, 'router')).rejects.toThrow(
        `cannot listen on 127.0.0.1:${port} (router): the port is in use by another process, or the address is not available here (--reuse-port shares a port with processes that allow sharing)`,
      );
      // Sharing takes both sides: an exclusive holder refuses a sharing newcomer too.
      await expect(listenOn(apps[2], '127.0.0.1', port, true)).rejects.toThrow(/the port is in use/);
    } finally {
      uWS.us_listen_socket_close(first);
    }
  });
});

describe('listenOn, a port it cannot have', () => {
  it('fails at once on an address this host does not have (no wait for a release that never comes)', async () => {
    let waited = false;
    await expect(listenOn(uWS.App(), '192.0.2.1', await freePort(), false, 'router', { onWaitForRelease: () => (waited = true) })).rejects.toThrow(
      /cannot listen on 192\.0\.2\.1:\d+ \(router\)/,
    );
    expect(waited).toBe(false); // refused without waiting for the port's release
  });
});

describe('two processes on one port', () => {
  it('kvroute serve refuses a port a kvroute mock holds, and exits 1 naming it', async () => {
    const port = await freePort();
    const mock = spawnCli(mockArgs(port));
    await mock.waitFor(/worker 0 /);
    const serve = spawnCli(['serve', '--embedded', '--port', String(port), '--embedded-decode', '1', '--embedded-prefill', '0']);
    expect(await serve.exited()).toBe(1);
    expect(serve.output()).toContain(`kvroute: cannot listen on 127.0.0.1:${port} (router): the port is in use by another process`);
    expect(serve.output()).not.toMatch(/listening on/);
  });

  it('kvroute mock refuses a port a kvroute serve holds', async () => {
    const port = await freePort();
    const serve = spawnCli(['serve', '--embedded', '--port', String(port), '--embedded-decode', '1', '--embedded-prefill', '0', '--log-level', 'warn']);
    await serve.waitFor(/kvroute listening on/);
    const mock = spawnCli(mockArgs(port));
    expect(await mock.exited()).toBe(1);
    expect(mock.output()).toContain(`kvroute: cannot listen on 127.0.0.1:${port} (the worker's HTTP server): the port is in use by another process`);
  });

  it('shares the port when both ask with --reuse-port', async () => {
    const port = await freePort();
    const a = spawnCli(mockArgs(port, ['--reuse-port', '--id', '1']));
    await a.waitFor(/worker 1 /);
    const b = spawnCli(mockArgs(port, ['--reuse-port', '--id', '2']));
    await b.waitFor(/worker 2 /);
    // The kernel spreads new connections over both holders: each answers some of them.
    const ids = new Set<number>();
    for (let i = 0; i < 40 && ids.size < 2; i++) {
      const health = (await (await fetch(`http://127.0.0.1:${port}/health`, { headers: { connection: 'close' } })).json()) as { worker_id: number };
      ids.add(health.worker_id);
    }
    expect([...ids].sort()).toEqual([1, 2]);
  });
});
