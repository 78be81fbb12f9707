// The server's public surface: createRouter (the library entry), its frontends and adapters, and
// the configuration it reads.
export { createRouter, type CreateRouterOptions, type DrainOptions, type DrainResult, type Router } from './app/router.js';
export {
  loadConfigFile,
  parseRouterConfig,
  parseWorkerConfig,
  type RouterConfig,
  type RouterConfigInput,
  type WorkerConfig,
  type WorkerInput,
} from './config/config.js';
export { listenUws, type ListenOptions, type RunningServer } from './http/uws.js';
export { nodeHandler, type NodeHandler } from './http/adapters/node-http.js';
export { fetchHandler, type FetchHandler, type FetchInfo } from './http/adapters/fetch.js';
export { fastifyPlugin } from './http/adapters/fastify.js';
export type { FrameStream, HttpCall, HttpReply } from './call/call.js';
export { RouterMetrics } from './observability/metrics.js';
export { createLogger, type LoggerOptions } from './observability/logger.js';
export { LOG_LEVELS, silentLogger, type Logger, type LogLevel } from '../util/logger.js';
export { parseApiKeys, type ApiKey } from './access/api-keys.js';
export type { WorkerRegistry, WorkerStatus } from './fleet/registry.js';
export { startServer, type StartedServer, type StartOptions } from './app/start.js';
export { startEmbeddedFleet, type EmbeddedFleet, type EmbeddedFleetOptions } from './app/embedded.js';
