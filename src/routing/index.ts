// `kvroute/routing`: routing orchestration (the public surface of src/routing; see README.md for the
// invariants) and the engine clients a KvRouter sends its legs through. Booking guards, request
// trackers and the handoff internals are not exported: they are how the routers keep their
// invariants, not something to build on.
export {
  PrefillRouter,
  type PrefillRouterOptions,
  type PrefillRouterStats,
  type PrefillRouterEvent,
  type RequestDone,
  type RouteQuery,
  type ServeMode,
  type PoolName,
} from './prefill-router.js';
export { QueueFullError, DEFAULT_QUEUE_SETTINGS, type QueueSettings, type QueueStats, type QueueEvent, type QueueRejection } from './queue/admission-queue.js';
export { QUEUE_POLICIES, type QueuePolicy } from './queue/queue-order.js';
export { DEFAULT_CONDITIONAL_DISAGG, MODE_REASONS, type ConditionalDisaggSettings, type ModeReason } from './prefill/mode.js';
export type { SchedulingHints, SessionControlHint } from './scheduling-hints.js';
export type { SessionControl, SessionControlOptions, SessionControlStats } from './session-control.js';
export {
  KvRouter,
  type KvRouterOptions,
  type KvRouterStats,
  type LegOptions,
  type LegRoute,
  type LegRetry,
  type BookOptions,
  type LegBody,
} from './kv-router.js';
export { Booking, type KvRouterCore } from './booking.js';
export {
  WorkerPool,
  UnknownPoolWorkerError,
  type PoolCore,
  type WorkerState,
  type WorkerPoolOptions,
  type EjectionEvent,
  type ReturnEvent,
} from './worker-pool.js';
export type { OutlierDetectionOptions, OutlierStatus, EjectionReason, LegOutcome } from './outlier-detection.js';
export { parseRoutingHints, InvalidRoutingHintError, HINT_HEADERS, type HeaderBag, type HintOptions, type RoutingHints } from './hints.js';
export { SessionAffinity, type SessionAffinityOptions, type SessionAffinityStats, type SessionBinding, type BoundWorker } from './session-affinity.js';
export { validateRouterRequest, type RouterRequest, type RoutedResponse } from './router-request.js';
export { StreamAbandonedError } from './booking-guard.js';
export { DisaggregationRequiredError, PrefillUnusableError, UnknownWorkerHintError } from './errors.js';
export * from '../engines/index.js';
