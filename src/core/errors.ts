// The addon's errors carry a stable `code` (native/src/bindings/errors.rs); this module turns
// them into the errors the library promises by code alone (messages are never parsed):
// ERR_KVROUTE_INVALID_TYPE becomes a TypeError, ERR_KVROUTE_OUT_OF_RANGE a RangeError, and every
// other code stays an Error that keeps its `code` (routing refusals become RoutingErrors in
// routing-errors.ts).

/** The codes the addon throws with. */
export const NativeErrorCode = {
  invalidType: 'ERR_KVROUTE_INVALID_TYPE',
  outOfRange: 'ERR_KVROUTE_OUT_OF_RANGE',
  wrongMode: 'ERR_KVROUTE_WRONG_MODE',
  busy: 'ERR_KVROUTE_BUSY',
  invalidSnapshot: 'ERR_KVROUTE_INVALID_SNAPSHOT',
  tokenizer: 'ERR_KVROUTE_TOKENIZER',
  chatTemplate: 'ERR_KVROUTE_CHAT_TEMPLATE',
  noEligibleWorker: 'ERR_KVROUTE_NO_ELIGIBLE_WORKER',
  backpressure: 'ERR_KVROUTE_BACKPRESSURE',
  missingRoutingHint: 'ERR_KVROUTE_MISSING_ROUTING_HINT',
  duplicateRequest: 'ERR_KVROUTE_DUPLICATE_REQUEST',
} as const;
export type NativeErrorCode = (typeof NativeErrorCode)[keyof typeof NativeErrorCode];

/** The code of an addon error (undefined for anything else). */
export function nativeErrorCode(err: unknown): string | undefined {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

/** Runs a native call, rethrowing the addon's argument failures as TypeError / RangeError. */
export function callNative<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw translateNativeError(err);
  }
}

export function translateNativeError(err: unknown): unknown {
  switch (nativeErrorCode(err)) {
    case NativeErrorCode.invalidType:
      return withCode(new TypeError((err as Error).message), NativeErrorCode.invalidType);
    case NativeErrorCode.outOfRange:
      return withCode(new RangeError((err as Error).message), NativeErrorCode.outOfRange);
    default:
      return err;
  }
}

function withCode<E extends Error>(err: E, code: string): E {
  Object.defineProperty(err, 'code', { value: code, enumerable: true, configurable: true, writable: true });
  return err;
}
