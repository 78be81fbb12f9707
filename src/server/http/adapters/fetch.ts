// A Web-standard handler, Request -> streamed Response, for Hono, Bun/Deno-style servers and any
// framework that speaks fetch. The SSE body is a ReadableStream with a high-water mark of zero:
// it pulls a frame from the engine only when the consumer asks for one (backpressure), and its
// cancel() (client gone) cancels the engine legs and frees the booking.
import { FrameBatcher, type HttpCall, type HttpReply } from '../../call/call.js';

export interface FetchCallHandler {
  handle(call: HttpCall): Promise<HttpReply>;
}

export interface FetchInfo {
  /** Peer address when the host server knows it (needed for the loopback-only admin API). */
  remoteAddress?: string;
}

export type FetchHandler = (request: Request, info?: FetchInfo) => Promise<Response>;

/** `app.all('*', (c) => handler(c.req.raw, { remoteAddress: c.env?.incoming?.socket?.remoteAddress }))` in Hono. */
export function fetchHandler(router: FetchCallHandler): FetchHandler {
  return async (request, info) => {
    const url = new URL(request.url);
    const controller = new AbortController();
    const onClientAbort = () => controller.abort();
    if (request.signal.aborted) controller.abort();
    else request.signal.addEventListener('abort', onClientAbort, { once: true });
    const headers: Record<string, string> = {};
    request.headers.forEach((v, k) => {
      headers[k] = v;
    });
    const call: HttpCall = {
      method: request.method.toUpperCase(),
      url: url.pathname + url.search,
      headers,
      body: request.body as unknown as AsyncIterable<Uint8Array> | null,
      remoteAddress: info?.remoteAddress,
      signal: controller.signal,
    };
    const reply = await router.handle(call);
    if (!reply.stream) {
      request.signal.removeEventListener('abort', onClientAbort);
      return new Response(reply.body ?? '', { status: reply.status, headers: reply.headers });
    }
    const stream = reply.stream;
    const batcher = new FrameBatcher(stream);
    const encoder = new TextEncoder();
    const body = new ReadableStream<Uint8Array>(
      {
        async pull(ctrl) {
          const { text, done } = await batcher.nextBatch();
          if (text !== '') ctrl.enqueue(encoder.encode(text));
          if (done) {
            request.signal.removeEventListener('abort', onClientAbort);
            ctrl.close();
          }
        },
        cancel() {
          controller.abort();
          stream.cancel();
        },
      },
      { highWaterMark: 0 },
    );
    return new Response(body, { status: reply.status, headers: reply.headers });
  };
}
