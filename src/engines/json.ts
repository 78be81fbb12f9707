// JSON text for engine request bodies. Bodies may carry 64-bit integers the router generates
// (SGLang's bootstrap_room goes up to 2^63-1, which a double cannot hold): those are bigints,
// written as exact decimal digits. Only top-level values (a bigint, or an array of bigints for
// batched rooms) can be bigints; anywhere else JSON.stringify's own TypeError stands.
// A body the router did not change goes out as the client's own bytes (see markVerbatim).

const VERBATIM = Symbol('kvroute.verbatimJson');

/**
 * Marks `body` as the parse of `bytes` (a client's request that routing left unchanged), so engine
 * calls send those bytes instead of serialising the body again (a 1k-token prompt cost about 20 us
 * to stringify and encode, on the router's one thread). The body is frozen: an edit would make
 * the bytes lie, so it throws instead. Copies (copyFields, withFields, as every handoff makes) are unmarked.
 */
export function markVerbatim<T extends Record<string, unknown>>(body: T, bytes: Uint8Array): T {
  Object.defineProperty(body, VERBATIM, { value: bytes, enumerable: false });
  return Object.freeze(body);
}

/** What to send for `body`: the client's bytes when it is marked verbatim, else its JSON text. */
export function engineBody(body: Record<string, unknown>): string | Uint8Array {
  return ((body as { [VERBATIM]?: Uint8Array })[VERBATIM]) ?? stringifyBody(body);
}

export function stringifyBody(body: Record<string, unknown>): string {
  let hasBigint = false;
  for (const key in body) {
    if (isBigintValue(body[key])) {
      hasBigint = true;
      break;
    }
  }
  if (!hasBigint) return JSON.stringify(body);
  const parts: string[] = [];
  for (const key of Object.keys(body)) {
    const value = body[key];
    let text: string | undefined;
    if (typeof value === 'bigint') text = value.toString();
    else if (isBigintArray(value)) text = `[${value.join(',')}]`;
    else text = JSON.stringify(value);
    if (text !== undefined) parts.push(`${JSON.stringify(key)}:${text}`); // undefined/functions are skipped, as JSON.stringify does
  }
  return `{${parts.join(',')}}`;
}

function isBigintValue(v: unknown): boolean {
  return typeof v === 'bigint' || isBigintArray(v);
}

function isBigintArray(v: unknown): v is bigint[] {
  return Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'bigint');
}
