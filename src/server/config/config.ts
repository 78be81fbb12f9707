// The router's configuration: a JSON file and CLI flags, normalised and validated into one
// RouterConfig. Every mistake names its place (`workers[2].role ...`) so a deploy fails fast and
// clearly instead of routing to half a fleet.
import { readFile } from 'node:fs/promises';
import { describe, MAX_BLOCK_SIZE } from '../../util/validate.js';
import { ENGINE_KINDS, INDEXER_MODES, POLICY_NAMES, WORKER_ROLES, type EngineKind, type IndexerMode, type PolicyName, type WorkerRole } from '../../core/vocabulary.js';

export type { EngineKind, PolicyName, WorkerRole };

/** One engine worker as the registry knows it. */
export interface WorkerConfig {
  id: number;
  role: WorkerRole;
  kind: EngineKind;
  /** http(s)://host:port of the engine's OpenAI server. */
  baseUrl: string;
  dpSize: number;
  /** ZeroMQ PUB endpoint per dp rank (index = rank); empty: no KV events (approximate routing). */
  kvEvents: string[];
  /** ZeroMQ ROUTER replay endpoint per dp rank; empty: gaps cannot be replayed (index cleared). */
  replayEndpoints: string[];
  kvCapacityBlocks?: number;
  /** SGLang-style prefill: where decode meets prefill. */
  bootstrap?: { host: string; port: number };
}

export interface PoolRoutingConfig {
  policy: PolicyName;
  overlapScoreCredit: number;
  prefillLoadScale: number;
  temperature: number;
  busyDecodeFraction?: number;
  busyPrefillTokens?: number;
  maxQueuedPrefillTokens?: number;
}

export interface HealthConfig {
  /** Period of GET /health per worker; 0 disables checking (workers count as healthy). */
  intervalMs: number;
  timeoutMs: number;
  /** A worker unhealthy this long loses its blocks from the index. */
  blockGraceMs: number;
}

export interface SessionAffinityConfig {
  /** The request header carrying the session id (lower case). */
  header: string;
  /** A session unused this long is forgotten. */
  ttlMs: number;
  maxSessions: number;
}

export type TokenizerConfig = { type: 'byte' } | { type: 'huggingface'; path: string };

export interface RouterConfig {
  host: string;
  port: number;
  /** Served model names; the first is the default for requests without `model`. */
  models: string[];
  tokenizer: TokenizerConfig;
  /** Jinja chat template overriding the tokenizer's own (file contents, not a path). */
  chatTemplate?: string;
  blockSize: number;
  indexerMode: IndexerMode;
  /** Events-mode block cap of each pool's index (off when absent). */
  maxIndexedBlocks?: number;
  decode: PoolRoutingConfig;
  prefill: PoolRoutingConfig;
  /** Fail requests instead of serving them aggregated when no prefill worker exists. */
  enforceDisagg: boolean;
  /** Serve on the decode worker alone when the prefill leg fails. */
  fallbackToAggregated: boolean;
  /** Requests with the session header go where the session's earlier requests went (off when absent). */
  sessionAffinity?: SessionAffinityConfig;
  maxBodyBytes: number;
  /**
   * Bearer token of the admin API. Without one the admin API answers loopback clients only, and
   * when the router listens beyond loopback it is served on a listener of its own on 127.0.0.1.
   */
  adminToken?: string;
  /** That loopback admin listener's port (default: port + 1; 0 = any free one). */
  adminPort?: number;
  health: HealthConfig;
  /** Seed of routing ties (reproducible runs). */
  seed?: number;
  workers: WorkerConfig[];
}

/** A worker as written in a config file, a CLI flag or an admin request (before validation). */
export interface WorkerInput {
  id: number;
  role?: WorkerRole;
  kind?: EngineKind;
  baseUrl: string;
  dpSize?: number;
  /** One endpoint (rank r at port + r) or one per dp rank. */
  kvEvents?: string | string[];
  replayEndpoint?: string | string[];
  kvCapacityBlocks?: number;
  bootstrap?: { host: string; port: number };
}

/** The configuration as written (a JSON file, or what a library user passes to createRouter). */
export interface RouterConfigInput {
  host?: string;
  port?: number;
  model?: string;
  models?: string[];
  /** 'byte', a HuggingFace model directory, or { type, path }. */
  tokenizer?: string | TokenizerConfig;
  chatTemplate?: string;
  blockSize?: number;
  indexerMode?: IndexerMode;
  maxIndexedBlocks?: number;
  routing?: Partial<PoolRoutingConfig>;
  prefillRouting?: Partial<PoolRoutingConfig>;
  enforceDisagg?: boolean;
  fallbackToAggregated?: boolean;
  /** true (header x-session-id, 10 minutes, 100,000 sessions) or the settings to change. */
  sessionAffinity?: boolean | Partial<SessionAffinityConfig>;
  maxBodyBytes?: number;
  adminToken?: string;
  adminPort?: number;
  health?: Partial<HealthConfig>;
  seed?: number;
  workers?: WorkerInput[];
}

export const DEFAULT_PORT = 8000;
export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_MODEL = 'kvroute-sim';
export const DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024;

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

/** Normalises a config object (a parsed file, or what a library user passes) with defaults. */
export function parseRouterConfig(raw: unknown): RouterConfig {
  const c = obj(raw, 'config');
  knownKeys(c, 'config', [
    'host', 'port', 'model', 'models', 'tokenizer', 'chatTemplate', 'blockSize', 'indexerMode', 'maxIndexedBlocks',
    'routing', 'prefillRouting', 'enforceDisagg', 'fallbackToAggregated', 'sessionAffinity', 'maxBodyBytes', 'adminToken', 'adminPort', 'health',
    'seed', 'workers',
  ]);
  const decode = parsePoolRouting(c.routing, 'routing', defaultPoolRouting());
  const config: RouterConfig = {
    host: str(c.host ?? DEFAULT_HOST, 'host'),
    port: int(c.port ?? DEFAULT_PORT, 'port', 0, 65535),
    models: parseModels(c.model, c.models),
    tokenizer: parseTokenizer(c.tokenizer),
    chatTemplate: c.chatTemplate === undefined ? undefined : str(c.chatTemplate, 'chatTemplate'),
    blockSize: int(c.blockSize ?? 16, 'blockSize', 1, MAX_BLOCK_SIZE),
    indexerMode: oneOf(c.indexerMode ?? 'events', 'indexerMode', INDEXER_MODES),
    maxIndexedBlocks: c.maxIndexedBlocks === undefined ? undefined : int(c.maxIndexedBlocks, 'maxIndexedBlocks', 1, 2 ** 40),
    decode,
    // The prefill pool inherits the decode pool's settings unless told otherwise.
    prefill: parsePoolRouting(c.prefillRouting, 'prefillRouting', decode),
    enforceDisagg: bool(c.enforceDisagg ?? false, 'enforceDisagg'),
    fallbackToAggregated: bool(c.fallbackToAggregated ?? true, 'fallbackToAggregated'),
    sessionAffinity: parseSessionAffinity(c.sessionAffinity),
    maxBodyBytes: int(c.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES, 'maxBodyBytes', 1024, 1 << 30),
    adminToken: c.adminToken === undefined || c.adminToken === '' ? undefined : str(c.adminToken, 'adminToken'),
    adminPort: c.adminPort === undefined ? undefined : int(c.adminPort, 'adminPort', 0, 65535),
    health: parseHealth(c.health),
    seed: c.seed === undefined ? undefined : int(c.seed, 'seed', 0, 2 ** 32 - 1),
    workers: [],
  };
  const workers = c.workers ?? [];
  if (!Array.isArray(workers)) throw new TypeError(`workers must be an array, got ${describe(workers)}`);
  config.workers = workers.map((w, i) => parseWorkerConfig(w, `workers[${i}]`));
  checkUniqueIds(config.workers);
  return config;
}

export const DEFAULT_SESSION_HEADER = 'x-session-id';

function parseSessionAffinity(raw: unknown): SessionAffinityConfig | undefined {
  if (raw === undefined || raw === false) return undefined;
  const s = raw === true ? {} : obj(raw, 'sessionAffinity');
  knownKeys(s, 'sessionAffinity', ['header', 'ttlMs', 'maxSessions']);
  const header = str(s.header ?? DEFAULT_SESSION_HEADER, 'sessionAffinity.header').toLowerCase();
  if (!/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(header)) throw new TypeError(`sessionAffinity.header must be an HTTP header name, got '${header}'`);
  return {
    header,
    ttlMs: int(s.ttlMs ?? 600_000, 'sessionAffinity.ttlMs', 1, 86_400_000),
    maxSessions: int(s.maxSessions ?? 100_000, 'sessionAffinity.maxSessions', 1, 10_000_000),
  };
}

export function defaultPoolRouting(): PoolRoutingConfig {
  return { policy: 'kv', overlapScoreCredit: 1, prefillLoadScale: 1, temperature: 0 };
}

/** Validates one worker entry (from a file, a CLI flag or the admin API). */
export function parseWorkerConfig(raw: unknown, where = 'worker'): WorkerConfig {
  const w = obj(raw, where);
  knownKeys(w, where, ['id', 'role', 'kind', 'baseUrl', 'dpSize', 'kvEvents', 'replayEndpoint', 'kvCapacityBlocks', 'bootstrap']);
  const dpSize = int(w.dpSize ?? 1, `${where}.dpSize`, 1, 0xffff);
  const worker: WorkerConfig = {
    id: int(w.id, `${where}.id`, 0, Number.MAX_SAFE_INTEGER),
    role: oneOf(w.role ?? 'aggregated', `${where}.role`, WORKER_ROLES),
    kind: oneOf(w.kind ?? 'vllm', `${where}.kind`, ENGINE_KINDS),
    baseUrl: httpUrl(w.baseUrl, `${where}.baseUrl`),
    dpSize,
    kvEvents: endpointsPerRank(w.kvEvents, `${where}.kvEvents`, dpSize),
    replayEndpoints: endpointsPerRank(w.replayEndpoint, `${where}.replayEndpoint`, dpSize),
    kvCapacityBlocks: w.kvCapacityBlocks === undefined ? undefined : int(w.kvCapacityBlocks, `${where}.kvCapacityBlocks`, 1, 2 ** 40),
  };
  if (w.bootstrap !== undefined && w.bootstrap !== null) {
    const b = obj(w.bootstrap, `${where}.bootstrap`);
    worker.bootstrap = { host: str(b.host, `${where}.bootstrap.host`), port: int(b.port, `${where}.bootstrap.port`, 1, 65535) };
  }
  if (worker.replayEndpoints.length > 0 && worker.kvEvents.length === 0) {
    throw new TypeError(`${where}.replayEndpoint needs ${where}.kvEvents (replay only repairs an event stream)`);
  }
  return worker;
}

/**
 * Parses the compact worker syntax of `--worker`: comma-separated key=value pairs, e.g.
 * `id=1,role=prefill,kind=vllm,url=http://10.0.0.1:8000,events=tcp://10.0.0.1:5557,replay=tcp://10.0.0.1:5600,dp=2,capacity=16384,bootstrap=10.0.0.1:8998`.
 */
export function parseWorkerFlag(spec: string): WorkerConfig {
  const raw: Record<string, unknown> = {};
  const aliases: Record<string, string> = {
    id: 'id', role: 'role', kind: 'kind', url: 'baseUrl', events: 'kvEvents', replay: 'replayEndpoint',
    dp: 'dpSize', capacity: 'kvCapacityBlocks', bootstrap: 'bootstrap',
  };
  for (const part of spec.split(',')) {
    const eq = part.indexOf('=');
    if (eq <= 0) throw new TypeError(`--worker '${spec}': expected key=value pairs, got '${part}'`);
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    const field = aliases[key];
    if (!field) throw new TypeError(`--worker '${spec}': unknown key '${key}' (one of ${Object.keys(aliases).join(', ')})`);
    if (field === 'id' || field === 'dpSize' || field === 'kvCapacityBlocks') {
      raw[field] = value === '' ? value : Number(value);
    } else if (field === 'kvEvents' || field === 'replayEndpoint') {
      raw[field] = value.includes('|') ? value.split('|') : value;
    } else if (field === 'bootstrap') {
      const colon = value.lastIndexOf(':');
      if (colon <= 0) throw new TypeError(`--worker '${spec}': bootstrap must be host:port, got '${value}'`);
      raw.bootstrap = { host: value.slice(0, colon), port: Number(value.slice(colon + 1)) };
    } else {
      raw[field] = value;
    }
  }
  return parseWorkerConfig(raw, `--worker '${spec}'`);
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
  return {
    host: c.host,
    port: c.port,
    models: c.models,
    tokenizer: c.tokenizer,
    chatTemplate: c.chatTemplate,
    blockSize: c.blockSize,
    indexerMode: c.indexerMode,
    maxIndexedBlocks: c.maxIndexedBlocks,
    routing: c.decode,
    prefillRouting: c.prefill,
    enforceDisagg: c.enforceDisagg,
    fallbackToAggregated: c.fallbackToAggregated,
    sessionAffinity: c.sessionAffinity,
    maxBodyBytes: c.maxBodyBytes,
    adminToken: c.adminToken,
    adminPort: c.adminPort,
    health: c.health,
    seed: c.seed,
    workers: c.workers.map(workerToInput),
  };
}

export function workerToInput(w: WorkerConfig): WorkerInput {
  return {
    id: w.id,
    role: w.role,
    kind: w.kind,
    baseUrl: w.baseUrl,
    dpSize: w.dpSize,
    kvEvents: w.kvEvents.length ? w.kvEvents : undefined,
    replayEndpoint: w.replayEndpoints.length ? w.replayEndpoints : undefined,
    kvCapacityBlocks: w.kvCapacityBlocks,
    bootstrap: w.bootstrap,
  };
}

/**
 * A single endpoint means "rank r publishes on port + r" (PROTOCOLS.md 2); an array lists one
 * endpoint per rank explicitly.
 */
function endpointsPerRank(value: unknown, where: string, dpSize: number): string[] {
  if (value === undefined || value === null || value === '') return [];
  if (typeof value === 'string') {
    const base = zmqTcp(value, where);
    return Array.from({ length: dpSize }, (_, r) => `tcp://${base.host}:${base.port + r}`);
  }
  if (!Array.isArray(value)) throw new TypeError(`${where} must be an endpoint string or an array of them, got ${describe(value)}`);
  if (value.length !== dpSize) throw new RangeError(`${where} lists ${value.length} endpoints but dpSize is ${dpSize}`);
  return value.map((v, i) => {
    const e = zmqTcp(v, `${where}[${i}]`);
    return `tcp://${e.host}:${e.port}`;
  });
}

function zmqTcp(value: unknown, where: string): { host: string; port: number } {
  if (typeof value !== 'string') throw new TypeError(`${where} must be a string like tcp://host:port, got ${describe(value)}`);
  const m = /^tcp:\/\/(\[[^\]]+\]|[^:/]+):(\d+)$/.exec(value);
  if (!m) throw new TypeError(`${where} must look like tcp://host:port, got '${value}'`);
  const port = Number(m[2]);
  if (port < 1 || port > 65535) throw new RangeError(`${where} port must be in [1, 65535], got ${port}`);
  return { host: m[1], port };
}

function httpUrl(value: unknown, where: string): string {
  if (typeof value !== 'string') throw new TypeError(`${where} must be a URL string, got ${describe(value)}`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError(`${where} must be an http(s) URL, got '${value}'`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`${where} must be an http(s) URL, got '${value}'`);
  return value.replace(/\/+$/, '');
}

function parseModels(model: unknown, models: unknown): string[] {
  if (model !== undefined && models !== undefined) throw new TypeError('give either model or models, not both');
  const list = models ?? (model === undefined ? [DEFAULT_MODEL] : [model]);
  if (!Array.isArray(list) || list.length === 0) throw new TypeError(`models must be a non-empty array of names, got ${describe(list)}`);
  return list.map((m, i) => {
    if (typeof m !== 'string' || m.length === 0) throw new TypeError(`models[${i}] must be a non-empty string, got ${describe(m)}`);
    return m;
  });
}

function parseTokenizer(value: unknown): TokenizerConfig {
  if (value === undefined || value === 'byte') return { type: 'byte' };
  if (typeof value === 'string') return { type: 'huggingface', path: value };
  const t = obj(value, 'tokenizer');
  const type = oneOf(t.type, 'tokenizer.type', ['byte', 'huggingface'] as const);
  if (type === 'byte') return { type };
  return { type, path: str(t.path, 'tokenizer.path') };
}

function parsePoolRouting(value: unknown, where: string, base: PoolRoutingConfig): PoolRoutingConfig {
  if (value === undefined) return { ...base };
  const r = obj(value, where);
  knownKeys(r, where, ['policy', 'overlapScoreCredit', 'prefillLoadScale', 'temperature', 'busyDecodeFraction', 'busyPrefillTokens', 'maxQueuedPrefillTokens']);
  return {
    policy: oneOf(r.policy ?? base.policy, `${where}.policy`, POLICY_NAMES),
    overlapScoreCredit: num(r.overlapScoreCredit ?? base.overlapScoreCredit, `${where}.overlapScoreCredit`, 0, 1e6),
    prefillLoadScale: num(r.prefillLoadScale ?? base.prefillLoadScale, `${where}.prefillLoadScale`, 0, 1e6),
    temperature: num(r.temperature ?? base.temperature, `${where}.temperature`, 0, 1e6),
    busyDecodeFraction: optNum(r.busyDecodeFraction ?? base.busyDecodeFraction, `${where}.busyDecodeFraction`, 0, 1e6),
    busyPrefillTokens: optNum(r.busyPrefillTokens ?? base.busyPrefillTokens, `${where}.busyPrefillTokens`, 0, 2 ** 53),
    maxQueuedPrefillTokens: optNum(r.maxQueuedPrefillTokens ?? base.maxQueuedPrefillTokens, `${where}.maxQueuedPrefillTokens`, 0, 2 ** 53),
  };
}

function parseHealth(value: unknown): HealthConfig {
  const h = value === undefined ? {} : obj(value, 'health');
  knownKeys(h, 'health', ['intervalMs', 'timeoutMs', 'blockGraceMs']);
  return {
    intervalMs: int(h.intervalMs ?? 5000, 'health.intervalMs', 0, 3_600_000),
    timeoutMs: int(h.timeoutMs ?? 2000, 'health.timeoutMs', 1, 600_000),
    blockGraceMs: int(h.blockGraceMs ?? 30_000, 'health.blockGraceMs', 0, 86_400_000),
  };
}

// --- small typed readers; each error names the field ---

function obj(value: unknown, where: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TypeError(`${where} must be an object, got ${describe(value)}`);
  }
  return value as Record<string, unknown>;
}

function knownKeys(o: Record<string, unknown>, where: string, keys: readonly string[]): void {
  for (const k of Object.keys(o)) {
    if (!keys.includes(k)) throw new TypeError(`${where}: unknown field '${k}' (known: ${keys.join(', ')})`);
  }
}

function str(value: unknown, where: string): string {
  if (typeof value !== 'string' || value.length === 0) throw new TypeError(`${where} must be a non-empty string, got ${describe(value)}`);
  return value;
}

function bool(value: unknown, where: string): boolean {
  if (typeof value !== 'boolean') throw new TypeError(`${where} must be true or false, got ${describe(value)}`);
  return value;
}

function int(value: unknown, where: string, min: number, max: number): number {
  if (typeof value !== 'number') throw new TypeError(`${where} must be a number, got ${describe(value)}`);
  if (!Number.isInteger(value) || value < min || value > max) throw new RangeError(`${where} must be an integer in [${min}, ${max}], got ${value}`);
  return value;
}

function num(value: unknown, where: string, min: number, max: number): number {
  if (typeof value !== 'number') throw new TypeError(`${where} must be a number, got ${describe(value)}`);
  if (!Number.isFinite(value) || value < min || value > max) throw new RangeError(`${where} must be a number in [${min}, ${max}], got ${value}`);
  return value;
}

function optNum(value: unknown, where: string, min: number, max: number): number | undefined {
  return value === undefined || value === null ? undefined : num(value, where, min, max);
}

function oneOf<T extends string>(value: unknown, where: string, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !allowed.includes(value as T)) {
    throw new TypeError(`${where} must be one of ${allowed.join(', ')}, got ${typeof value === 'string' ? `'${value}'` : describe(value)}`);
  }
  return value as T;
}
