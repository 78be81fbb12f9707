// What a pod says about the worker it runs, read from its labels, annotations, named container
// ports and status (docs/kubernetes.md, "Discovery"). Pure: no client, no clock. A pod that names
// something impossible is never a worker; the verdict names the key, for the log line.
import { createHash } from 'node:crypto';
import { isIPv6 } from 'node:net';
import { parseWorkerConfig, type WorkerConfig } from '../config/config.js';
import { ENGINE_KINDS, WORKER_ROLES, type EngineKind, type WorkerRole } from '../../core/vocabulary.js';

/** The labels, annotations and port names discovery reads. */
export const POD_KEYS = {
  role: 'kvroute.io/role',
  llmdRole: 'llm-d.ai/role',
  engine: 'kvroute.io/engine',
  dpSize: 'kvroute.io/dp-size',
  kvBlocks: 'kvroute.io/kv-blocks',
  model: 'kvroute.io/model',
  httpPort: 'http',
  eventsPort: 'kv-events',
  replayPort: 'kv-replay',
  bootstrapPort: 'bootstrap',
} as const;

/** llm-d's role values (its `llm-d.ai/role` label): `both` serves the two phases. */
const LLMD_ROLES: Record<string, WorkerRole> = { prefill: 'prefill', decode: 'decode', both: 'aggregated' };

/** The parts of a Kubernetes Pod that discovery reads (a list gives typed objects, a watch plain JSON: both fit). */
export interface PodLike {
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    deletionTimestamp?: unknown;
  };
  spec?: { containers?: Array<{ name?: string; ports?: Array<{ name?: string; containerPort?: number; protocol?: string }> }> };
  status?: {
    podIP?: string;
    conditions?: Array<{ type?: string; status?: string }>;
    containerStatuses?: Array<{ name?: string; restartCount?: number; containerID?: string }>;
  };
}

export type PodVerdict =
  /** A worker: in selection when `ready`. `incarnation` changes when its engine restarted (a new pod IP, a container restart). */
  | { kind: 'worker'; config: WorkerConfig; ready: boolean; incarnation: string }
  /** Not a worker yet (no pod IP, or not Ready and never seen Ready with one). */
  | { kind: 'waiting'; why: string }
  /** Never a worker as it is: a key with a bad value, no `http` port, another model. */
  | { kind: 'skipped'; key: string; why: string };

/** namespace/name: how log lines and /admin/workers name the pod. */
export function podName(pod: PodLike): string {
  return `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;
}

/**
 * A discovered worker's id: 53 bits of the SHA-256 of its pod's uid. Every router replica derives
 * the same id for the same pod (their shared bookings name workers by id), a recreated pod (a new
 * uid) is a new worker, and a clash with a configured id (small integers) is as good as impossible.
 */
export function workerIdOf(uid: string): number {
  const digest = createHash('sha256').update(uid).digest();
  return Number(digest.readBigUInt64BE(0) & ((1n << 53n) - 1n));
}

export interface PodReading {
  /** The served model names: a pod naming another model (kvroute.io/model) is skipped. */
  models: readonly string[];
}

/** Reads a pod as a worker. */
export function readPod(pod: PodLike, o: PodReading): PodVerdict {
  const labels = pod.metadata?.labels ?? {};
  const notes = pod.metadata?.annotations ?? {};
  const uid = pod.metadata?.uid;
  if (!uid) return { kind: 'skipped', key: 'metadata.uid', why: 'the pod has no uid' };
  const model = notes[POD_KEYS.model];
  if (model !== undefined && !o.models.includes(model))
    return { kind: 'skipped', key: POD_KEYS.model, why: `it serves '${model}', not ${o.models.map((m) => `'${m}'`).join(' or ')}` };

  const role = roleOf(labels);
  if (typeof role !== 'string') return role;
  const engine = labels[POD_KEYS.engine] ?? 'vllm';
  if (!(ENGINE_KINDS as readonly string[]).includes(engine))
    return { kind: 'skipped', key: POD_KEYS.engine, why: `'${engine}' is not one of ${ENGINE_KINDS.join(', ')}` };
  const dpSize = integerNote(notes, POD_KEYS.dpSize, 1, 0xffff);
  if (typeof dpSize === 'object') return dpSize;
  const kvBlocks = integerNote(notes, POD_KEYS.kvBlocks, 1, 2 ** 40);
  if (typeof kvBlocks === 'object') return kvBlocks;

  const ports = namedPorts(pod);
  const http = ports.get(POD_KEYS.httpPort);
  if (!http) return { kind: 'skipped', key: `port ${POD_KEYS.httpPort}`, why: `no container port is named '${POD_KEYS.httpPort}'` };
  const events = ports.get(POD_KEYS.eventsPort);
  const replay = ports.get(POD_KEYS.replayPort);
  if (replay && !events)
    return {
      kind: 'skipped',
      key: `port ${POD_KEYS.replayPort}`,
      why: `a '${POD_KEYS.replayPort}' port needs a '${POD_KEYS.eventsPort}' port (replay only repairs an event stream)`,
    };
  for (const [name, p] of [
    [POD_KEYS.eventsPort, events],
    [POD_KEYS.replayPort, replay],
  ] as const) {
    // With dp ranks, rank r is on port + r (PROTOCOLS.md 2).
    if (p && p.port + (dpSize ?? 1) - 1 > 65535) return { kind: 'skipped', key: `port ${name}`, why: `port ${p.port} + ${POD_KEYS.dpSize} ranks passes 65535` };
  }

  const ip = pod.status?.podIP;
  const ready = isReady(pod);
  if (!ip) return { kind: 'waiting', why: 'no pod IP yet' };
  const host = isIPv6(ip) ? `[${ip}]` : ip;
  const bootstrap = ports.get(POD_KEYS.bootstrapPort);
  let config: WorkerConfig;
  try {
    config = parseWorkerConfig(
      {
        id: workerIdOf(uid),
        role,
        kind: engine as EngineKind,
        baseUrl: `http://${host}:${http.port}`,
        ...(dpSize !== undefined ? { dpSize } : {}),
        ...(kvBlocks !== undefined ? { kvCapacityBlocks: kvBlocks } : {}),
        ...(events ? { kvEvents: `tcp://${host}:${events.port}` } : {}),
        ...(replay ? { replayEndpoint: `tcp://${host}:${replay.port}` } : {}),
        ...(bootstrap ? { bootstrap: { host: ip, port: bootstrap.port } } : {}),
      },
      `pod ${podName(pod)}`,
    );
  } catch (err) {
    return { kind: 'skipped', key: 'status.podIP', why: (err as Error).message };
  }
  return { kind: 'worker', config, ready, incarnation: incarnationOf(pod, ip, http.container) };
}

/** Ready: the Ready condition is True and the pod is not being deleted. */
function isReady(pod: PodLike): boolean {
  if (pod.metadata?.deletionTimestamp) return false;
  return (pod.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

function roleOf(labels: Record<string, string>): WorkerRole | PodVerdict {
  const own = labels[POD_KEYS.role];
  if (own !== undefined) {
    if ((WORKER_ROLES as readonly string[]).includes(own)) return own as WorkerRole;
    return { kind: 'skipped', key: POD_KEYS.role, why: `'${own}' is not one of ${WORKER_ROLES.join(', ')}` };
  }
  const llmd = labels[POD_KEYS.llmdRole];
  if (llmd !== undefined) {
    const role = LLMD_ROLES[llmd];
    if (role) return role;
    return { kind: 'skipped', key: POD_KEYS.llmdRole, why: `'${llmd}' is not one of ${Object.keys(LLMD_ROLES).join(', ')}` };
  }
  return 'aggregated';
}

/** An integer annotation in [min, max]; undefined when absent; a skip verdict when malformed. */
function integerNote(notes: Record<string, string>, key: string, min: number, max: number): number | undefined | PodVerdict {
  const raw = notes[key];
  if (raw === undefined) return undefined;
  const n = /^\s*\d{1,16}\s*$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) return { kind: 'skipped', key, why: `'${raw}' is not an integer in [${min}, ${max}]` };
  return n;
}

/** The TCP container ports by name (the first of a name wins, as Kubernetes requires names unique per pod). */
function namedPorts(pod: PodLike): Map<string, { port: number; container: string }> {
  const out = new Map<string, { port: number; container: string }>();
  for (const c of pod.spec?.containers ?? []) {
    for (const p of c.ports ?? []) {
      if (!p.name || typeof p.containerPort !== 'number' || (p.protocol !== undefined && p.protocol !== 'TCP')) continue;
      if (!out.has(p.name)) out.set(p.name, { port: p.containerPort, container: c.name ?? '' });
    }
  }
  return out;
}

/** The engine's incarnation: the pod IP and its container's id and restart count. */
function incarnationOf(pod: PodLike, ip: string, container: string): string {
  const s = (pod.status?.containerStatuses ?? []).find((c) => c.name === container);
  return `${ip}|${s?.containerID ?? ''}|${s?.restartCount ?? 0}`;
}
