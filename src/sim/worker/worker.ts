// A simulated engine worker: the pure EngineModel driven in real time behind the protocols of a
// real engine: OpenAI HTTP, ZeroMQ KV events with a replay socket, a prefill/decode handoff in the
// style of vLLM, SGLang or TensorRT-LLM, /metrics, and fault switches for tests.
import { expectInteger, expectWorkerId } from '../../util/validate.js';
import { EngineModel, type EngineConfig, type KvEvent, type SimRequest, type TokenOutput } from '../engine/index.js';
import { EngineDriver, type SteppableModel } from './driver.js';
import { FaultState, expectCount, parseFaultCommand } from './faults.js';
import { EngineSessions } from './sessions.js';
import { KvHolds } from './handoff/kv-holds.js';
import { startSideChannel } from './handoff/side-channel.js';
import type { HandoffContext, PdStyle } from './handoff/types.js';
import { ENGINE_KINDS, WORKER_ROLES, type WorkerRole } from '../../core/vocabulary.js';
import { type HttpExchange, type HttpServer, listenHttp } from './http-server.js';
import { type EngineHandle, type InferenceRuntime, serveInference } from './inference.js';
import { EVENT_ENCODINGS, type EventEncoding } from './kv-event-encoding.js';
import { KvEventPublisher } from './kv-publisher.js';
import { WorkerMetrics } from './metrics.js';
import { modelList, parseJsonBody } from './openai.js';
import { ReplayServer } from './replay.js';
import { RequestGate } from './request-gate.js';

export interface SimWorkerOptions {
  id: number;
  role?: WorkerRole;
  pdStyle?: PdStyle;
  host?: string;
  httpPort?: number;
  zmqPort?: number;
  replayPort?: number;
  /** The KV side channel of a prefill worker (SGLang's bootstrap port; vLLM's remote_port). */
  bootstrapPort?: number;
  engine?: EngineConfig;
  eventEncoding?: EventEncoding;
  topic?: string;
  replayBufferSteps?: number;
  /** The served model name (any requested name is accepted and echoed). */
  model?: string;
  /** Model names that select a LoRA adapter of that name. */
  loras?: readonly string[];
  /** A finished prefill nobody pulls releases its blocks after this long. */
  handoffHoldMs?: number;
  /** How long an SGLang decode leg waits for its prefill. */
  handoffWaitMs?: number;
  /** max_tokens of a chat request that sets none. */
  defaultChatMaxTokens?: number;
  /** Wall clock (ms) for timestamps and engine time. */
  clock?: () => number;
  /** Share the HTTP and side channel ports with other processes (SO_REUSEPORT); default: a busy port is an error. */
  reusePort?: boolean;
  /** The HTTP server's request body limit (default 64 MiB: vLLM has no small limit of its own). */
  maxBodyBytes?: number;
}

export interface SimWorkerFaults {
  failNext(n: number): void;
  hang(on: boolean): void;
  slow(factor: number): void;
  dropEvents(n: number): void;
  restart(): Promise<void>;
}

export interface SimWorker {
  readonly id: number;
  readonly role: WorkerRole;
  readonly pdStyle: PdStyle;
  readonly url: string;
  readonly eventsEndpoint: string;
  readonly replayEndpoint: string;
  readonly bootstrap?: { host: string; port: number };
  /** The current engine model (a restart swaps in a fresh one). */
  readonly model: EngineModel;
  readonly faults: SimWorkerFaults;
  /** The ids of the engine sessions open on this worker (SGLang's open_session / close_session). */
  openSessions(): string[];
  /**
   * Stops taking requests (no new connections; /health and new requests answer 503) and resolves
   * when those in flight have finished, or after `timeoutMs`, cutting the rest (streams end with an
   * error event). The KV side channel keeps serving decode workers' pulls until close().
   */
  drain(timeoutMs: number): Promise<{ inFlight: number; cut: number }>;
  close(): Promise<void>;
}

type Model = SteppableModel<SimRequest, TokenOutput, KvEvent>;

/** vLLM sets no small body limit of its own: the router's limit, not the worker's, should apply first. */
const SIM_MAX_BODY_BYTES = 64 << 20;

export async function startSimWorker(opts: SimWorkerOptions): Promise<SimWorker> {
  const o = validateOptions(opts);
  const clock = opts.clock ?? Date.now;
  const engineConfig = opts.engine ?? {};
  const newModel = () => new EngineModel(engineConfig);
  const firstModel = newModel(); // bad engine options fail here, before any port is taken

  const closers: (() => unknown)[] = [];
  const closeAll = async () => {
    for (const c of closers.splice(0).reverse()) await c();
  };
  try {
    const publisher = await KvEventPublisher.open({
      host: o.host,
      port: o.zmqPort,
      topic: o.topic,
      encoding: o.eventEncoding,
      replayBufferSteps: o.replayBufferSteps,
      clock,
    });
    closers.push(() => publisher.close());
    const replay = await ReplayServer.open(o.host, o.replayPort, () => publisher.buffer);
    closers.push(() => replay.close());

    const faults = new FaultState();
    const driver = new EngineDriver<SimRequest, TokenOutput, KvEvent>(firstModel as unknown as Model, {
      clock,
      onEvents: (events) => publisher.publish(events),
      slowFactor: () => faults.slowFactor,
    });
    closers.push(() => driver.close());
    const holds = new KvHolds({ holdMs: o.handoffHoldMs, release: (id) => driver.release(id) });
    closers.push(() => holds.clear('the worker is closing'));

    const engineId = `kvroute-sim-${o.id}-${clock().toString(36)}`;
    let sideChannel: HttpServer | undefined;
    if (o.role === 'prefill') {
      sideChannel = await startSideChannel({ host: o.host, port: o.bootstrapPort, holds, engineId, maxWaitMs: o.handoffWaitMs, reusePort: opts.reusePort });
      closers.push(() => sideChannel?.close());
    }
    let nextBlockId = 0;
    let nextContextId = 1;
    let recomputes = 0;
    const handoff: HandoffContext = {
      role: o.role,
      engineId,
      sideChannel: sideChannel && { host: o.host, port: sideChannel.port },
      holds,
      waitMs: o.handoffWaitMs,
      blockSize: firstModel.config.blockSize,
      allocateBlockIds: (n) => Array.from({ length: n }, () => nextBlockId++),
      nextContextId: () => nextContextId++,
      onRecompute: () => recomputes++,
    };

    let requestCounter = 0;
    const engine: EngineHandle = {
      submit: (req, sink) => driver.submit(req as SimRequest, sink as never),
      abort: (id) => driver.abort(id),
    };
    const runtime: InferenceRuntime = {
      engine,
      faults,
      pdStyle: o.pdStyle,
      handoff,
      parseOptions: { defaultChatMaxTokens: o.defaultChatMaxTokens },
      modelName: o.model,
      loras: new Set(o.loras),
      newEngineRequestId: (externalId) => `${externalId}-${++requestCounter}`,
      clock,
    };
    const currentModel = () => driver.model as unknown as EngineModel;
    // The simulated engine's "process" start: a restart() is a new process.
    let startedAtMs = clock();
    const metrics = new WorkerMetrics(
      {
        startTimeSeconds: () => startedAtMs / 1000,
        engine: () => currentModel().metrics(),
        worker: () => {
          const c = publisher.counters();
          return {
            kvRecomputes: recomputes,
            holdsActive: holds.size,
            eventBatchesPublished: c.published,
            eventBatchesDropped: c.dropped,
            injectedFailures: faults.injectedFailures,
          };
        },
      },
      { model_name: o.model, engine: String(o.id) },
    );

    const sessions = new EngineSessions(clock);
    const gate = new RequestGate();
    const restart = async () => {
      holds.clear('the engine restarted');
      driver.replaceModel(newModel() as unknown as Model, new Error('the engine restarted'));
      publisher.restart();
      startedAtMs = Math.max(clock(), startedAtMs + 1);
    };
    const hang = (on: boolean) => {
      if (typeof on !== 'boolean') throw new TypeError(`hang takes a boolean, got ${typeof on}`);
      faults.hung = on;
      driver.setPaused(on);
      gate.setClosed(on);
    };
    const applyFaults = async (cmd: ReturnType<typeof parseFaultCommand>) => {
      if (cmd.fail_next !== undefined) faults.failNext(cmd.fail_next);
      if (cmd.slow !== undefined) faults.setSlow(cmd.slow);
      if (cmd.drop_events !== undefined) publisher.dropNext(cmd.drop_events);
      if (cmd.hang !== undefined) hang(cmd.hang);
      if (cmd.restart) await restart();
    };
    const faultStatus = () => ({
      fail_next: faults.pendingFailures,
      hang: faults.hung,
      slow: faults.slowFactor,
      injected_failures: faults.injectedFailures,
      next_event_seq: publisher.seq,
      // Requests held unanswered by the hang switch (tests wait for them to arrive).
      parked_requests: gate.parkedCount,
    });
    const gated = (fn: (ex: HttpExchange) => void | Promise<void>) => (ex: HttpExchange) => gate.run(ex, fn);
    const served = [o.model, ...o.loras];

    const http = await listenHttp({
      host: o.host,
      port: o.httpPort,
      reusePort: opts.reusePort,
      maxBodyBytes: opts.maxBodyBytes ?? SIM_MAX_BODY_BYTES,
      routes: [
        { method: 'POST', path: '/v1/completions', handler: gated((ex) => serveInference(runtime, ex, 'completions')) },
        { method: 'POST', path: '/v1/chat/completions', handler: gated((ex) => serveInference(runtime, ex, 'chat')) },
        { method: 'GET', path: '/v1/models', handler: gated((ex) => ex.json(200, modelList(served, Math.floor(clock() / 1000)))) },
        // Real engines answer an empty 200; the id and role tell mock processes apart.
        { method: 'GET', path: '/health', handler: gated((ex) => ex.json(200, { status: 'ok', worker_id: o.id, role: o.role })) },
        { method: 'GET', path: '/metrics', handler: gated(async (ex) => ex.send(200, await metrics.text(), { 'content-type': metrics.contentType })) },
        {
          // vLLM's endpoint: drop the prefix cache (an AllBlocksCleared event follows).
          method: 'POST',
          path: '/reset_prefix_cache',
          handler: gated((ex) => {
            publisher.publish(currentModel().reset());
            ex.send(200, '', {});
          }),
        },
        // SGLang's session API (the router's session_control calls it on SGLang-style workers).
        { method: 'POST', path: '/open_session', handler: gated((ex) => ex.json(200, sessions.openFrom(parseJsonBody(ex.body)))) },
        {
          method: 'POST',
          path: '/close_session',
          handler: gated((ex) => {
            sessions.closeFrom(parseJsonBody(ex.body));
            ex.send(200, '', {});
          }),
        },
        // Admin routes stay up while the worker "hangs": that is how a test releases it.
        { method: 'GET', path: '/admin/faults', handler: (ex) => ex.json(200, faultStatus()) },
        {
          method: 'POST',
          path: '/admin/faults',
          handler: async (ex) => {
            await applyFaults(parseFaultCommand(parseJsonBody(ex.body)));
            ex.json(200, faultStatus());
          },
        },
      ],
    });
    closers.push(() => http.close());

    const url = `http://${urlHost(o.host)}:${http.port}`;
    let closed = false;
    return {
      id: o.id,
      role: o.role,
      pdStyle: o.pdStyle,
      url,
      eventsEndpoint: publisher.endpoint,
      replayEndpoint: replay.endpoint,
      bootstrap: sideChannel && { host: o.host, port: sideChannel.port },
      get model() {
        return currentModel();
      },
      openSessions: () => sessions.ids(),
      faults: {
        failNext: (n) => faults.failNext(n),
        hang,
        slow: (factor) => faults.setSlow(factor),
        dropEvents: (n) => publisher.dropNext(expectCount(n, 'dropEvents')),
        restart,
      },
      drain: (timeoutMs) => http.drain(timeoutMs),
      async close() {
        if (closed) return;
        closed = true;
        gate.closeAll();
        await closeAll();
      },
    };
  } catch (err) {
    await closeAll();
    throw err;
  }
}

interface ValidOptions {
  id: number;
  role: WorkerRole;
  pdStyle: PdStyle;
  host: string;
  httpPort: number;
  zmqPort: number;
  replayPort: number;
  bootstrapPort: number;
  eventEncoding: EventEncoding;
  topic: string;
  replayBufferSteps: number;
  model: string;
  loras: string[];
  handoffHoldMs: number;
  handoffWaitMs: number;
  defaultChatMaxTokens: number;
}

function validateOptions(opts: SimWorkerOptions): ValidOptions {
  if (opts === null || typeof opts !== 'object') throw new TypeError('startSimWorker needs an options object');
  const oneOf = <T extends string>(v: unknown, name: string, allowed: readonly T[], dflt: T): T => {
    if (v === undefined) return dflt;
    if (!allowed.includes(v as T)) throw new RangeError(`${name} must be one of ${allowed.join(', ')}, got ${String(v)}`);
    return v as T;
  };
  const port = (v: unknown, name: string) => (v === undefined ? 0 : expectInteger(v, name, 0, 65535));
  const str = (v: unknown, name: string, dflt: string) => {
    if (v === undefined) return dflt;
    if (typeof v !== 'string') throw new TypeError(`${name} must be a string, got ${typeof v}`);
    return v;
  };
  const loras = opts.loras ?? [];
  if (!Array.isArray(loras) || loras.some((l) => typeof l !== 'string' || l === '')) throw new TypeError('loras must be an array of non-empty strings');
  const model = str(opts.model, 'model', 'kvroute-sim');
  if (model === '') throw new RangeError('model must not be empty');
  const host = str(opts.host, 'host', '127.0.0.1');
  if (host === '') throw new RangeError('host must not be empty');
  return {
    id: expectWorkerId(opts.id, 'id'),
    role: oneOf(opts.role, 'role', WORKER_ROLES, 'aggregated'),
    pdStyle: oneOf(opts.pdStyle, 'pdStyle', ENGINE_KINDS, 'vllm'),
    host,
    httpPort: port(opts.httpPort, 'httpPort'),
    zmqPort: port(opts.zmqPort, 'zmqPort'),
    replayPort: port(opts.replayPort, 'replayPort'),
    bootstrapPort: port(opts.bootstrapPort, 'bootstrapPort'),
    eventEncoding: oneOf(opts.eventEncoding, 'eventEncoding', EVENT_ENCODINGS, 'map'),
    topic: str(opts.topic, 'topic', 'kv-events'),
    replayBufferSteps: opts.replayBufferSteps === undefined ? 10_000 : expectInteger(opts.replayBufferSteps, 'replayBufferSteps', 1, 10_000_000),
    model,
    loras: [...loras],
    handoffHoldMs: opts.handoffHoldMs === undefined ? 120_000 : expectInteger(opts.handoffHoldMs, 'handoffHoldMs', 1, 86_400_000),
    handoffWaitMs: opts.handoffWaitMs === undefined ? 30_000 : expectInteger(opts.handoffWaitMs, 'handoffWaitMs', 1, 86_400_000),
    defaultChatMaxTokens: opts.defaultChatMaxTokens === undefined ? 256 : expectInteger(opts.defaultChatMaxTokens, 'defaultChatMaxTokens', 1, 0xffff_ffff),
  };
}

function urlHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}
