// A timer read off an injected clock: real timers in the server, virtual ones in the offline
// replay (which advances its own clock and fires them between simulated events). Code that takes
// a `clock` for time takes `Timers` beside it, so nothing it schedules escapes virtual time.

export interface Timers {
  /** Calls `fn` once, when the clock reads `atMs` or later; returns a function that cancels it. */
  at(atMs: number, fn: () => void): () => void;
}

/**
 * Node's timers over `clock` (ms): the delay is `atMs - clock()`. Unref'd, so a pending timer
 * never keeps a process alive. A timer may fire a little before the clock reads `atMs` (Node
 * rounds to the ms): callers check the time again and re-arm.
 */
export function realTimers(clock: () => number): Timers {
  return {
    at(atMs, fn) {
      const timer = setTimeout(fn, Math.max(1, Math.ceil(atMs - clock())));
      timer.unref?.();
      return () => clearTimeout(timer);
    },
  };
}
