// A real nats-server for the replica tests, on a free loopback port, killed at the end. Absent
// nats-server: the tests skip with a message, except under CI (CI set), where they must run.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { commandInstalled, freePort, spawnTracked, type CliProcess } from './processes.js';

export const NATS_SERVER_INSTALLED = commandInstalled('nats-server');

/** Why the NATS tests are skipped; null when they run (CI runs them whatever: a missing server then fails them). */
export const NATS_SKIP_REASON: string | null =
  NATS_SERVER_INSTALLED || process.env.CI
    ? null
    : 'nats-server is not installed (apt-get install nats-server; .ci/run installs it): the router replica tests are skipped';

if (NATS_SKIP_REASON) console.warn(`SKIPPED: ${NATS_SKIP_REASON}`);

export interface NatsServer {
  readonly url: string;
  readonly port: number;
  /** Stops the server (SIGKILL) and waits for it to exit. */
  stop(): Promise<void>;
  /** Starts it again on the same port (after stop). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

/** nats-server with JetStream on a free port (or `port`), its storage in a temporary folder. */
export async function startNatsServer(port?: number): Promise<NatsServer> {
  if (!NATS_SERVER_INSTALLED) throw new Error('nats-server is not installed (apt-get install nats-server); under CI the router replica tests must run');
  const p = port ?? (await freePort());
  const store = mkdtempSync(join(tmpdir(), 'kvroute-nats-'));
  let proc: CliProcess | undefined;
  const start = async () => {
    const child = spawnTracked('nats-server', ['-a', '127.0.0.1', '-p', String(p), '-js', '-sd', store]);
    proc = child;
    await child.waitFor(/Server is ready/, 15_000);
  };
  await start();
  const stop = async () => {
    const p2 = proc;
    proc = undefined;
    if (!p2) return;
    p2.kill();
    await p2.exited();
  };
  return {
    url: `nats://127.0.0.1:${p}`,
    port: p,
    stop,
    restart: start,
    async close() {
      await stop();
      rmSync(store, { recursive: true, force: true });
    },
  };
}
