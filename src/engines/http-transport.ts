// The leg transport over HTTP: each leg is an OpenAI-style POST to its worker's engine through
// the shared keep-alive EngineClients. A worker with data parallelism gets the chosen rank in
// vLLM's X-data-parallel-rank header.
import type { EngineCallOptions, EngineClients, EngineStream } from './http-client.js';
import type { Leg, LegTransport, SessionCall } from './transport.js';

/** SGLang's open_session sizes a session's text capacity; the router knows no better bound than a long context. */
const SESSION_CAPACITY_CHARS = 1 << 22;

export class HttpTransport implements LegTransport {
  constructor(readonly clients: EngineClients) {}

  json(leg: Leg): Promise<unknown> {
    return this.clients.get(leg.worker.baseUrl).postJson(leg.route, leg.body, callOf(leg));
  }

  stream(leg: Leg): Promise<EngineStream> {
    return this.clients.get(leg.worker.baseUrl).postStream(leg.route, leg.body, callOf(leg));
  }

  /** SGLang workers: POST /open_session or /close_session. vLLM and TensorRT-LLM have no session API. */
  async session(call: SessionCall): Promise<void> {
    if (call.worker.kind !== 'sglang') return;
    const client = this.clients.get(call.worker.baseUrl);
    if (call.action === 'open') {
      const body: Record<string, unknown> = { capacity_of_str_len: SESSION_CAPACITY_CHARS, session_id: call.sessionId };
      if (call.timeoutS !== undefined) body.timeout = call.timeoutS;
      await client.postControl('/open_session', body, { requestId: call.requestId });
    } else {
      await client.postControl('/close_session', { session_id: call.sessionId }, { requestId: call.requestId });
    }
  }
}

function callOf(leg: Leg): EngineCallOptions {
  const headers = leg.worker.dpSize > 1 ? { 'x-data-parallel-rank': String(leg.dpRank) } : undefined;
  return { requestId: leg.requestId, signal: leg.signal, headers, onSent: leg.onSent, trace: leg.trace };
}
