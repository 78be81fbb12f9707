// How a setting is declared: a TypeBox schema (type, range, default, description: what the JSON
// Schema publishes and what the config file and the admin API are checked against) plus a few
// annotations of kvroute's own, which the published schema leaves out: how `kvroute serve` takes
// the setting as a flag, the key of a field in the compact --worker syntax, and a wording of what
// a value must be where the schema alone would read poorly in an error.
import { Type, type Static, type TLiteral, type TOptional, type TProperties, type TSchema, type TUnion } from '@sinclair/typebox';

/** A `kvroute serve` flag that sets the annotated setting. */
export interface FlagAnnotation {
  /** Long name, without the dashes. */
  flag: string;
  /** --help section. */
  group: 'Fleet' | 'Listening' | 'Routing' | 'Access' | 'Operations' | 'Replicas';
  /** Placeholder of the flag's argument in --help; absent for a switch. */
  arg?: string;
  /** A switch: the value it sets (true when absent). */
  value?: unknown;
  /** Read when the flag is not given. */
  env?: string;
  /** The flag names a file; its contents are the value. */
  readsFile?: boolean;
  /** On an object setting: the argument names one of its properties, which it turns on (`{}` unless already set). */
  turnsOn?: boolean;
  /** Repeatable: each use adds one item to the array setting. */
  repeatable?: boolean;
  /** --help text when the setting's description does not suit a flag. */
  help?: string;
  /** Replaces "(default X)" in --help, for defaults that are not a fixed value. */
  defaultHelp?: string;
}

/** kvroute's annotations; none of them reaches the published JSON Schema. */
export interface Annotations {
  cli?: FlagAnnotation;
  /** This field's key in a compact `key=value,...` spec (the --worker syntax). */
  key?: string;
  /** What a valid value is, for error messages: "an http(s) URL" (else derived from the schema). */
  expected?: string;
}

export const ANNOTATION_KEYS: ReadonlyArray<keyof Annotations> = ['cli', 'key', 'expected'];

export function annotationsOf(schema: TSchema): Annotations {
  return schema as Annotations;
}

/**
 * An optional property whose schema carries a default: present after defaults are applied. The
 * brand exists in the type only (Resolved reads it); the schema object is TypeBox's own.
 */
export type TDefaulted<T extends TSchema> = TOptional<T> & { readonly '~defaulted': true };

/** Marks a property optional in the input; its schema must carry `default`. */
export function defaulted<T extends TSchema>(schema: T): TDefaulted<T> {
  if (!('default' in schema)) throw new TypeError('defaulted() needs a schema with a default');
  return Type.Optional(schema) as TDefaulted<T>;
}

/**
 * The settings after defaults: required properties and those declared with defaulted() are always
 * there, the other optional ones may be absent.
 */
export type Resolved<P extends TProperties> = {
  -readonly [K in keyof P as P[K] extends TOptional<TSchema> ? (P[K] extends TDefaulted<TSchema> ? K : never) : K]-?: Static<P[K]>;
} & {
  -readonly [K in keyof P as P[K] extends TOptional<TSchema> ? (P[K] extends TDefaulted<TSchema> ? never : K) : never]?: Static<P[K]>;
};

/** One of a list of names (a union of literals: `enum` for editors, one-of for errors). */
export function oneOf<const T extends readonly string[]>(names: T, options: Record<string, unknown> = {}): TUnion<Array<TLiteral<T[number]>>> {
  return Type.Union(
    names.map((n) => Type.Literal(n)),
    options,
  ) as TUnion<Array<TLiteral<T[number]>>>;
}

/** The names of a oneOf() schema; undefined for any other schema. */
export function literalsOf(schema: TSchema): string[] | undefined {
  const anyOf = (schema as { anyOf?: Array<{ const?: unknown }> }).anyOf;
  if (!Array.isArray(anyOf) || anyOf.length === 0 || !anyOf.every((v) => typeof v.const === 'string')) return undefined;
  return anyOf.map((v) => v.const as string);
}
