// When each request of an open-loop load is sent, as offsets from the start: evenly spaced (a
// constant rate, the overhead target's load) or a Poisson process at the same mean rate (bursty,
// as independent clients are). Seeded, so a run can be repeated.

export type ArrivalProcess = 'uniform' | 'poisson';

/** Send times in ms from the start, ascending, for `count` requests at `ratePerS` on average. */
export function arrivalOffsetsMs(count: number, ratePerS: number, process: ArrivalProcess, seed = 1): Float64Array {
  if (!Number.isInteger(count) || count < 0) throw new RangeError(`count must be a non-negative integer, got ${count}`);
  if (!(ratePerS > 0) || !Number.isFinite(ratePerS)) throw new RangeError(`ratePerS must be a positive number, got ${ratePerS}`);
  const gapMs = 1000 / ratePerS;
  const out = new Float64Array(count);
  if (process === 'uniform') {
    for (let i = 0; i < count; i++) out[i] = i * gapMs;
    return out;
  }
  const random = xorshift32(seed);
  let t = 0;
  for (let i = 0; i < count; i++) {
    out[i] = t;
    t += -Math.log(1 - random()) * gapMs; // exponential gaps: 1 - u is in (0, 1]
  }
  return out;
}

/** Uniform numbers in [0, 1) from a 32-bit xorshift generator. */
function xorshift32(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 2 ** 32;
  };
}
