import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { parseRouterConfig } from '../../../src/server/config/config.js';
import { configJsonSchema, configJsonSchemaText } from '../../../src/server/config/json-schema.js';

const committed = readFileSync(new URL('../../../schema/config.schema.json', import.meta.url), 'utf8');
const example = JSON.parse(readFileSync(new URL('../../../examples/fleet.json', import.meta.url), 'utf8')) as unknown;

// A standard validator, strict: the published schema holds only standard JSON Schema keywords.
const validate = new Ajv({ strict: true, allErrors: true }).compile(configJsonSchema());

const accepted = (config: unknown) => {
  try {
    parseRouterConfig(config);
    return true;
  } catch {
    return false;
  }
};

describe('the JSON Schema of the config file', () => {
  it('is committed as generated (regenerate: node --import tsx src/cli.ts config-schema > schema/config.schema.json)', () => {
    expect(committed).toBe(configJsonSchemaText());
  });

  it('validates the example fleet, which names it', () => {
    expect(validate(example), JSON.stringify(validate.errors)).toBe(true);
    expect((example as { $schema?: string }).$schema).toBe('../schema/config.schema.json');
    expect(accepted(example)).toBe(true);
  });

  it.each([
    [{}, true],
    [{ port: 0, models: ['a', 'b'], tokenizer: '/models/x', sessionAffinity: { header: 'X-Chat' } }, true],
    [{ tokenizer: { type: 'huggingface', path: '/m' }, prefillRouting: { policy: 'round_robin' }, health: { intervalMs: 0 } }, true],
    [{ workers: [{ id: 1, baseUrl: 'http://h:1', kvEvents: ['tcp://a:1'], bootstrap: { host: 'h', port: 8998 } }] }, true],
    [{ port: 70000 }, false],
    [{ colour: 'red' }, false],
    [{ routing: { policy: 'best' } }, false],
    [{ routing: { maxQueuedPrefillTokens: 0 } }, false],
    [{ routing: { busyDecodeFraction: 0 } }, false],
    [{ tokenizer: { type: 'huggingface' } }, false],
    [{ sessionAffinity: 'yes' }, false],
    [{ sessionAffinity: { header: 'a b' } }, false],
    [{ workers: [{ id: 1, role: 'boss', baseUrl: 'http://h:1' }] }, false],
    [{ workers: [{ id: 1, baseUrl: 'ftp://h' }] }, false],
    [{ workers: [{ id: 1, baseUrl: 'http://h:1', kvEvents: 'http://h:5557' }] }, false],
    [{ workers: [{ baseUrl: 'http://h:1' }] }, false],
  ])('agrees with the router on %j (valid: %s)', (config, valid) => {
    expect(validate(config)).toBe(valid);
    expect(accepted(config)).toBe(valid);
  });
});
