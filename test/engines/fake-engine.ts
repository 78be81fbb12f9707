// Small in-process fake engines on loopback for the engine-client and routing tests: node:http
// servers on port 0 that answer like vLLM, SGLang or TensorRT-LLM workers in each role, record what
// they received, and misbehave on request (errors, hangs, slow tokens, broken streams).
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { EngineKind, WorkerRole } from '../../src/engines/types.js';

export interface Received {
  route: string;
  headers: IncomingMessage['headers'];
  /** The raw JSON text (bigints survive here). */
  text: string;
  body: Record<string, unknown>;
  at: number;
}

export interface FakeBehaviour {
  /** Tokens a generating leg produces when the body sets no max_tokens. */
  tokens: number;
  /** Delay before the response headers. */
  headerDelayMs: number;
  /** Delay before each token of a stream. */
  tokenDelayMs: number;
  /** Prefill legs finish on EOS (finish_reason "stop", nothing to hand off). */
  eos: boolean;
  /** Cached tokens the prefill (or aggregated) worker reports in usage.prompt_tokens_details. */
  cachedTokens: number;
  /** Break the connection after this many streamed tokens. */
  breakAfterTokens: number | null;
  /** Answer this status with an OpenAI error body instead of working. */
  failStatus: number | null;
  /** How many requests fail with failStatus (Infinity: all). */
  failCount: number;
  /** Accept requests and never answer. */
  hang: boolean;
  /** SGLang prefill: answer only once a decode leg with the same room has arrived. */
  waitForDecode: boolean;
  /** vLLM prefill: reply with no kv_transfer_params at all (not a NIXL worker). */
  omitTransferParams: boolean;
  /** Include a worker_id payload object in prefill answers. */
  workerIdPayload: Record<string, unknown> | null;
  /** Fail (failStatus, default 500) only after the handoff checks and failDelayMs (the peer leg got going). */
  failAfterHandoff: boolean;
  failDelayMs: number;
  /** Called right before an answer (or a stream's first byte) is written. */
  beforeAnswer: ((rec: Received) => void) | null;
}

/**
 * Per-request misbehaviour, from the client body's `x_fake` field (relayed to every leg):
 * `{ prefill?: Directive, decode?: Directive }`, where decode also covers aggregated workers.
 */
export type Directive = 'fail' | 'hang' | 'break' | 'eos' | 'slow';

/** Meeting points between fake prefill and decode workers (bootstrap rooms, vLLM block holds). */
export class FakeKvWorld {
  readonly rooms = new Map<string, { prefill?: () => void; decode?: () => void; prefillSeen: boolean; decodeSeen: boolean }>();
  /** vLLM/TensorRT-LLM holds: key -> released? */
  readonly holds = new Map<string, boolean>();

  room(key: string) {
    let r = this.rooms.get(key);
    if (!r) {
      r = { prefillSeen: false, decodeSeen: false };
      this.rooms.set(key, r);
    }
    return r;
  }

  strandedHolds(): string[] {
    return [...this.holds].filter(([, released]) => !released).map(([k]) => k);
  }
}

export interface FakeEngine {
  id: number;
  kind: EngineKind;
  role: WorkerRole;
  url: string;
  port: number;
  received: Received[];
  /** Requests whose client connection closed before the answer ended. */
  aborted: Received[];
  /** Requests being answered right now. */
  active(): number;
  behaviour: FakeBehaviour;
  bootstrapHost: string;
  bootstrapPort: number;
  close(): Promise<void>;
}

const DEFAULTS: FakeBehaviour = {
  tokens: 4,
  headerDelayMs: 0,
  tokenDelayMs: 0,
  eos: false,
  cachedTokens: 0,
  breakAfterTokens: null,
  failStatus: null,
  failCount: Infinity,
  hang: false,
  waitForDecode: false,
  omitTransferParams: false,
  workerIdPayload: null,
  failAfterHandoff: false,
  failDelayMs: 0,
  beforeAnswer: null,
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function startFakeEngine(opts: {
  id: number;
  kind: EngineKind;
  role: WorkerRole;
  world?: FakeKvWorld;
  behaviour?: Partial<FakeBehaviour>;
}): Promise<FakeEngine> {
  const world = opts.world ?? new FakeKvWorld();
  const behaviour: FakeBehaviour = { ...DEFAULTS, ...opts.behaviour };
  const received: Received[] = [];
  const aborted: Received[] = [];
  const sockets = new Set<Socket>();
  let active = 0;
  let holdSeq = 0;

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(text) as Record<string, unknown>;
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' }).end(errorJson('bad json', 'invalid_json'));
        return;
      }
      const rec: Received = { route: req.url ?? '', headers: req.headers, text, body, at: performance.now() };
      received.push(rec);
      active++;
      res.on('close', () => {
        active--;
        if (!res.writableFinished) aborted.push(rec);
      });
      handle(rec, res).catch(() => {
        if (!res.headersSent) res.writeHead(500).end(errorJson('fake engine failed', 'internal'));
        else res.destroy();
      });
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const bootstrapPort = 40000 + (opts.id % 20000);

  async function handle(rec: Received, res: ServerResponse): Promise<void> {
    const b = behaviour;
    const body = rec.body;
    const directive = ((body.x_fake ?? {}) as Record<string, Directive | undefined>)[opts.role === 'prefill' ? 'prefill' : 'decode'];
    if (b.hang || directive === 'hang') return;
    if (b.headerDelayMs > 0) await sleep(b.headerDelayMs);
    if (directive === 'slow') await sleep(30);
    if (directive === 'fail' || (!b.failAfterHandoff && b.failStatus !== null && b.failCount > 0)) {
      if (directive !== 'fail') b.failCount--;
      const status = b.failStatus ?? 500;
      res.writeHead(status, { 'content-type': 'application/json' }).end(errorJson(`fake failure ${status}`, 'fake_failure'));
      return;
    }
    const promptTokens = Array.isArray(body.prompt) ? body.prompt.length : 8;
    const chat = rec.route.endsWith('/chat/completions');
    const requestId = String(rec.headers['x-request-id'] ?? 'none');

    // Handoff checks first: a leg with the wrong shape is refused as the real engine would.
    if (opts.role === 'prefill') {
      if (opts.kind === 'sglang') {
        const key = roomKey(rec);
        if (key === undefined)
          return void res.writeHead(400, { 'content-type': 'application/json' }).end(errorJson('missing bootstrap_room', 'missing_bootstrap'));
        const room = world.room(key);
        room.prefillSeen = true;
        room.decode?.();
        if (b.waitForDecode && !room.decodeSeen) {
          await new Promise<void>((resolve) => {
            room.prefill = resolve;
          });
        }
      }
      if (opts.kind === 'vllm' && (body.kv_transfer_params as { do_remote_decode?: unknown } | undefined)?.do_remote_decode !== true) {
        return void res.writeHead(400, { 'content-type': 'application/json' }).end(errorJson('prefill needs kv_transfer_params', 'missing_kv_transfer_params'));
      }
      if (opts.kind === 'trtllm' && (body.disaggregated_params as { request_type?: unknown } | undefined)?.request_type !== 'context_only') {
        return void res.writeHead(400, { 'content-type': 'application/json' }).end(errorJson('context leg needs context_only', 'missing_disaggregated_params'));
      }
    }
    let pulledKey: string | undefined;
    if (opts.role === 'decode') {
      const key = opts.kind === 'sglang' ? roomKey(rec) : undefined;
      if (key !== undefined) {
        // (a decode worker without bootstrap fields serves the request by itself)
        const room = world.room(key);
        room.decodeSeen = true;
        room.prefill?.();
        if (!room.prefillSeen) {
          const met = await Promise.race([
            new Promise<boolean>((resolve) => {
              room.decode = () => resolve(true);
            }),
            sleep(5_000).then(() => false),
          ]);
          if (!met) return void res.writeHead(500, { 'content-type': 'application/json' }).end(errorJson('bootstrap timed out', 'kv_transfer_failed'));
        }
      }
      const params = (body.kv_transfer_params ?? (body.disaggregated_params as { encoded_opaque_state?: unknown } | undefined)?.encoded_opaque_state) as
        | { remote_request_id?: unknown }
        | string
        | undefined;
      pulledKey = typeof params === 'string' ? params : typeof params?.remote_request_id === 'string' ? `vllm:${params.remote_request_id}` : undefined;
    }
    if (b.failAfterHandoff) {
      await sleep(b.failDelayMs);
      return void res.writeHead(b.failStatus ?? 500, { 'content-type': 'application/json' }).end(errorJson('fake late failure', 'fake_failure'));
    }
    // The KV pull is over when the first token (or the whole answer) goes out.
    const pulled = () => {
      if (pulledKey !== undefined && world.holds.has(pulledKey)) world.holds.set(pulledKey, true);
    };

    const isPrefillLeg = opts.role === 'prefill';
    const maxTokens = typeof body.max_tokens === 'number' ? body.max_tokens : b.tokens;
    const n = isPrefillLeg ? 1 : maxTokens;
    const eos = isPrefillLeg && (b.eos || directive === 'eos');
    const finishReason = eos ? 'stop' : 'length';
    const cached = opts.role === 'decode' ? 0 : b.cachedTokens;
    const usage = { prompt_tokens: promptTokens, completion_tokens: n, total_tokens: promptTokens + n, prompt_tokens_details: { cached_tokens: cached } };
    const id = `${chat ? 'chatcmpl' : 'cmpl'}-${requestId}`;
    const head = { id, created: 1700000000, model: 'fake' };

    b.beforeAnswer?.(rec);
    if (body.stream === true) {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.flushHeaders();
      for (let i = 0; i < n; i++) {
        if (b.tokenDelayMs > 0) await sleep(b.tokenDelayMs);
        if (res.destroyed) return;
        const breakAt = directive === 'break' ? 1 : b.breakAfterTokens;
        if (breakAt !== null && i >= breakAt) {
          res.socket?.destroy();
          return;
        }
        if (i === 0) pulled();
        const last = i === n - 1;
        const choice = chat
          ? { index: 0, delta: i === 0 ? { role: 'assistant', content: `t${i}` } : { content: `t${i}` }, finish_reason: last ? finishReason : null }
          : { index: 0, text: `t${i}`, logprobs: null, finish_reason: last ? finishReason : null };
        res.write(`data: ${JSON.stringify({ ...head, object: chat ? 'chat.completion.chunk' : 'text_completion', choices: [choice] })}\n\n`);
      }
      if ((body.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true) {
        res.write(`data: ${JSON.stringify({ ...head, object: chat ? 'chat.completion.chunk' : 'text_completion', choices: [], usage })}\n\n`);
      }
      res.end('data: [DONE]\n\n');
      return;
    }

    const text = Array.from({ length: n }, (_, i) => `t${i}`).join('');
    const choice: Record<string, unknown> = chat
      ? { index: 0, message: { role: 'assistant', content: text }, finish_reason: finishReason }
      : { index: 0, text, logprobs: null, finish_reason: finishReason };
    const answer: Record<string, unknown> = { ...head, object: chat ? 'chat.completion' : 'text_completion', choices: [choice], usage };
    if (isPrefillLeg && opts.kind === 'vllm' && !b.omitTransferParams) {
      const holdKey = `vllm:${requestId}`;
      if (!eos) world.holds.set(holdKey, false);
      answer.kv_transfer_params = eos
        ? null
        : {
            do_remote_prefill: true,
            do_remote_decode: false,
            remote_block_ids: [1, 2],
            remote_engine_id: `engine-${opts.id}`,
            remote_request_id: requestId,
            remote_host: '127.0.0.1',
            remote_port: port,
            tp_size: 1,
          };
    }
    if (isPrefillLeg && opts.kind === 'trtllm') {
      const state = `ctx:${opts.id}:${++holdSeq}`;
      if (!eos) world.holds.set(state, false);
      choice.disaggregated_params = {
        request_type: 'context_only',
        first_gen_tokens: [7],
        ctx_request_id: holdSeq,
        encoded_opaque_state: state,
        draft_tokens: null,
      };
    }
    if (isPrefillLeg && b.workerIdPayload) answer.worker_id = b.workerIdPayload;
    if (b.tokenDelayMs > 0) await sleep(b.tokenDelayMs * n);
    if (res.destroyed) return;
    if (directive === 'break') return void res.socket?.destroy();
    pulled();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
  }

  return {
    id: opts.id,
    kind: opts.kind,
    role: opts.role,
    url: `http://127.0.0.1:${port}`,
    port,
    received,
    aborted,
    active: () => active,
    behaviour,
    bootstrapHost: '127.0.0.1',
    bootstrapPort,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** The room as exact digits from the raw JSON text (a double would round it). */
function roomKey(rec: Received): string | undefined {
  const m = /"bootstrap_room":(\d+|\[[\d,]+\])/.exec(rec.text);
  return m ? m[1] : undefined;
}

function errorJson(message: string, code: string): string {
  return JSON.stringify({ error: { message, type: 'invalid_request_error', code } });
}
