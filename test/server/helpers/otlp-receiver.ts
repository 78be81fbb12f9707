// An OTLP trace receiver on 127.0.0.1 for the tracing tests (the OpenTelemetry Collector cannot be
// installed here). OTLP/HTTP with protobuf bodies is decoded with the official proto definitions
// (the protobufjs root generated from opentelemetry-proto, as @opentelemetry/otlp-transformer
// 0.215 ships it), OTLP/HTTP with JSON bodies as the OTLP JSON mapping says (ids in hex), and
// OTLP/gRPC through @grpc/grpc-js with the same generated messages.
import { createRequire } from 'node:module';
import { createServer, type IncomingMessage, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';

const require = createRequire(import.meta.url);
interface Message {
  decode(bytes: Uint8Array): unknown;
  encode(value: unknown): { finish(): Uint8Array };
  toObject(m: unknown, o: Record<string, unknown>): unknown;
}
const root = require('otlp-proto-root/build/src/generated/root.js') as {
  opentelemetry: { proto: { collector: { trace: { v1: { ExportTraceServiceRequest: Message; ExportTraceServiceResponse: Message } } } } };
};
const { ExportTraceServiceRequest, ExportTraceServiceResponse } = root.opentelemetry.proto.collector.trace.v1;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind number: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  events: Array<{ name: string; attributes: Record<string, string | number | boolean> }>;
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  status: { code: number; message?: string };
  /** The resource's attributes (service.name, ...). */
  resource: Record<string, string | number | boolean>;
}

/** An OTLP request as plain data: ids as hex strings, enums as numbers (protobuf and JSON alike). */
interface OtlpRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: OtlpKeyValue[] };
    scopeSpans?: Array<{ spans?: OtlpSpan[] }>;
  }>;
}
interface OtlpKeyValue {
  key: string;
  value: { stringValue?: string; intValue?: number | string; doubleValue?: number; boolValue?: boolean };
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: OtlpKeyValue[];
  events?: Array<{ name: string; attributes?: OtlpKeyValue[] }>;
  status?: { code?: number; message?: string };
}

function attributeValue(v: OtlpKeyValue['value']): string | number | boolean {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  throw new Error(`unexpected attribute value ${JSON.stringify(v)}`);
}

function attributesOf(kvs: OtlpKeyValue[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const kv of kvs ?? []) out[kv.key] = attributeValue(kv.value);
  return out;
}

function spansOf(req: OtlpRequest): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of req.resourceSpans ?? []) {
    const resource = attributesOf(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        out.push({
          traceId: s.traceId,
          spanId: s.spanId,
          parentSpanId: s.parentSpanId ?? '',
          name: s.name,
          kind: s.kind,
          attributes: attributesOf(s.attributes),
          events: (s.events ?? []).map((e) => ({ name: e.name, attributes: attributesOf(e.attributes) })),
          status: { code: s.status?.code ?? 0, message: s.status?.message || undefined },
          resource,
        });
      }
    }
  }
  return out;
}

/** Protobuf bytes to plain data: bytes fields (the ids) as hex, 64-bit integers as numbers. */
function decodeProtobuf(bytes: Uint8Array): OtlpRequest {
  const m = ExportTraceServiceRequest.decode(bytes);
  const hex = (v: unknown): unknown => (v instanceof Uint8Array ? Buffer.from(v).toString('hex') : v);
  const plain = ExportTraceServiceRequest.toObject(m, { longs: Number, enums: Number, bytes: Array, defaults: false }) as OtlpRequest;
  // toObject gives bytes as arrays of numbers: back to hex strings.
  for (const rs of plain.resourceSpans ?? []) {
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        for (const k of ['traceId', 'spanId', 'parentSpanId'] as const) {
          const v = s[k] as unknown;
          if (Array.isArray(v)) (s as unknown as Record<string, unknown>)[k] = hex(Uint8Array.from(v as number[]));
        }
      }
    }
  }
  return plain;
}

export interface OtlpReceiver {
  /** The OTLP/HTTP traces URL (…/v1/traces). */
  readonly url: string;
  readonly spans: ReceivedSpan[];
  /** Content types of the requests received (application/x-protobuf, application/json, grpc). */
  readonly contentTypes: string[];
  close(): Promise<void>;
}

async function bodyOf(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

export async function startHttpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const server: HttpServer = createServer((req, res) => {
    void (async () => {
      const body = await bodyOf(req);
      const type = (req.headers['content-type'] ?? '').split(';')[0].trim();
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      contentTypes.push(type);
      if (type === 'application/x-protobuf') {
        spans.push(...spansOf(decodeProtobuf(body)));
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end(Buffer.from(ExportTraceServiceResponse.encode({}).finish()));
      } else if (type === 'application/json') {
        spans.push(...spansOf(JSON.parse(body.toString('utf8')) as OtlpRequest));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } else {
        res.writeHead(415).end();
      }
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    spans,
    contentTypes,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export async function startGrpcReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const server = new grpc.Server();
  const service: grpc.ServiceDefinition = {
    Export: {
      path: '/opentelemetry.proto.collector.trace.v1.TraceService/Export',
      requestStream: false,
      responseStream: false,
      requestSerialize: (v: unknown) => Buffer.from(ExportTraceServiceRequest.encode(v).finish()),
      requestDeserialize: (b: Buffer) => b,
      responseSerialize: (v: unknown) => Buffer.from(ExportTraceServiceResponse.encode(v).finish()),
      responseDeserialize: (b: Buffer) => ExportTraceServiceResponse.decode(b),
    },
  };
  server.addService(service, {
    Export: (call: grpc.ServerUnaryCall<Buffer, unknown>, done: grpc.sendUnaryData<unknown>) => {
      contentTypes.push('grpc');
      spans.push(...spansOf(decodeProtobuf(call.request)));
      done(null, {});
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    contentTypes,
    close: () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())),
  };
}
