// Lays prompts out as one batch (prompt i is tokens[offsets[i]..offsets[i+1]]), after `lead`
// tokens that belong to no prompt and before 3 trailing ones: the batch functions must read
// exactly the ranges the offsets name.
export function concat(prompts: Uint32Array[], lead = 0): { tokens: Uint32Array; offsets: Uint32Array } {
  const total = prompts.reduce((n, p) => n + p.length, lead);
  const tokens = new Uint32Array(total + 3);
  const offsets = new Uint32Array(prompts.length + 1);
  offsets[0] = lead;
  prompts.forEach((p, i) => {
    tokens.set(p, offsets[i]);
    offsets[i + 1] = offsets[i] + p.length;
  });
  return { tokens, offsets };
}
