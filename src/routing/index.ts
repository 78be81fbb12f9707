// Routing orchestration: the public surface of src/routing (see README.md for the invariants).
export { PrefillRouter, type PrefillRouterOptions, type PrefillRouterStats, type PrefillRouterEvent, type RequestDone, type RouteQuery, type ServeMode } from './prefill-router.js';
export { KvRouter, type KvRouterOptions, type KvRouterStats, type LegOptions, type LegRoute } from './kv-router.js';
export { Booking, type KvRouterCore } from './booking.js';
export { WorkerPool, UnknownPoolWorkerError, validateWorkerInfo, type PoolCore, type WorkerState } from './worker-pool.js';
export { parseRoutingHints, InvalidRoutingHintError, HINT_HEADERS, type HeaderBag, type HintOptions, type RoutingHints } from './hints.js';
export { SessionAffinity, type SessionAffinityOptions, type SessionAffinityStats, type SessionBinding, type BoundWorker } from './session-affinity.js';
export { validateRouterRequest, type RouterRequest, type RoutedResponse } from './router-request.js';
export { RequestTracker, type Phase, type PhaseRouting, type TrackerSummary } from './request-tracker.js';
export { BookingGuard, GuardedStream, StreamAbandonedError, type FreeReason } from './booking-guard.js';
export { DisaggregationRequiredError, PrefillUnusableError, UnknownWorkerHintError } from './errors.js';
