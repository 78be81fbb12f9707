// The router process's side of stage-probe.ts: per request the uWS frontend's times
// (src/server/http/request-times.ts) and the engine call's from undici's diagnostics channels,
// the process's GC pauses on the same clock, and its threads. Loaded by
// kvroute-router-process.mjs only with KVROUTE_PEERS_ROUTER_STAGES set. Every time is
// process.hrtime in ns (CLOCK_MONOTONIC, shared with the load generator's process). Requests are
// told apart by their X-Request-Id, `<run>.<i>` as the load generator's trace option sends them:
// the times go into a preallocated array at row i, so the probe keeps no per-request objects
// alive between scavenges (which would change the very GC behaviour it looks at).
// @ts-check
import { subscribe } from 'node:diagnostics_channel';
import { readdirSync, readFileSync } from 'node:fs';
import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, getHeapStatistics } from 'node:v8';
import { REQUEST_TIMES_CHANNEL } from '../../../dist/server/http/request-times.js';

/** The entries per GC pause in take()'s gc. */
export const GC_FIELDS = /** @type {const} */ (['startNs', 'durationNs', 'kind', 'flags', 'youngCapacity', 'youngUsed', 'external']);
/** The columns of a request's row, in order. */
export const STAGE_FIELDS = /** @type {const} */ (['recv', 'body', 'create', 'headers', 'written', 'head', 'engineDone', 'ended']);
const MAX_ROWS = 1 << 16;

export function recordStages() {
  const width = STAGE_FIELDS.length;
  const rows = new Float64Array(MAX_ROWS * width).fill(Number.NaN);
  let used = 0;
  /** @type {number[]} engine connections: flat pairs, the connect's start and its end (ns) */
  let connects = [];
  /** @type {WeakMap<object, number>} */
  const connecting = new WeakMap();
  /** @type {number[]} per pause GC_FIELDS.length entries: start ns, duration ns, kind, flags, then (read when the observer runs, after the pause) the young generation's capacity and use and the external memory, bytes */
  let gc = [];
  /** Row of a request id `<run>.<i>`, or -1. */
  const rowOf = (/** @type {unknown} */ id) => {
    if (typeof id !== 'string') return -1;
    const i = Number(id.slice(id.lastIndexOf('.') + 1));
    return Number.isInteger(i) && i >= 0 && i < MAX_ROWS ? i : -1;
  };
  const set = (/** @type {number} */ row, /** @type {number} */ field, /** @type {number} */ ns) => {
    if (row < 0 || !Number.isNaN(rows[row * width + field])) return;
    rows[row * width + field] = ns;
    if (row >= used) used = row + 1;
  };
  /** The engine request's X-Request-Id (undici keeps headers as a flat [name, value, ...] array). */
  const idOf = (/** @type {{ headers?: unknown }} */ request) => {
    const h = request.headers;
    if (!Array.isArray(h)) return undefined;
    for (let i = 0; i + 1 < h.length; i += 2) if (h[i] === 'x-request-id') return h[i + 1];
    return undefined;
  };
  subscribe(REQUEST_TIMES_CHANNEL, (m) => {
    const t = /** @type {import('../../../src/server/http/request-times.js').RequestTimes} */ (m);
    const row = rowOf(t.requestId);
    set(row, 0, Number(t.receivedNs));
    set(row, 1, Number(t.bodyNs));
    set(row, 7, Number(t.endedNs));
  });
  const engine = (/** @type {number} */ field) => (/** @type {any} */ m) => set(rowOf(idOf(m.request)), field, Number(process.hrtime.bigint()));
  subscribe('undici:request:create', engine(2));
  subscribe('undici:client:sendHeaders', engine(3));
  subscribe('undici:request:bodySent', engine(4));
  subscribe('undici:request:headers', engine(5));
  subscribe('undici:request:trailers', engine(6));
  // New connections to the engines (a request that finds every kept-alive connection busy waits for one).
  subscribe('undici:client:beforeConnect', (/** @type {any} */ m) => connecting.set(m.connectParams, Number(process.hrtime.bigint())));
  subscribe('undici:client:connected', (/** @type {any} */ m) => connects.push(connecting.get(m.connectParams) ?? Number.NaN, Number(process.hrtime.bigint())));
  // performance.now() is ms since the process's time origin: map it onto hrtime once.
  const originNs = Number(process.hrtime.bigint()) - performance.now() * 1e6;
  new PerformanceObserver((list) => {
    const young = getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
    const external = /** @type {any} */ (getHeapStatistics()).external_memory ?? Number.NaN;
    for (const e of list.getEntries()) {
      const detail = /** @type {any} */ (e).detail;
      gc.push(
        originNs + e.startTime * 1e6,
        e.duration * 1e6,
        detail?.kind ?? 0,
        detail?.flags ?? 0,
        young ? young.space_used_size + young.space_available_size : Number.NaN,
        young?.space_used_size ?? Number.NaN,
        external,
      );
    }
  }).observe({ entryTypes: ['gc'] });
  return {
    /** The rows written since the last take (row i: request `<run>.<i>`, STAGE_FIELDS' order), the GC pauses, the threads now. */
    take() {
      const out = { fields: STAGE_FIELDS, gcFields: GC_FIELDS, rows: Array.from(rows.subarray(0, used * width)), gc, connects, threads: threadNames() };
      connects = [];
      rows.fill(Number.NaN, 0, used * width);
      used = 0;
      gc = [];
      return out;
    },
  };
}

function threadNames() {
  try {
    return readdirSync('/proc/self/task').map((t) => readFileSync(`/proc/self/task/${t}/comm`, 'utf8').trim());
  } catch {
    return [];
  }
}
