// `kvroute/events`: KV event ingestion, the public surface of src/events.
export { EventIngest, endpointForRank, endpointsPerRank, type EventIngestOptions, type IngestWorkerSpec, type WorkerIngestStats } from './ingest.js';
export {
  DecodeError,
  decodeEventBatch,
  type DecodedBatch,
  type DecodeResult,
  type KvCacheEvent,
  type StoredEvent,
  type RemovedEvent,
  type ClearedEvent,
} from './decode.js';
export type { IndexerPort } from './apply.js';
export type { IngestCounters } from './counters.js';
export type { SubscriberState } from './subscriber.js';
export type { IngestIncident } from './incidents.js';
