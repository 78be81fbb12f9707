// A real Prometheus (Debian's `prometheus` package) scraping loopback targets every second, its
// storage in a temporary folder, killed at the end. Absent prometheus: the tests skip with a
// message, except under CI (CI set), where they must run (.ci/run installs it).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { commandInstalled, freePort, spawnTracked, type CliProcess } from './processes.js';

export const PROMETHEUS_INSTALLED = commandInstalled('prometheus');

/** Why the Prometheus tests are skipped; null when they run (under CI a missing prometheus fails them). */
export const PROMETHEUS_SKIP_REASON: string | null =
  PROMETHEUS_INSTALLED || process.env.CI
    ? null
    : 'prometheus is not installed (apt-get install prometheus; .ci/run installs it): the Grafana dashboard test is skipped';

if (PROMETHEUS_SKIP_REASON) console.warn(`SKIPPED: ${PROMETHEUS_SKIP_REASON}`);

export interface PrometheusServer {
  readonly url: string;
  /** GET /api/v1/<path>: the `data` of a successful answer (throws with Prometheus' error otherwise). */
  api<T = unknown>(path: string, params: Record<string, string>): Promise<T>;
  close(): Promise<void>;
}

/** Prometheus scraping `targets` (host:port) as job `job`, every second. */
export async function startPrometheus(job: string, targets: string[]): Promise<PrometheusServer> {
  if (!PROMETHEUS_INSTALLED) throw new Error('prometheus is not installed (apt-get install prometheus); under CI the dashboard test must run');
  const dir = mkdtempSync(join(tmpdir(), 'kvroute-prometheus-'));
  const config = join(dir, 'prometheus.yml');
  writeFileSync(
    config,
    `global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: ${job}\n    static_configs:\n      - targets: [${targets.map((t) => `'${t}'`).join(', ')}]\n`,
  );
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let proc: CliProcess | undefined = spawnTracked('prometheus', [
    `--config.file=${config}`,
    `--storage.tsdb.path=${join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`,
    '--log.level=warn',
  ]);
  try {
    const end = Date.now() + 20_000;
    for (;;) {
      const ready = await fetch(`${url}/-/ready`).then(
        (r) => r.ok,
        () => false,
      );
      if (ready) break;
      if (proc.child.exitCode !== null) throw new Error(`prometheus exited (${proc.child.exitCode}):\n${proc.output()}`);
      if (Date.now() > end) throw new Error(`prometheus was not ready within 20 s:\n${proc.output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } catch (err) {
    proc.kill();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    url,
    async api<T>(path: string, params: Record<string, string>): Promise<T> {
      const res = await fetch(`${url}/api/v1/${path}?${new URLSearchParams(params)}`);
      const body = (await res.json()) as { status: string; data?: T; error?: string; errorType?: string };
      if (body.status !== 'success') throw new Error(`Prometheus ${path} ${JSON.stringify(params)}: ${body.errorType}: ${body.error}`);
      return body.data as T;
    },
    async close() {
      const p = proc;
      proc = undefined;
      if (p) {
        p.kill();
        await p.exited(10_000).catch(() => undefined);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
