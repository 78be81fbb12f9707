// The configuration file's JSON Schema, for editors and other tools: the declarations of
// schema.ts as standard JSON Schema (draft 07), without kvroute's own annotations. The committed
// copy, schema/config.schema.json, is kept equal to this by a test; `kvroute config-schema`
// prints it.
import { ANNOTATION_KEYS } from './declare.js';
import { RouterConfigSchema } from './schema.js';

export function configJsonSchema(): Record<string, unknown> {
  return Object.assign({ $schema: 'http://json-schema.org/draft-07/schema#' }, plainSchema(RouterConfigSchema));
}

/** The text of schema/config.schema.json. */
export function configJsonSchemaText(): string {
  return `${JSON.stringify(configJsonSchema(), null, 2)}\n`;
}

/** Keywords whose values are schemas, or maps and lists of them. */
const SUBSCHEMA = new Set(['items', 'additionalProperties', 'not']);
const SUBSCHEMA_LISTS = new Set(['anyOf', 'allOf', 'oneOf']);

/** A schema node without the annotations (a property *named* like one stays: only keywords go). */
function plainSchema(node: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
    if ((ANNOTATION_KEYS as readonly string[]).includes(key)) continue;
    if (key === 'properties') out[key] = Object.fromEntries(Object.entries(value as object).map(([name, s]) => [name, plainSchema(s)]));
    else if (SUBSCHEMA.has(key) && typeof value === 'object' && value !== null) out[key] = plainSchema(value);
    else if (SUBSCHEMA_LISTS.has(key)) out[key] = (value as unknown[]).map(plainSchema);
    else out[key] = JSON.parse(JSON.stringify(value)) as unknown;
  }
  return out;
}
