// API keys of the OpenAI routes: read from a file or an environment variable (never from the
// command line, where `ps` shows them), each with a name that logs and metrics use instead of the
// key. A key is looked up by its SHA-256 digest, so the comparison never depends on how much of a
// wrong key matches a right one.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { describe } from '../../util/validate.js';

export interface ApiKey {
  /** Shown in logs and metrics: [A-Za-z0-9._-], 1 to 64 characters. */
  name: string;
  /** The secret: 16 to 512 visible ASCII characters. */
  key: string;
  /** This key's limits, replacing the router's rateLimit settings. */
  requestsPerMinute?: number;
  tokensPerMinute?: number;
}

const NAME = /^[A-Za-z0-9._-]{1,64}$/;
const KEY = /^[\x21-\x7e]{16,512}$/;
const MAX_LIMIT = 1e12;

/**
 * Parses a keys file (or the KVROUTE_API_KEYS variable): JSON, an array of
 * `{ name, key, requestsPerMinute?, tokensPerMinute? }`; or text, one `name:key` per line (commas
 * may separate entries too), blank lines and `#` comments ignored. An error names the entry,
 * never the key.
 */
export function parseApiKeys(text: string, source: string): ApiKey[] {
  const trimmed = text.trim();
  const keys = trimmed.startsWith('[') || trimmed.startsWith('{') ? fromJson(trimmed, source) : fromLines(text, source);
  const names = new Set<string>();
  const digests = new Set<string>();
  for (const k of keys) {
    if (names.has(k.name)) throw new RangeError(`${source}: the key name '${k.name}' appears twice`);
    const d = digest(k.key);
    if (digests.has(d)) throw new RangeError(`${source}: the key of '${k.name}' is also another entry's key`);
    names.add(k.name);
    digests.add(d);
  }
  return keys;
}

function fromJson(text: string, source: string): ApiKey[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new TypeError(`${source} is not valid JSON: ${(err as Error).message}`);
  }
  if (!Array.isArray(raw)) throw new TypeError(`${source} must be a JSON array of { name, key } objects`);
  return raw.map((entry, i) => {
    const where = `${source}[${i}]`;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry))
      throw new TypeError(`${where} must be an object { name, key }, got ${describe(entry)}`);
    const e = entry as Record<string, unknown>;
    for (const field of Object.keys(e)) {
      if (!['name', 'key', 'requestsPerMinute', 'tokensPerMinute'].includes(field)) throw new TypeError(`${where} has an unknown field '${field}'`);
    }
    const key = checkedKey(e.name, e.key, where);
    for (const field of ['requestsPerMinute', 'tokensPerMinute'] as const) {
      const v = e[field];
      if (v === undefined) continue;
      if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_LIMIT)
        throw new RangeError(`${where}.${field} must be an integer in [1, ${MAX_LIMIT}], got ${describe(v)}`);
      key[field] = v;
    }
    return key;
  });
}

function fromLines(text: string, source: string): ApiKey[] {
  const out: ApiKey[] = [];
  text.split('\n').forEach((line, i) => {
    for (const part of line.replace(/#.*$/, '').split(',')) {
      const entry = part.trim();
      if (entry === '') continue;
      const colon = entry.indexOf(':');
      if (colon <= 0) throw new TypeError(`${source} line ${i + 1}: expected name:key`);
      out.push(checkedKey(entry.slice(0, colon).trim(), entry.slice(colon + 1).trim(), `${source} line ${i + 1}`));
    }
  });
  return out;
}

function checkedKey(name: unknown, key: unknown, where: string): ApiKey {
  if (typeof name !== 'string' || !NAME.test(name))
    throw new TypeError(`${where}: the name must be 1 to 64 characters of A-Z a-z 0-9 . _ -, got ${typeof name === 'string' ? `'${name}'` : describe(name)}`);
  if (typeof key !== 'string' || !KEY.test(key)) throw new TypeError(`${where}: the key of '${name}' must be 16 to 512 visible ASCII characters (no spaces)`);
  return { name, key };
}

export async function readApiKeysFile(path: string): Promise<ApiKey[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new Error(`cannot read the API keys file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const keys = parseApiKeys(text, path);
  if (keys.length === 0) throw new RangeError(`the API keys file ${path} holds no key`);
  return keys;
}

export function digest(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}
