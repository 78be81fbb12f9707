// Counts and ids read from the addon's Float64Array result buffers, stored as V8 small integers.

/** The largest integer V8 keeps as a small integer (31-bit Smis with pointer compression). */
export const SMI_MAX = 2 ** 30 - 1;

/**
 * `v` (a whole number >= 0 read from a Float64Array) as a Smi when it fits: a field V8 once saw a
 * double in is boxed, a heap number per value of every later object of that shape.
 */
export function smallInt(v: number): number {
  return v <= SMI_MAX ? v | 0 : v;
}
