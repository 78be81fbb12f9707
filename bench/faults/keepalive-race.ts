// The keep-alive race, counted: the router's EngineClient sends bursts of requests to an engine
// that closes idle connections itself (uvicorn's behaviour, here a node:http server with a short
// idle timer and no Keep-Alive hint in its answers, as uvicorn sends none), with idle gaps
// jittered around the engine's idle timeout. A request written to a kept-alive connection just as
// the engine closes it is lost after it was written: the client reports it as possibly accepted,
// which the router cannot fail over (a 502). Two clients run side by side, each with its own
// engine: one keeps idle connections longer than the engine does (the old 30 s against uvicorn's
// 5 s), one shorter (the new default's 4 s against 5 s). Each failure is counted by kind, with
// whether the engine ever parsed the request's head (it never ran a request it did not parse).
//
//   npx tsx bench/faults/keepalive-race.ts [--rounds 120] [--width 16] [--engine-idle-ms 1000]
//     [--jitter-ms 4]
import { subscribe } from 'node:diagnostics_channel';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { parseArgs } from 'node:util';
import { EngineClient } from '../../src/engines/http-client.js';
import { EngineError } from '../../src/engines/errors.js';

interface Engine {
  server: Server;
  url: string;
  /** Request ids whose head the engine parsed. */
  seen: Set<string>;
  /** Requests whose head it parsed a second time (run twice). */
  parsedTwice: number;
  connections: number;
  /** Connections the engine closed for idleness. */
  idleCloses: number;
}

function startEngine(idleMs: number): Promise<Engine> {
  const engine: Engine = { server: undefined as unknown as Server, url: '', seen: new Set(), parsedTwice: 0, connections: 0, idleCloses: 0 };
  // The engine's idle close, uvicorn's way: a timer started when an answer is finished, cancelled
  // by the next request, closing the connection when it fires. (node's own keepAliveTimeout is off:
  // node 20.20 closes after keepAliveTimeout + 1 s, measured, and would say "Keep-Alive: timeout=N".)
  const idleTimers = new WeakMap<Socket, NodeJS.Timeout>();
  const server = createServer((req, res) => {
    clearTimeout(idleTimers.get(req.socket));
    const id = String(req.headers['x-request-id']);
    if (engine.seen.has(id)) engine.parsedTwice++;
    engine.seen.add(id);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      // An explicit Connection header keeps node from adding a Keep-Alive hint: uvicorn sends none,
      // so the client cannot learn the engine's idle timeout from the answer.
      res.writeHead(200, { 'content-type': 'application/json', connection: 'keep-alive' });
      res.end(JSON.stringify({ id: req.headers['x-request-id'], object: 'text_completion', choices: [{ index: 0, text: 'ok', finish_reason: 'stop' }] }));
    });
    res.on('finish', () => {
      const socket = req.socket;
      idleTimers.set(
        socket,
        setTimeout(() => {
          engine.idleCloses++;
          socket.destroy();
        }, idleMs),
      );
    });
  });
  server.keepAliveTimeout = 0;
  server.on('connection', (socket: Socket) => {
    engine.connections++;
    socket.on('close', () => clearTimeout(idleTimers.get(socket)));
  });
  engine.server = server;
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      engine.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      resolve(engine);
    });
  });
}

interface Tally {
  sent: number;
  ok: number;
  /** "failure code mayHaveAccepted engine-saw-it" -> count */
  failures: Map<string, number>;
}

function failureKey(err: unknown, seen: boolean): string {
  if (!(err instanceof EngineError)) return `${(err as Error)?.name ?? 'error'}: ${String((err as Error)?.message ?? err)}`;
  const code = /^([\w ]+?)(?: \(|$)/.exec(err.detail ?? '')?.[1] ?? err.detail;
  return `${err.failure} [${code}] mayHaveAccepted=${err.mayHaveAccepted} engineParsedIt=${seen}`;
}

async function burst(client: EngineClient, engine: Engine, tally: Tally, width: number, round: number, name: string): Promise<void> {
  await Promise.all(
    Array.from({ length: width }, async (_, i) => {
      const requestId = `${name}-${round}-${i}`;
      tally.sent++;
      try {
        await client.postJson('/v1/completions', { model: 'm', prompt: 'hi', max_tokens: 1 }, { requestId });
        tally.ok++;
      } catch (err) {
        const key = failureKey(err, engine.seen.has(requestId));
        tally.failures.set(key, (tally.failures.get(key) ?? 0) + 1);
      }
    }),
  );
}

/** Writes per request id, from undici's own channel: a request written twice was sent again. */
const writes = new Map<string, number>();
subscribe('undici:client:sendHeaders', (message) => {
  const id = /x-request-id: ([^\r]+)/.exec((message as { headers: string }).headers)?.[1];
  if (id !== undefined) writes.set(id, (writes.get(id) ?? 0) + 1);
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string', default: '120' },
      width: { type: 'string', default: '16' },
      'engine-idle-ms': { type: 'string', default: '1000' },
      'jitter-ms': { type: 'string', default: '4' },
    },
  });
  const rounds = Number(values.rounds);
  const width = Number(values.width);
  const idleMs = Number(values['engine-idle-ms']);
  const jitterMs = Number(values['jitter-ms']);
  // The two relations, scaled to the engine's timeout: 30 s and 4 s against uvicorn's 5 s.
  const setups = [
    { name: 'longer', keepAliveTimeoutMs: Math.round(idleMs * 6) },
    { name: 'shorter', keepAliveTimeoutMs: Math.round(idleMs * 0.8) },
  ];
  const runs = await Promise.all(
    setups.map(async (s) => {
      const engine = await startEngine(idleMs);
      return {
        ...s,
        engine,
        client: new EngineClient(engine.url, { keepAliveTimeoutMs: s.keepAliveTimeoutMs }),
        tally: { sent: 0, ok: 0, failures: new Map() } as Tally,
      };
    }),
  );
  const started = Date.now();
  for (let round = 0; round < rounds; round++) {
    // Both bursts at once, the order turned each round.
    const order = round % 2 === 0 ? runs : [...runs].reverse();
    await Promise.all(order.map((r) => burst(r.client, r.engine, r.tally, width, round, r.name)));
    await sleep(idleMs + (Math.random() * 2 - 1) * jitterMs);
  }
  const seconds = (Date.now() - started) / 1000;
  console.log(
    `keep-alive race: ${rounds} rounds of ${width} concurrent requests per client, idle gaps ${idleMs} ms ± ${jitterMs} ms (uniform), ` +
      `engine idle timeout ${idleMs} ms; ${seconds.toFixed(0)} s, load average ${(await import('node:os'))
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
  );
  for (const r of runs) {
    const failed = r.tally.sent - r.tally.ok;
    let again = 0;
    for (const [id, n] of writes) if (id.startsWith(`${r.name}-`) && n > 1) again++;
    console.log(
      `\n${r.name}: client keepAliveTimeoutMs ${r.keepAliveTimeoutMs} (engine ${idleMs}): ${r.tally.sent} sent, ${r.tally.ok} ok, ${failed} failed; ` +
        `${again} written twice (sent again after a reset); engine: ${r.engine.connections} connections opened, ${r.engine.idleCloses} closed by its idle timeout, ${r.engine.parsedTwice} requests it parsed twice`,
    );
    for (const [key, n] of [...r.tally.failures].sort((a, b) => b[1] - a[1])) console.log(`  ${n}  ${key}`);
  }
  for (const r of runs) {
    await r.client.close();
    r.engine.server.closeAllConnections();
    await new Promise((res) => r.engine.server.close(res));
  }
}

await main();
