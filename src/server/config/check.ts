// Checks a value against a declared schema (TypeBox does the checking) and turns the first
// failure into an error that names its place and says what was wanted: "workers[2].role must be
// one of aggregated, prefill, decode, got 'boss'". TypeError for a wrong kind of value, RangeError
// for a number out of range, as the library's other argument checks do.
import type { Static, TSchema } from '@sinclair/typebox';
import { Value, ValueErrorType, type ValueError } from '@sinclair/typebox/value';
import { describe } from '../../util/validate.js';
import { annotationsOf, literalsOf } from './declare.js';

export interface CheckNames {
  /** Name of the value itself, in messages about it as a whole ("config must be an object"). */
  root: string;
  /** Prefix of its fields' names: '' gives "port ...", 'worker' gives "worker.id ...". */
  prefix: string;
}

/** Throws the first mismatch between `value` and `schema`, named as `names` say. */
export function check<T extends TSchema>(schema: T, value: unknown, names: CheckNames | string): asserts value is Static<T> {
  const first = Value.Errors(schema, value).First();
  if (first === undefined) return;
  const n = typeof names === 'string' ? { root: names, prefix: names } : names;
  throw failure(first, n);
}

/** What a value of `schema` must be, in words: "an integer in [0, 65535]". */
export function expectation(schema: TSchema): string {
  const s = schema as TSchema & Record<string, unknown>;
  const expected = annotationsOf(schema).expected;
  if (expected) return expected;
  const literals = literalsOf(schema);
  if (literals) return `one of ${literals.join(', ')}`;
  if (Array.isArray(s.anyOf)) return orList((s.anyOf as TSchema[]).map(expectation));
  if (s.const !== undefined) return `'${String(s.const)}'`;
  switch (s.type) {
    case 'integer':
      return `an integer ${range(s)}`;
    case 'number':
      return s.exclusiveMinimum === 0 && s.maximum === undefined ? 'a positive number' : `a number ${range(s)}`;
    case 'string':
      return typeof s.minLength === 'number' && s.minLength > 0 ? 'a non-empty string' : 'a string';
    case 'boolean':
      return 'true or false';
    case 'array':
      return typeof s.minItems === 'number' && s.minItems > 0 ? 'a non-empty array' : 'an array';
    case 'object':
      return 'an object';
    case 'null':
      return 'null';
    default:
      return 'a valid value';
  }
}

function failure(e: ValueError, names: CheckNames): Error {
  const segments = e.path
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (e.type === ValueErrorType.ObjectAdditionalProperties) {
    const field = segments.pop() ?? '';
    const known = Object.keys((e.schema as { properties?: object }).properties ?? {});
    return new TypeError(`${nameOf(segments, names)}: unknown field '${field}' (known: ${known.join(', ')})`);
  }
  const at = nameOf(segments, names);
  if (e.type === ValueErrorType.Union && !literalsOf(e.schema)) {
    const variant = matchingVariant(e);
    if (variant) return failure(variant, names);
  }
  return mismatch(at, e.schema, e.value);
}

function mismatch(at: string, schema: TSchema, value: unknown): Error {
  const s = schema as TSchema & Record<string, unknown>;
  const wanted = expectation(schema);
  if (literalsOf(schema)) return new TypeError(`${at} must be ${wanted}, got ${typeof value === 'string' ? `'${value}'` : describe(value)}`);
  if (s.type === 'integer' || s.type === 'number') {
    if (typeof value !== 'number') return new TypeError(`${at} must be a number, got ${describe(value)}`);
    return new RangeError(`${at} must be ${wanted}, got ${value}`);
  }
  // A string where a string was wanted is shown as written; anything else by its kind.
  const shown = s.type === 'string' && typeof value === 'string' ? `'${value}'` : describe(value);
  return new TypeError(`${at} must be ${wanted}, got ${shown}`);
}

/**
 * Of a union's alternatives, the one the value was evidently meant as (same JSON type and, for
 * objects, the same `type` literal): its own first error says more than "must be A or B".
 */
function matchingVariant(e: ValueError): ValueError | undefined {
  const variants = ((e.schema as { anyOf?: TSchema[] }).anyOf ?? []).map((schema, i) => ({ schema, errors: e.errors[i] }));
  const kind = jsonType(e.value);
  let fits = variants.filter((v) => schemaTypes(v.schema).includes(kind));
  if (kind === 'object' && fits.length > 1) {
    const tag = (e.value as { type?: unknown }).type;
    fits = fits.filter((v) => (v.schema as { properties?: { type?: { const?: unknown } } }).properties?.type?.const === tag);
  }
  return fits.length === 1 ? fits[0].errors?.First() : undefined;
}

function schemaTypes(schema: TSchema): string[] {
  const t = (schema as { type?: unknown }).type;
  if (t === 'integer') return ['number'];
  return typeof t === 'string' ? [t] : [];
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

function nameOf(segments: string[], names: CheckNames): string {
  if (segments.length === 0) return names.root;
  let name = names.prefix;
  for (const s of segments) name += /^\d+$/.test(s) ? `[${s}]` : name === '' ? s : `.${s}`;
  return name;
}

function range(s: Record<string, unknown>): string {
  const lo = s.exclusiveMinimum !== undefined ? `(${s.exclusiveMinimum}` : `[${s.minimum ?? '-Infinity'}`;
  const hi = s.exclusiveMaximum !== undefined ? `${s.exclusiveMaximum})` : `${s.maximum ?? 'Infinity'}]`;
  return `in ${lo}, ${hi}`;
}

function orList(items: string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} or ${items[items.length - 1]}`;
}
