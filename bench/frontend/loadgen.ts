// A loopback HTTP load generator for the frontend benchmark: closed loop (N requests in flight,
// as fast as the server answers) or open loop (a fixed arrival rate), always bounded by a request
// count and a time limit. Latency is measured from send to the last byte of the response.
import { Pool, type Dispatcher } from 'undici';
import { arrivalOffsetsMs, type ArrivalProcess } from './arrivals.js';
import { pace } from './pacer.js';

export interface LoadOptions {
  /** http://127.0.0.1:port: loopback only. */
  url: string;
  path: string;
  /** GET sends no body (a probe such as /live); POST by default. */
  method?: 'GET' | 'POST';
  body: string;
  /**
   * Each request's body has its first occurrence of this marker replaced by the request's index,
   * so no two bodies are alike (distinct user turns after a shared prefix) without holding a body
   * per request.
   */
  uniqueMarker?: string;
  /** Request bodies sent in turn (the i-th request sends bodies[i % length]); `body` when absent. */
  bodies?: readonly string[];
  /** Requests in flight (closed loop) or the connection count (open loop). */
  concurrency: number;
  /** Stop after this many requests... */
  requests: number;
  /** ...or after this long, whichever comes first. */
  maxMs: number;
  /** Open loop: requests per second; absent: closed loop. */
  ratePerS?: number;
  /** Open loop: evenly spaced sends (the default) or a Poisson process. */
  arrivals?: ArrivalProcess;
  headers?: Record<string, string>;
  /**
   * Trace each request: it is sent with X-Request-Id `${trace}${i}` (i its place in the run) and
   * the result has its send and done times (stage-probe.ts matches them to the router's).
   */
  trace?: string;
  /** The HTTP client: undici's `Pool.request` (the default) or its dispatch handler API (cheaper, see send()). */
  client?: LoadClient;
}

export type LoadClient = 'request' | 'dispatch';

/** A traced run's times per request, in send order: process.hrtime (ns, the machine's monotonic clock). */
export interface LoadTrace {
  sentNs: Float64Array;
  /** NaN for a failed request. */
  doneNs: Float64Array;
}

export interface LoadResult {
  completed: number;
  failed: number;
  elapsedS: number;
  rps: number;
  /** Per-request latency in ms, sorted. */
  latenciesMs: Float64Array;
  /** A sample failure, if any. */
  firstError?: string;
  trace?: LoadTrace;
}

export async function runLoad(o: LoadOptions): Promise<LoadResult> {
  const u = new URL(o.url);
  if (u.hostname !== '127.0.0.1' && u.hostname !== 'localhost' && u.hostname !== '[::1]') {
    throw new RangeError(`the load generator runs on loopback only, got ${o.url}`);
  }
  const pool = new Pool(u.origin, { connections: o.concurrency, pipelining: 1, keepAliveTimeout: 30_000 });
  const send = o.client === 'dispatch' ? sendDispatched : sendRequest;
  const latencies: number[] = [];
  let failed = 0;
  let firstError: string | undefined;
  let issued = 0;
  const started = performance.now();
  const deadline = started + o.maxMs;
  const headers = { 'content-type': 'application/json', ...o.headers };

  const pick = (i: number) => (o.bodies && o.bodies.length > 0 ? o.bodies[i % o.bodies.length] : o.body);
  const marked = o.uniqueMarker === undefined ? undefined : (o.bodies && o.bodies.length > 0 ? o.bodies : [o.body]).map((b) => splitOnce(b, o.uniqueMarker!));
  const bodyOf = (i: number) => {
    if (!marked) return pick(i);
    const [head, tail] = marked[i % marked.length];
    return tail === undefined ? head : `${head}${i}${tail}`;
  };
  const method = o.method ?? 'POST';
  const trace = o.trace === undefined ? undefined : { sentNs: new Float64Array(o.requests), doneNs: new Float64Array(o.requests).fill(Number.NaN) };
  const one = async (i: number): Promise<void> => {
    const body = bodyOf(i);
    const t0 = performance.now();
    if (trace) trace.sentNs[i] = Number(process.hrtime.bigint());
    try {
      const status = await send(pool, {
        method,
        path: o.path,
        body: method === 'GET' ? undefined : body,
        headers: trace ? { ...headers, 'x-request-id': `${o.trace}${i}` } : headers,
      });
      if (status !== 200) {
        failed++;
        firstError ??= `status ${status}`;
        return;
      }
      latencies.push(performance.now() - t0);
      if (trace) trace.doneNs[i] = Number(process.hrtime.bigint());
    } catch (err) {
      failed++;
      firstError ??= (err as Error).message;
    }
  };

  try {
    if (o.ratePerS === undefined) {
      const worker = async () => {
        while (issued < o.requests && performance.now() < deadline) {
          await one(issued++);
        }
      };
      await Promise.all(Array.from({ length: o.concurrency }, worker));
    } else {
      // Open loop: arrivals follow the schedule, not the answers (so queueing shows in latency).
      const inFlight = new Set<Promise<void>>();
      const offsets = arrivalOffsetsMs(o.requests, o.ratePerS, o.arrivals ?? 'uniform');
      const pacer = pace(offsets, () => {
        if (performance.now() >= deadline) return;
        const p = one(issued++).finally(() => inFlight.delete(p));
        inFlight.add(p);
      });
      const timeLimit = setTimeout(() => void pacer.stop(), Math.max(0, deadline - performance.now()));
      await pacer.done;
      clearTimeout(timeLimit);
      await pacer.stop();
      await Promise.all(inFlight);
    }
  } finally {
    await pool.close();
  }
  const elapsedS = (performance.now() - started) / 1000;
  const sorted = Float64Array.from(latencies).sort();
  const traced = trace && { sentNs: trace.sentNs.subarray(0, issued), doneNs: trace.doneNs.subarray(0, issued) };
  return {
    completed: latencies.length,
    failed,
    elapsedS,
    rps: latencies.length / elapsedS,
    latenciesMs: sorted,
    firstError,
    ...(traced ? { trace: traced } : {}),
  };
}

/** [before, after] the first `marker`; [text] without one. */
function splitOnce(text: string, marker: string): [string, string?] {
  const at = text.indexOf(marker);
  return at < 0 ? [text] : [text.slice(0, at), text.slice(at + marker.length)];
}

type Send = (pool: Pool, opts: Dispatcher.DispatchOptions) => Promise<number>;

/** undici's request(): resolves with the status once the body was read to its end. */
const sendRequest: Send = async (pool, opts) => {
  const res = await pool.request(opts);
  // Read to the end: a streamed answer counts when its last chunk arrived.
  for await (const _chunk of res.body) {
    // drain
  }
  return res.statusCode;
};

/**
 * undici's dispatch with a plain handler of its onConnect / onHeaders / onData / onComplete /
 * onError API (the one the router's engine client speaks, src/engines/engine-response.ts): no
 * Readable body, async iterator or abort bookkeeping per request. Resolves with the status once
 * the last byte arrived (onComplete), rejects with the transport's error.
 */
const sendDispatched: Send = (pool, opts) =>
  new Promise((resolve, reject) => {
    let status = 0;
    const handler = {
      onConnect() {},
      onHeaders(statusCode: number) {
        status = statusCode; // a 1xx head is followed by the real one
        return true;
      },
      onData() {
        return true; // every chunk is read and dropped
      },
      onComplete() {
        resolve(status);
      },
      onError: reject,
    };
    pool.dispatch(opts, handler as unknown as Dispatcher.DispatchHandler);
  });
