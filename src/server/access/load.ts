// The secrets of a configuration, read once at startup: the API keys (a file, and keys a library
// user or the environment gives) and the admin token (the setting, or a file holding it).
import { readFile } from 'node:fs/promises';
import type { RouterConfig } from '../config/config.js';
import { AccessControl } from './access.js';
import { readApiKeysFile, type ApiKey } from './api-keys.js';

export interface LoadedAccess {
  /** Absent without API keys: the OpenAI routes are open. */
  control?: AccessControl;
  adminToken?: string;
}

export async function loadAccess(config: RouterConfig, extraKeys: readonly ApiKey[] = [], clock?: () => number): Promise<LoadedAccess> {
  const keys = [...(config.apiKeysFile === undefined ? [] : await readApiKeysFile(config.apiKeysFile)), ...extraKeys];
  const names = new Set<string>();
  for (const k of keys) {
    if (names.has(k.name)) throw new RangeError(`the API key name '${k.name}' is given twice (apiKeysFile and the keys passed in)`);
    names.add(k.name);
  }
  const out: LoadedAccess = {};
  if (keys.length > 0) out.control = new AccessControl(keys, config.rateLimit, clock);
  if (config.adminTokenFile !== undefined) out.adminToken = await readToken(config.adminTokenFile);
  else if (config.adminToken !== undefined) out.adminToken = config.adminToken;
  return out;
}

async function readToken(path: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    throw new Error(`cannot read the admin token file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const token = text.trim();
  if (token === '' || /\s/.test(token)) throw new RangeError(`the admin token file ${path} must hold one token (no spaces inside)`);
  return token;
}
