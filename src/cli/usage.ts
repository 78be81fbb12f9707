// Command-line mistakes: the dispatcher prints these without a stack and exits with status 2.

export class UsageError extends Error {
  override name = 'UsageError';
}

/** node:util parseArgs reports unknown or malformed flags with these codes. */
export function isUsageError(err: unknown): boolean {
  if (err instanceof UsageError) return true;
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS');
}

/** An integer flag within [min, max], or a UsageError naming the flag. */
export function intFlag(raw: string | undefined, name: string, min: number, max: number): number {
  const v = Number(raw);
  if (raw === undefined || raw.trim() === '' || !Number.isInteger(v) || v < min || v > max) {
    throw new UsageError(`${name} must be an integer in [${min}, ${max}], got ${raw}`);
  }
  return v;
}

/** A bandwidth in bytes/s: a number > 0 (Infinity allowed: an instant transfer). */
export function bandwidthFlag(raw: string, name: string): number {
  const v = raw.trim() === '' ? NaN : Number(raw);
  if (!(v > 0)) throw new UsageError(`${name} must be a number of bytes/s > 0, got ${raw}`);
  return v;
}
