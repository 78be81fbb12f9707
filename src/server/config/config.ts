// The router's configuration: a JSON file, CLI flags or a library user's object, checked whole
// against the declarations of schema.ts, given their defaults, and normalised into one
// RouterConfig. Every mistake names its place (`workers[2].role ...`) so a deploy fails fast and
// clearly instead of routing to half a fleet. What a schema cannot say (model or models, endpoint
// counts per dp rank, unique worker ids) is checked here, after the schema.
import { readFile } from 'node:fs/promises';
import type { Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import type { EngineKind, PolicyName, WorkerRole } from '../../core/vocabulary.js';
import { redactUrl } from '../../util/logger.js';
import { check } from './check.js';
import type { Resolved } from './declare.js';
import {
  type ConditionalDisaggSchema,
  type HealthSchema,
  type KubernetesDiscoverySchema,
  type OutlierDetectionSchema,
  type PoolRoutingSchema,
  type ReplicasSchema,
  RouterConfigSchema,
  type RouterQueueSchema,
  SessionAffinitySchema,
  WorkerSchema,
} from './schema.js';
import { checkLabelSelector } from './label-selector.js';

export type { EngineKind, PolicyName, WorkerRole };

/** A worker as written in a config file, a CLI flag or an admin request (before defaults). */
export type WorkerInput = Static<typeof WorkerSchema>;
/** The configuration as written: a JSON file, or what a library user passes to createRouter. */
export type RouterConfigInput = Static<typeof RouterConfigSchema>;

export type PoolRoutingConfig = Resolved<typeof PoolRoutingSchema.properties>;
export type HealthConfig = Resolved<typeof HealthSchema.properties>;
export type OutlierDetectionConfig = Resolved<typeof OutlierDetectionSchema.properties>;
export type SessionAffinityConfig = Resolved<typeof SessionAffinitySchema.properties>;
export type RouterQueueConfig = Resolved<typeof RouterQueueSchema.properties>;
export type ConditionalDisaggConfig = Resolved<typeof ConditionalDisaggSchema.properties>;
export type ReplicasConfig = Resolved<typeof ReplicasSchema.properties>;
export type KubernetesDiscoveryConfig = Resolved<typeof KubernetesDiscoverySchema.properties>;
export type TokenizerConfig = Exclude<Static<typeof RouterConfigSchema.properties.tokenizer>, string>;

/** One engine worker as the registry knows it: its event endpoints listed per dp rank. */
export type WorkerConfig = Omit<Resolved<typeof WorkerSchema.properties>, 'kvEvents' | 'replayEndpoint'> & {
  /** ZeroMQ PUB endpoint per dp rank (index = rank); empty: no KV events (approximate routing). */
  kvEvents: string[];
  /** ZeroMQ ROUTER replay endpoint per dp rank; empty: gaps cannot be replayed (index cleared). */
  replayEndpoints: string[];
};

/** The settings whose normalised form differs from what is written; every other one is carried as it is. */
const RESHAPED = ['$schema', 'model', 'models', 'tokenizer', 'routing', 'prefillRouting', 'sessionAffinity', 'adminToken', 'workers'] as const;
type Reshaped = (typeof RESHAPED)[number];

export type RouterConfig = Omit<
  Resolved<typeof RouterConfigSchema.properties>,
  Reshaped | 'health' | 'outlierDetection' | 'routerQueue' | 'conditionalDisagg' | 'replicas' | 'discovery'
> & {
  /** The router queue of each pool (off without a threshold). */
  routerQueue: RouterQueueConfig;
  conditionalDisagg: ConditionalDisaggConfig;
  /** Served model names; the first is the default for requests without `model`. */
  models: string[];
  tokenizer: TokenizerConfig;
  /** Routing of the decode pool (decode and aggregated workers): the file's `routing`. */
  decode: PoolRoutingConfig;
  /** Routing of the prefill pool: the file's `prefillRouting` over `routing`. */
  prefill: PoolRoutingConfig;
  /** Off when absent. */
  sessionAffinity?: SessionAffinityConfig;
  adminToken?: string;
  health: HealthConfig;
  outlierDetection: OutlierDetectionConfig;
  /** Off when absent (the schema's defaults applied inside). */
  replicas?: ReplicasConfig;
  workers: WorkerConfig[];
  /** Workers discovered at runtime (the schema's defaults applied inside); off when absent. */
  discovery?: { kubernetes?: KubernetesDiscoveryConfig };
};

/** Loads and validates a JSON config file. */
export async function loadConfigFile(path: string): Promise<RouterConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new Error(`cannot read config file ${path}: ${(err as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new TypeError(`config file ${path} is not valid JSON: ${(err as Error).message}`);
  }
  return parseRouterConfig(raw);
}

/** Checks a config object (a parsed file, or what a library user passes) and normalises it with defaults. */
export function parseRouterConfig(raw: unknown): RouterConfig {
  check(RouterConfigSchema, raw, { root: 'config', prefix: '' });
  if (raw.model !== undefined && raw.models !== undefined) throw new TypeError('give either model or models, not both');
  const c = Value.Default(RouterConfigSchema, Value.Clone(raw)) as Resolved<typeof RouterConfigSchema.properties>;
  const config = carried(c, RouterConfigSchema.properties) as RouterConfig;
  config.models = c.model !== undefined ? [c.model] : c.models;
  config.tokenizer = typeof c.tokenizer !== 'string' ? c.tokenizer : c.tokenizer === 'byte' ? { type: 'byte' } : { type: 'huggingface', path: c.tokenizer };
  config.decode = c.routing as PoolRoutingConfig;
  // The prefill pool inherits the decode pool's settings unless told otherwise.
  config.prefill = overlay(config.decode, raw.prefillRouting ?? {});
  const session = raw.sessionAffinity;
  if (session !== undefined && session !== false) {
    const s = Value.Default(SessionAffinitySchema, session === true ? {} : Value.Clone(session)) as SessionAffinityConfig;
    s.header = s.header.toLowerCase();
    config.sessionAffinity = s;
  }
  if (c.adminToken !== undefined && c.adminToken !== '') config.adminToken = c.adminToken;
  if (config.adminToken !== undefined && c.adminTokenFile !== undefined) throw new TypeError('give either adminToken or adminTokenFile, not both');
  const replicas = config.replicas;
  if (replicas !== undefined && replicas.ttlMs < 2 * replicas.heartbeatMs) {
    throw new RangeError(
      `replicas.ttlMs (${replicas.ttlMs}) must be at least twice replicas.heartbeatMs (${replicas.heartbeatMs}): one late heartbeat must not release a replica's bookings`,
    );
  }
  if (replicas !== undefined && replicas.snapshotIntervalMs > 0 && replicas.snapshotIntervalMs < 1000) {
    throw new RangeError(
      `replicas.snapshotIntervalMs must be 0 (never) or at least 1000, got ${replicas.snapshotIntervalMs}: each snapshot dumps the whole index`,
    );
  }
  const kube = config.discovery?.kubernetes;
  if (kube !== undefined) {
    checkLabelSelector(kube.selector, 'discovery.kubernetes.selector');
    if (kube.retryMaxMs < kube.retryBaseMs)
      throw new RangeError(`discovery.kubernetes.retryMaxMs (${kube.retryMaxMs}) must be at least discovery.kubernetes.retryBaseMs (${kube.retryBaseMs})`);
  }
  config.workers = c.workers.map((w, i) => normaliseWorker(w as Resolved<typeof WorkerSchema.properties>, `workers[${i}]`));
  checkUniqueIds(config.workers);
  const od = config.outlierDetection;
  if (od.maxEjectionTimeMs < od.baseEjectionTimeMs) {
    throw new RangeError(
      `outlierDetection.maxEjectionTimeMs (${od.maxEjectionTimeMs}) must be at least outlierDetection.baseEjectionTimeMs (${od.baseEjectionTimeMs})`,
    );
  }
  return config;
}

/**
 * Workers can join after the start (the admin API when allowed; discovery, when configured, adds
 * its own source here): an empty fleet is then a router waiting for workers, not a mistake.
 */
export function workersCanArrive(config: RouterConfig): boolean {
  return config.allowEmptyFleet || config.discovery?.kubernetes !== undefined;
}

/** Checks one worker entry (from a file, a CLI flag or the admin API) whole, then normalises it. */
export function parseWorkerConfig(raw: unknown, where = 'worker'): WorkerConfig {
  check(WorkerSchema, raw, where);
  return normaliseWorker(Value.Default(WorkerSchema, Value.Clone(raw)) as Resolved<typeof WorkerSchema.properties>, where);
}

function normaliseWorker(w: Resolved<typeof WorkerSchema.properties>, where: string): WorkerConfig {
  const worker = carried(w, WorkerSchema.properties, ['kvEvents', 'replayEndpoint']) as WorkerConfig;
  worker.baseUrl = httpUrl(w.baseUrl, `${where}.baseUrl`);
  worker.kvEvents = endpointsPerRank(w.kvEvents, `${where}.kvEvents`, w.dpSize);
  worker.replayEndpoints = endpointsPerRank(w.replayEndpoint, `${where}.replayEndpoint`, w.dpSize);
  if (worker.replayEndpoints.length > 0 && worker.kvEvents.length === 0) {
    throw new TypeError(`${where}.replayEndpoint needs ${where}.kvEvents (replay only repairs an event stream)`);
  }
  return worker;
}

export function checkUniqueIds(workers: readonly WorkerConfig[]): void {
  const seen = new Set<number>();
  for (const w of workers) {
    if (seen.has(w.id)) throw new RangeError(`worker id ${w.id} appears twice`);
    seen.add(w.id);
  }
}

/** RouterConfig (normalised) back to the input shape parseRouterConfig reads. */
export function configToInput(c: RouterConfig): RouterConfigInput {
  const input = carried(c, RouterConfigSchema.properties) as RouterConfigInput;
  input.models = c.models;
  input.tokenizer = c.tokenizer;
  input.routing = c.decode;
  input.prefillRouting = c.prefill;
  if (c.sessionAffinity) input.sessionAffinity = c.sessionAffinity;
  if (c.adminToken !== undefined) input.adminToken = c.adminToken;
  input.workers = c.workers.map(workerToInput);
  return input;
}

export function workerToInput(w: WorkerConfig): WorkerInput {
  const input = carried(w, WorkerSchema.properties, ['kvEvents', 'replayEndpoint']) as WorkerInput;
  if (w.kvEvents.length) input.kvEvents = w.kvEvents;
  if (w.replayEndpoints.length) input.replayEndpoint = w.replayEndpoints;
  return input;
}

/** The declared settings of `from` that are carried over as they are (present ones only). */
function carried(from: object, declared: object, reshaped: readonly string[] = RESHAPED): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(declared)) {
    const value = (from as Record<string, unknown>)[key];
    if (value !== undefined && !reshaped.includes(key)) out[key] = value;
  }
  return out;
}

/** `base` with the fields `over` sets. */
function overlay<T extends object>(base: T, over: object): T {
  const out = Object.assign({}, base) as Record<string, unknown>;
  for (const [k, v] of Object.entries(over)) if (v !== undefined) out[k] = v;
  return out as T;
}

/**
 * A single endpoint means "rank r publishes on port + r" (PROTOCOLS.md 2); an array lists one
 * endpoint per rank explicitly. The schema checked their form; this checks ports and counts.
 */
function endpointsPerRank(value: string | string[] | undefined, where: string, dpSize: number): string[] {
  if (value === undefined) return [];
  if (typeof value === 'string') {
    const base = zmqTcp(value, where);
    return Array.from({ length: dpSize }, (_, r) => `tcp://${base.host}:${base.port + r}`);
  }
  if (value.length !== dpSize) throw new RangeError(`${where} lists ${value.length} endpoints but dpSize is ${dpSize}`);
  return value.map((v, i) => {
    const e = zmqTcp(v, `${where}[${i}]`);
    return `tcp://${e.host}:${e.port}`;
  });
}

function zmqTcp(value: string, where: string): { host: string; port: number } {
  const m = /^tcp:\/\/(\[[^\]]+\]|[^:/]+):(\d+)$/.exec(value);
  if (!m) throw new TypeError(`${where} must be an endpoint like tcp://host:port, got '${value}'`);
  const port = Number(m[2]);
  if (port < 1 || port > 65535) throw new RangeError(`${where} port must be in [1, 65535], got ${port}`);
  return { host: m[1], port };
}

function httpUrl(value: string, where: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError(`${where} must be an http(s) URL, got '${redactUrl(value)}'`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`${where} must be an http(s) URL, got '${redactUrl(value)}'`);
  // The engine client refuses these; refusing them here keeps a worker from being half added.
  if (url.username || url.password) throw new TypeError(`${where} must not carry credentials (user:password@), got '${redactUrl(value)}'`);
  if (url.search || url.hash) throw new TypeError(`${where} must not carry a query or a fragment, got '${value}'`);
  return value.replace(/\/+$/, '');
}
