// The addon throws TypeError for wrong argument types (napi-rs InvalidArg) and an Error whose
// message starts with "RangeError: " for out-of-range values; callers get real RangeErrors.

const RANGE_PREFIX = 'RangeError: ';

/** Runs a native call, rethrowing the addon's range failures as RangeError. */
export function callNative<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw translateNativeError(err);
  }
}

export function translateNativeError(err: unknown): unknown {
  if (err instanceof Error && !(err instanceof TypeError) && err.message.startsWith(RANGE_PREFIX)) {
    return new RangeError(err.message.slice(RANGE_PREFIX.length));
  }
  return err;
}
