// Starts a CallHandler behind each frontend (uWebSockets.js, node:http, Express, Fastify, Hono)
// on a loopback port chosen by the OS, so one test suite can run against all of them.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import express from 'express';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { fastifyPlugin } from '../../../src/server/http/adapters/fastify.js';
import { fetchHandler } from '../../../src/server/http/adapters/fetch.js';
import { nodeHandler } from '../../../src/server/http/adapters/node-http.js';
import type { HttpCall, HttpReply } from '../../../src/server/call/call.js';
import { listenUws } from '../../../src/server/http/uws.js';

export interface TestHandler {
  handle(call: HttpCall): Promise<HttpReply>;
  serves?(method: string, path: string): boolean;
  readonly config: { readonly maxBodyBytes: number };
}

export interface Frontend {
  url: string;
  close(): Promise<void>;
}

export type FrontendName = 'uws' | 'node:http' | 'express' | 'express+json' | 'fastify' | 'hono';
export const FRONTENDS: FrontendName[] = ['uws', 'node:http', 'express', 'express+json', 'fastify', 'hono'];

export async function startFrontend(name: FrontendName, handler: TestHandler): Promise<Frontend> {
  switch (name) {
    case 'uws': {
      const s = await listenUws(handler, { host: '127.0.0.1', port: 0 });
      return { url: s.url, close: () => s.close() };
    }
    case 'node:http':
      return listenNode(createServer(nodeHandler(handler)));
    case 'express': {
      // The recommended mounting: kvroute first (it reads and limits its own bodies), the host's
      // routes and body parsers after it.
      const app = express();
      app.use(nodeHandler(handler));
      app.use(express.json());
      app.get('/host-route', (_req, res) => {
        res.json({ host: true });
      });
      return listenNode(createServer(app));
    }
    case 'express+json': {
      // An app that parses JSON before kvroute: the adapter reuses the parsed body.
      const app = express();
      app.use(express.json());
      app.use(nodeHandler(handler));
      return listenNode(createServer(app));
    }
    case 'fastify': {
      const app = Fastify({ forceCloseConnections: true });
      await app.register(fastifyPlugin(handler));
      await app.listen({ host: '127.0.0.1', port: 0 });
      const port = (app.server.address() as AddressInfo).port;
      return { url: `http://127.0.0.1:${port}`, close: () => app.close() };
    }
    case 'hono': {
      const app = new Hono<{ Bindings: { incoming: { socket: { remoteAddress?: string } } } }>();
      const h = fetchHandler(handler);
      app.all('*', (c) => h(c.req.raw, { remoteAddress: c.env.incoming.socket.remoteAddress }));
      return new Promise((resolve) => {
        const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info) => {
          resolve({
            url: `http://127.0.0.1:${info.port}`,
            close: () =>
              new Promise<void>((r) => {
                (server as Server).closeAllConnections?.();
                server.close(() => r());
              }),
          });
        });
      });
    }
  }
}

function listenNode(server: Server): Promise<Frontend> {
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as AddressInfo).port;
      resolve({
        url: `http://127.0.0.1:${port}`,
        close: () =>
          new Promise<void>((r) => {
            server.closeAllConnections();
            server.close(() => r());
          }),
      });
    });
  });
}
