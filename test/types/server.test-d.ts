// The public API of `kvroute/server`.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import { describe, expectTypeOf, it } from 'vitest';
import * as server from 'kvroute/server';
import {
  createRouter,
  fetchHandler,
  listenUws,
  nodeHandler,
  startServer,
  type HttpCall,
  type HttpReply,
  type RouterConfigInput,
  type Router,
  type RunningServer,
  type StartedServer,
} from 'kvroute/server';

describe('kvroute/server', () => {
  it('builds a router from a config and serves it through any frontend', async () => {
    expectTypeOf(createRouter).parameters.toEqualTypeOf<[input?: RouterConfigInput, opts?: server.CreateRouterOptions]>();
    const router = await createRouter({ model: 'm' });
    expectTypeOf(router).toEqualTypeOf<Router>();
    expectTypeOf(router.handle).toEqualTypeOf<(call: HttpCall) => Promise<HttpReply>>();
    expectTypeOf(listenUws(router)).toEqualTypeOf<Promise<RunningServer>>();
    expectTypeOf(fetchHandler(router)).returns.toEqualTypeOf<Promise<Response>>();
    expectTypeOf(startServer).returns.toEqualTypeOf<Promise<StartedServer>>();
  });

  it('gives node:http and Express handlers', async () => {
    const handler = nodeHandler(await createRouter());
    expectTypeOf(handler).toExtend<(req: IncomingMessage, res: ServerResponse) => void>();
    expectTypeOf(handler).toExtend<RequestHandler>();
  });

  it("keeps the composition root's classes internal", () => {
    expectTypeOf(server).not.toHaveProperty('RouterImpl');
    expectTypeOf(server).not.toHaveProperty('EMBEDDED_KV_BLOCKS');
  });
});
