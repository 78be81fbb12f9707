// What logging costs the request path: two routers in this process, one logging at info through
// kvroute's own logger (pino, synchronous writes to a file, as it writes to stderr in production),
// one silent, loaded in alternating rounds of the same closed loop; the router thread's CPU per
// request of each, the median over the rounds. The router logs state changes, never a line per
// request at info, so the two should not differ beyond noise; the lines the info router wrote
// during the rounds are counted to show it.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import type { Router } from '../../src/server/app/router.js';
import type { RouterConfigInput } from '../../src/server/config/config.js';
import type { RunningServer } from '../../src/server/http/uws.js';
import type { Logger } from '../../src/util/logger.js';
import { median } from '../lib/stats.js';
import type { LoadOptions } from './loadgen.js';
import { compiledRouter } from './compiled-router.js';
import { threadCpuMicros } from './thread-cpu.js';
import type { World } from './world-process.js';

export interface LoggerCostFigure {
  prompt_tokens: number;
  stream: boolean;
  rounds: number;
  requests_per_round: number;
  /** Router thread CPU per request, median over the rounds. */
  info_cpu_us_per_request: number;
  silent_cpu_us_per_request: number;
  round_info_cpu_us: number[];
  round_silent_cpu_us: number[];
  /** Lines the info router wrote while the rounds ran (its startup lines excluded). */
  info_lines_during_rounds: number;
  failed: number;
}

interface Variant {
  router: Router;
  server: RunningServer;
}

export async function measureLoggerCost(
  world: World,
  o: { config: (engineUrl: string) => RouterConfigInput; body: string; promptTokens: number; stream: boolean; rounds: number; requests: number },
): Promise<LoggerCostFigure> {
  const { createRouter, listenUws, createLogger, silentLogger } = await compiledRouter();
  const dir = mkdtempSync(join(tmpdir(), 'kvroute-logger-cost-'));
  const file = join(dir, 'router.log');
  const start = async (logger: Logger): Promise<Variant> => {
    const router = await createRouter(o.config(world.engineUrl), { logger });
    return { router, server: await listenUws(router, { host: '127.0.0.1', port: 0 }) };
  };
  const info = await start(createLogger({ level: 'info', destination: pino.destination({ dest: file, sync: true }) }));
  const silent = await start(silentLogger);
  try {
    const load = (v: Variant, requests: number): LoadOptions => ({
      url: v.server.url,
      path: '/v1/completions',
      body: o.body,
      concurrency: 64,
      requests,
      maxMs: 60_000,
    });
    const cpuPerRequest = async (v: Variant) => {
      const before = threadCpuMicros();
      const r = await world.load(load(v, o.requests), { ownThread: true });
      const after = threadCpuMicros();
      return { us: before !== undefined && after !== undefined && r.completed > 0 ? (after - before) / r.completed : Number.NaN, failed: r.failed };
    };
    for (const v of [info, silent]) await world.load(load(v, Math.ceil(o.requests / 2)), { ownThread: true }); // warm-up
    const linesBefore = lineCount(file);
    const infoUs: number[] = [];
    const silentUs: number[] = [];
    let failed = 0;
    for (let i = 0; i < o.rounds; i++) {
      // Alternate which goes first, so neither always meets the machine right after the other.
      const order = i % 2 === 0 ? [info, silent] : [silent, info];
      for (const v of order) {
        const r = await cpuPerRequest(v);
        failed += r.failed;
        (v === info ? infoUs : silentUs).push(Math.round(r.us * 10) / 10);
      }
    }
    return {
      prompt_tokens: o.promptTokens,
      stream: o.stream,
      rounds: o.rounds,
      requests_per_round: o.requests,
      info_cpu_us_per_request: Math.round(median(infoUs) * 10) / 10,
      silent_cpu_us_per_request: Math.round(median(silentUs) * 10) / 10,
      round_info_cpu_us: infoUs,
      round_silent_cpu_us: silentUs,
      info_lines_during_rounds: lineCount(file) - linesBefore,
      failed,
    };
  } finally {
    for (const v of [info, silent]) {
      await v.server.close();
      await v.router.close();
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

function lineCount(file: string): number {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '').length;
}
