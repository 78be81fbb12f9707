// Command-line flags made from the settings' declarations (src/server/config/schema.ts): the
// node:util parseArgs table, the --help lines, the value each flag gives its setting (checked
// against the same declaration, so a flag and the config file accept the same values), and the
// compact key=value syntax of --worker, whose keys the worker's fields declare.
import { readFile } from 'node:fs/promises';
import type { TObject, TSchema } from '@sinclair/typebox';
import { check, expectation } from '../server/config/check.js';
import { parseWorkerConfig, workerToInput, type WorkerConfig } from '../server/config/config.js';
import { annotationsOf, literalsOf, type FlagAnnotation } from '../server/config/declare.js';
import { WorkerSchema } from '../server/config/schema.js';
import { UsageError } from './usage.js';

/** A flag and the setting it sets: its path in the settings object and its declaration. */
export interface DeclaredFlag {
  path: string[];
  schema: TSchema;
  cli: FlagAnnotation;
}

type Schema = TSchema & Record<string, unknown>;

/** The flags a schema declares, in declaration order (objects and their alternatives included). */
export function declaredFlags(schema: TSchema, path: string[] = []): DeclaredFlag[] {
  const s = schema as Schema;
  const here: DeclaredFlag[] = annotationsOf(schema).cli ? [{ path, schema, cli: annotationsOf(schema).cli! }] : [];
  if (s.type === 'object' && s.properties) {
    return here.concat(Object.entries(s.properties as Record<string, TSchema>).flatMap(([key, p]) => declaredFlags(p, [...path, key])));
  }
  if (Array.isArray(s.anyOf)) return here.concat((s.anyOf as TSchema[]).flatMap((v) => ((v as Schema).type === 'object' ? declaredFlags(v, path) : [])));
  return here;
}

export type ParseArgsOption = { type: 'string' | 'boolean'; multiple?: boolean; short?: string };

export function parseArgsOptions(flags: readonly DeclaredFlag[]): Record<string, ParseArgsOption> {
  const out: Record<string, ParseArgsOption> = {};
  for (const { cli } of flags) out[cli.flag] = !cli.arg ? { type: 'boolean' } : cli.repeatable ? { type: 'string', multiple: true } : { type: 'string' };
  return out;
}

export type FlagValues = Record<string, string | boolean | Array<string | boolean> | undefined>;

/**
 * Sets each given flag's value (or its environment variable's, when the flag is absent) at its
 * setting's path in `settings`, after checking it against the setting's declaration. An empty
 * value counts as not given. Objects on the way are copied, never changed in place.
 */
export async function applyFlags(
  settings: Record<string, unknown>,
  flags: readonly DeclaredFlag[],
  values: FlagValues,
  env: NodeJS.ProcessEnv = {},
): Promise<void> {
  for (const f of flags) {
    let given = values[f.cli.flag];
    let name = `--${f.cli.flag}`;
    if (given === undefined && f.cli.env !== undefined) {
      given = env[f.cli.env];
      name = f.cli.env;
    }
    if (given === undefined || given === '' || given === false) continue;
    setAt(settings, f.path, await flagValue(f, given, name, getAt(settings, f.path)));
  }
}

async function flagValue(f: DeclaredFlag, given: unknown, name: string, current: unknown): Promise<unknown> {
  if (f.cli.turnsOn) return turnedOn(f.schema, given as string, name, current);
  if (!f.cli.arg) return f.cli.value ?? true;
  if (f.cli.repeatable) {
    const items = (given as string[]).filter((v) => v !== '');
    if (f.path.length === 1 && f.path[0] === 'workers') return [...((current as unknown[] | undefined) ?? []), ...items.map(workerFromFlag)];
    return items;
  }
  const raw = given as string;
  if (f.cli.readsFile) {
    try {
      return await readFile(raw, 'utf8');
    } catch (err) {
      throw new UsageError(`${name}: cannot read ${raw}: ${(err as Error).message}`);
    }
  }
  return checked(f.schema, fromText(raw, f.schema, name), name, raw);
}

/** `--discovery kubernetes`: the object setting with the named property on, the rest kept. */
function turnedOn(schema: TSchema, raw: string, name: string, current: unknown): Record<string, unknown> {
  const names = Object.keys(((schema as Schema).properties as object | undefined) ?? {});
  if (!names.includes(raw)) throw new UsageError(`${name} must be one of ${names.join(', ')}, got '${raw}'`);
  const out: Record<string, unknown> = typeof current === 'object' && current !== null ? Object.assign({}, current as Record<string, unknown>) : {};
  out[raw] ??= {};
  return out;
}

/** A flag's text as the value its declaration takes. */
function fromText(raw: string, schema: TSchema, name: string): unknown {
  const s = schema as Schema;
  if (s.type === 'integer' || s.type === 'number') return raw.trim() === '' ? Number.NaN : Number(raw);
  if (Array.isArray(s.anyOf) && (s.anyOf as Schema[]).some((v) => v.type === 'array')) return raw.includes('|') ? raw.split('|') : raw;
  if (s.type === 'object' && isAddress(s)) {
    const colon = raw.lastIndexOf(':');
    if (colon <= 0) throw new UsageError(`${name} must be host:port, got '${raw}'`);
    return { host: raw.slice(0, colon), port: Number(raw.slice(colon + 1)) };
  }
  return raw;
}

function checked(schema: TSchema, value: unknown, name: string, raw: string): unknown {
  if (typeof value === 'number' && !Number.isFinite(value)) throw new UsageError(`${name} must be ${expectation(schema)}, got ${raw}`);
  try {
    check(schema, value, name);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  return value;
}

/**
 * Parses the compact worker syntax of `--worker`: comma-separated key=value pairs, the keys those
 * the worker's fields declare, e.g.
 * `id=1,role=prefill,kind=vllm,url=http://10.0.0.1:8000,events=tcp://10.0.0.1:5557,replay=tcp://10.0.0.1:5600,dp=2,capacity=16384,bootstrap=10.0.0.1:8998`.
 */
export function parseWorkerFlag(spec: string): WorkerConfig {
  const fields = keyedFields(WorkerSchema);
  const raw: Record<string, unknown> = {};
  for (const part of spec.split(',')) {
    const eq = part.indexOf('=');
    if (eq <= 0) throw new TypeError(`--worker '${spec}': expected key=value pairs, got '${part}'`);
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    const field = fields.get(key);
    if (!field) throw new TypeError(`--worker '${spec}': unknown key '${key}' (one of ${[...fields.keys()].join(', ')})`);
    if (value === '') continue;
    try {
      raw[field.name] = fromText(value, field.schema, key);
    } catch (err) {
      throw new TypeError(`--worker '${spec}': ${(err as Error).message}`);
    }
  }
  return parseWorkerConfig(raw, `--worker '${spec}'`);
}

/** A --worker spec, checked whole, in the input form the config file's workers have. */
function workerFromFlag(spec: string): unknown {
  try {
    return workerToInput(parseWorkerFlag(spec));
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

function keyedFields(schema: TObject): Map<string, { name: string; schema: TSchema }> {
  const out = new Map<string, { name: string; schema: TSchema }>();
  for (const [name, s] of Object.entries(schema.properties)) {
    const key = annotationsOf(s).key;
    if (key) out.set(key, { name, schema: s });
  }
  return out;
}

function isAddress(s: Schema): boolean {
  const keys = Object.keys((s.properties as object | undefined) ?? {});
  return keys.length === 2 && keys.includes('host') && keys.includes('port');
}

// --- help ---

const LABEL_WIDTH = 24;
const WIDTH = 100;

/** One help entry: `  --flag ARG   text`, wrapped under its text column. */
export function helpEntry(label: string, text: string): string {
  const head = `  ${label}`;
  const first = head.length < LABEL_WIDTH + 2 ? head.padEnd(LABEL_WIDTH + 2) : `${head}   `;
  return wrap(first, text, ' '.repeat(LABEL_WIDTH + 2));
}

/** The help entries of the flags of one --help section. */
export function helpEntries(flags: readonly DeclaredFlag[], group: FlagAnnotation['group']): string[] {
  return flags.filter((f) => f.cli.group === group).map((f) => helpEntry(`--${f.cli.flag}${f.cli.arg ? ` ${f.cli.arg}` : ''}`, helpText(f)));
}

function helpText(f: DeclaredFlag): string {
  const s = f.schema as Schema;
  // A description is a sentence; a help entry starts in lower case and has no full stop.
  let text = (f.cli.help ?? String(s.description ?? '').replace(/^[A-Z](?=[a-z])/, (c) => c.toLowerCase())).replace(/\.$/, '');
  const literals = f.cli.arg ? literalsOf(s) : undefined;
  if (literals) text += `: ${literals.join('|')}`;
  if (f.path.join('.') === 'workers') text += `; keys: ${workerKeysHelp()}`;
  const notes: string[] = [];
  if (f.cli.defaultHelp) notes.push(f.cli.defaultHelp);
  else if (f.cli.arg && s.default !== undefined && !(Array.isArray(s.default) && s.default.length === 0))
    notes.push(`default ${Array.isArray(s.default) ? s.default.join(',') : String(s.default)}`);
  if (f.cli.env) notes.push(`env ${f.cli.env}`);
  return notes.length ? `${text} (${notes.join('; ')})` : text;
}

function workerKeysHelp(): string {
  const parts: Array<{ keys: string[]; details: string }> = [];
  for (const [key, { schema }] of keyedFields(WorkerSchema)) {
    const s = schema as Schema;
    const details: string[] = [];
    const literals = literalsOf(s);
    if (literals) details.push(literals.join('|'));
    if (Array.isArray(s.anyOf) && (s.anyOf as Schema[]).some((v) => v.type === 'array'))
      details.push("one endpoint, rank r on port + r, or one per rank separated by '|'");
    if (s.type === 'object' && isAddress(s)) details.push('host:port');
    if (s.default !== undefined) details.push(`default ${String(s.default)}`);
    // Keys in a row with the same details share them: "events, replay (...)".
    const last = parts[parts.length - 1];
    if (last && details.length > 0 && last.details === details.join('; ')) last.keys.push(key);
    else parts.push({ keys: [key], details: details.join('; ') });
  }
  return parts.map((p) => (p.details ? `${p.keys.join(', ')} (${p.keys.length > 1 ? 'each: ' : ''}${p.details})` : p.keys.join(', '))).join(', ');
}

function wrap(first: string, text: string, indent: string): string {
  const lines: string[] = [];
  let line = first;
  for (const word of text.split(/\s+/)) {
    if (line.length + word.length > WIDTH && line.trim().length > 0 && line !== first) {
      lines.push(line.trimEnd());
      line = indent;
    }
    line += line === first || line === indent ? word : ` ${word}`;
  }
  lines.push(line.trimEnd());
  return lines.join('\n');
}

function getAt(o: Record<string, unknown>, path: readonly string[]): unknown {
  let cur: unknown = o;
  for (const k of path) cur = typeof cur === 'object' && cur !== null ? (cur as Record<string, unknown>)[k] : undefined;
  return cur;
}

function setAt(o: Record<string, unknown>, path: readonly string[], value: unknown): void {
  let cur = o;
  for (const k of path.slice(0, -1)) {
    const next = cur[k];
    // Copied, not changed in place (it may belong to a loaded config); a non-object (true) becomes {}.
    cur[k] = typeof next === 'object' && next !== null && !Array.isArray(next) ? Object.assign({}, next) : {};
    cur = cur[k] as Record<string, unknown>;
  }
  cur[path[path.length - 1]] = value;
}
