// Per-request timestamps of the uWS frontend, for benchmarks that split a request's latency into
// the router's own work and the rest (bench/peers/smg/stage-probe.ts). Published on a diagnostics
// channel only while something subscribes to it, so an ordinary router pays one boolean check per
// request. Times are process.hrtime.bigint() (CLOCK_MONOTONIC, the same clock in every process).
import { channel } from 'node:diagnostics_channel';

export const REQUEST_TIMES_CHANNEL = 'kvroute:http:request-times';

/** What the channel carries for each answered request. */
export interface RequestTimes {
  /** The client's X-Request-Id header, when it sent one. */
  requestId: string | undefined;
  /** uWS called the route handler (the request head was read). */
  receivedNs: bigint;
  /** The body was complete and handed to the router (equal to receivedNs for a bodyless request). */
  bodyNs: bigint;
  /** The response's last bytes were handed to uWS (res.end). */
  endedNs: bigint;
  status: number;
}

export const requestTimes = channel(REQUEST_TIMES_CHANNEL);

/** A request's times so far, kept on its response state while the channel has subscribers. */
export interface PendingTimes {
  requestId: string | undefined;
  receivedNs: bigint;
  bodyNs: bigint;
}

export function beginTimes(requestId: string | undefined): PendingTimes | undefined {
  if (!requestTimes.hasSubscribers) return undefined;
  const now = process.hrtime.bigint();
  return { requestId, receivedNs: now, bodyNs: now };
}

export function publishTimes(t: PendingTimes, status: number): void {
  const times: RequestTimes = { requestId: t.requestId, receivedNs: t.receivedNs, bodyNs: t.bodyNs, endedNs: process.hrtime.bigint(), status };
  requestTimes.publish(times);
}
