// JSON text for engine request bodies. Bodies may carry 64-bit integers the router generates
// (SGLang's bootstrap_room goes up to 2^63-1, which a double cannot hold): those are bigints,
// written as exact decimal digits. Only top-level values (a bigint, or an array of bigints for
// batched rooms) can be bigints; anywhere else JSON.stringify's own TypeError stands.

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
