// Deterministic prompts for the hashing benchmarks.

/** Token ids as a tokenizer would produce them (a 152k vocabulary), different per salt. */
export function promptOf(tokens: number, salt: number): Uint32Array {
  const out = new Uint32Array(tokens);
  let x = (salt * 2654435761 + 1) >>> 0;
  for (let i = 0; i < tokens; i++) {
    x = (Math.imul(x ^ (x >>> 15), 0x2c1b3c6d) + 0x9e3779b9) >>> 0;
    out[i] = x % 152_000;
  }
  return out;
}
