// The engine worker entry: the config file's `workers`, `POST /admin/workers` and `--worker`.
import { Type } from '@sinclair/typebox';
import { ENGINE_KINDS, WORKER_ROLES } from '../../core/vocabulary.js';
import { defaulted, oneOf } from './declare.js';
import { text } from './schema-common.js';

/** http:// or https:// (any case), then something. */
const HTTP_URL = '^[Hh][Tt][Tt][Pp][Ss]?://.+';
/** tcp://host:port, host a name, an IPv4 address or a bracketed IPv6 address. */
const TCP_ENDPOINT = '^tcp://(\\[[^\\]]+\\]|[^:/]+):\\d+$';

function endpoints(description: string, key: string) {
  const one = Type.String({ pattern: TCP_ENDPOINT, expected: 'an endpoint like tcp://host:port' });
  return Type.Union([one, Type.Array(one)], {
    description,
    key,
    expected: 'an endpoint like tcp://host:port, or an array of them (one per dp rank)',
  });
}

/** One engine worker: in the config file's `workers`, in `POST /admin/workers`, and as `--worker key=value,...`. */
export const WorkerSchema = Type.Object(
  {
    id: Type.Integer({
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      key: 'id',
      description: 'Unique id of the worker: the worker hints of requests and the metrics name it.',
    }),
    role: defaulted(oneOf(WORKER_ROLES, { default: 'aggregated', key: 'role', description: 'What the worker does: prefill, decode, or both (aggregated).' })),
    kind: defaulted(oneOf(ENGINE_KINDS, { default: 'vllm', key: 'kind', description: 'The engine the worker runs; it decides the prefill/decode handoff.' })),
    baseUrl: Type.String({
      pattern: HTTP_URL,
      key: 'url',
      expected: 'an http(s) URL',
      description: "The engine's OpenAI-compatible server, http(s)://host:port (a path prefix is kept).",
    }),
    dpSize: defaulted(Type.Integer({ minimum: 1, maximum: 0xffff, default: 1, key: 'dp', description: 'Data-parallel ranks the worker runs.' })),
    kvEvents: Type.Optional(
      endpoints(
        "ZeroMQ PUB endpoint of the worker's KV events: one for all ranks (rank r on port + r), or one per rank. Without it the router predicts the worker's cache from its own decisions.",
        'events',
      ),
    ),
    replayEndpoint: Type.Optional(
      endpoints(
        'ZeroMQ ROUTER endpoint of the KV event replay service (one, rank r on port + r, or one per rank); needs kvEvents. Without it a gap in the events clears the index.',
        'replay',
      ),
    ),
    kvCapacityBlocks: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 2 ** 40, key: 'capacity', description: "The worker's KV cache size in blocks (for busyDecodeFraction)." }),
    ),
    bootstrap: Type.Optional(
      Type.Object(
        { host: text(), port: Type.Integer({ minimum: 1, maximum: 65535 }) },
        {
          additionalProperties: false,
          key: 'bootstrap',
          description: 'SGLang prefill workers: where decode workers meet the prefill (host:port in --worker).',
        },
      ),
    ),
  },
  { additionalProperties: false },
);
