// The router config files the chart renders (the ConfigMaps' config.json, from stdin's
// multi-document YAML) against kvroute's own JSON Schema (schema/config.schema.json, which
// `kvroute serve --config` enforces). Exit 1 on the first invalid one.
import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { parseAllDocuments } from 'yaml';

const schema = JSON.parse(readFileSync(new URL('../../../schema/config.schema.json', import.meta.url), 'utf8'));
const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);
let checked = 0;
for (const doc of parseAllDocuments(readFileSync(0, 'utf8'))) {
  const obj = doc.toJS();
  const text = obj?.kind === 'ConfigMap' ? obj.data?.['config.json'] : undefined;
  if (text === undefined) continue;
  if (!validate(JSON.parse(text))) {
    console.error(`ConfigMap ${obj.metadata?.name} config.json: ${JSON.stringify(validate.errors)}`);
    process.exit(1);
  }
  checked++;
}
console.log(`config files valid: ${checked}`);
