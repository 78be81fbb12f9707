// The server's public surface: createRouter (the library entry), its frontends and adapters, and
// the configuration it reads.
export { createRouter, type CreateRouterOptions, type Router } from './app.js';
export { loadConfigFile, parseRouterConfig, parseWorkerConfig, type RouterConfig, type RouterConfigInput, type WorkerConfig, type WorkerInput } from './config.js';
export { listenUws, type ListenOptions, type RunningServer } from './uws.js';
export { nodeHandler, type NodeHandler } from './adapters/node-http.js';
export { fetchHandler, type FetchHandler, type FetchInfo } from './adapters/fetch.js';
export { fastifyPlugin } from './adapters/fastify.js';
export type { FrameStream, HttpCall, HttpReply } from './http.js';
export { RouterMetrics } from './metrics.js';
export type { WorkerRegistry, WorkerStatus } from './registry.js';
export { startServer, type StartedServer, type StartOptions } from './start.js';
export { startEmbeddedFleet, type EmbeddedFleet, type EmbeddedFleetOptions } from './embedded.js';
