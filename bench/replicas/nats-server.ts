// A nats-server for the replicas suite: JetStream on, a free loopback port, its storage in a
// temporary folder. nats-server is a Debian package (.ci/run installs it).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface BenchNats {
  url: string;
  close(): Promise<void>;
}

export async function startBenchNats(): Promise<BenchNats> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
  const store = mkdtempSync(join(tmpdir(), 'kvroute-bench-nats-'));
  const child = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', store], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  await new Promise<void>((resolve, reject) => {
    child.once('error', (err) => reject(new Error(`cannot run nats-server (apt-get install nats-server): ${err.message}`)));
    child.once('exit', (code) => reject(new Error(`nats-server exited (${code}) before it was ready:\n${log}`)));
    child.stderr.on('data', (c: Buffer) => {
      log += c.toString();
      if (log.includes('Server is ready')) resolve();
    });
  });
  return {
    url: `nats://127.0.0.1:${port}`,
    async close() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
      rmSync(store, { recursive: true, force: true });
    },
  };
}
