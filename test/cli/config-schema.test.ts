import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { run } from '../../src/cli/config-schema.js';

describe('kvroute config-schema', () => {
  afterEach(() => vi.restoreAllMocks());

  it('prints the committed JSON Schema of the config file', async () => {
    let out = '';
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      out += String(chunk);
      return true;
    });
    expect(await run([])).toBe(0);
    expect(out).toBe(readFileSync(new URL('../../schema/config.schema.json', import.meta.url), 'utf8'));
    expect(JSON.parse(out)).toMatchObject({ $schema: 'http://json-schema.org/draft-07/schema#', type: 'object' });
  });

  it('refuses arguments with status 2', async () => {
    vi.spyOn(console, 'error').mockImplementation(() => undefined);
    expect(await run(['extra'])).toBe(2);
  });
});
