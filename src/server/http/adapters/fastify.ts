// A Fastify plugin: `await app.register(fastifyPlugin(router))`. It serves the router's routes
// through the raw Node request/response (reply.hijack()), so streaming, backpressure, disconnects
// and the body limit behave exactly as in the node:http adapter. Within the plugin's scope the
// body is left unparsed: the router reads and limits it itself.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { nodeHandler, type NodeCallHandler } from './node-http.js';

// Structural types of the few Fastify APIs used, so kvroute does not depend on Fastify's types.
interface FastifyLikeRequest {
  raw: IncomingMessage;
}
interface FastifyLikeReply {
  raw: ServerResponse;
  hijack(): void;
}
interface FastifyLikeInstance {
  removeAllContentTypeParsers(): void;
  addContentTypeParser(type: string, fn: (req: unknown, payload: unknown, done: (err: Error | null, body?: unknown) => void) => void): void;
  route(opts: { method: string[]; url: string; handler: (req: FastifyLikeRequest, reply: FastifyLikeReply) => void }): void;
}

const METHODS = ['GET', 'POST', 'DELETE', 'PUT', 'PATCH', 'HEAD', 'OPTIONS'];

export function fastifyPlugin(router: NodeCallHandler): (app: FastifyLikeInstance) => Promise<void> {
  const handle = nodeHandler(router);
  return async (app) => {
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', (_req, _payload, done) => done(null));
    app.route({
      method: METHODS,
      url: '/*',
      handler: (req, reply) => {
        reply.hijack();
        handle(req.raw, reply.raw);
      },
    });
  };
}
