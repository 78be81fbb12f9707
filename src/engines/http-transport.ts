// The leg transport over HTTP: each leg is an OpenAI-style POST to its worker's engine through
// the shared keep-alive EngineClients. A worker with data parallelism gets the chosen rank in
// vLLM's X-data-parallel-rank header.
import type { EngineCallOptions, EngineClients, EngineStream } from './http-client.js';
import type { Leg, LegTransport } from './transport.js';

export class HttpTransport implements LegTransport {
  constructor(readonly clients: EngineClients) {}

  json(leg: Leg): Promise<unknown> {
    return this.clients.get(leg.worker.baseUrl).postJson(leg.route, leg.body, callOf(leg));
  }

  stream(leg: Leg): Promise<EngineStream> {
    return this.clients.get(leg.worker.baseUrl).postStream(leg.route, leg.body, callOf(leg));
  }
}

function callOf(leg: Leg): EngineCallOptions {
  const headers = leg.worker.dpSize > 1 ? { 'x-data-parallel-rank': String(leg.dpRank) } : undefined;
  return { requestId: leg.requestId, signal: leg.signal, headers, onSent: leg.onSent };
}
