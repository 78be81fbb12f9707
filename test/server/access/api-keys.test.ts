import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseApiKeys, readApiKeysFile } from '../../../src/server/access/api-keys.js';

const KEY_A = 'sk-team-a-0123456789abcdef';
const KEY_B = 'sk-team-b-0123456789abcdef';

describe('parseApiKeys', () => {
  it('reads name:key lines, with comments, blank lines and commas', () => {
    const text = `# the keys\nteam-a:${KEY_A}\n\n  team_b : ${KEY_B}   # second\n`;
    expect(parseApiKeys(text, 'keys.txt')).toEqual([
      { name: 'team-a', key: KEY_A },
      { name: 'team_b', key: KEY_B },
    ]);
    expect(parseApiKeys(`a:${KEY_A},b:${KEY_B}`, 'KVROUTE_API_KEYS').map((k) => k.name)).toEqual(['a', 'b']);
  });

  it('reads JSON with per-key limits', () => {
    const text = JSON.stringify([
      { name: 'batch', key: KEY_A, requestsPerMinute: 60, tokensPerMinute: 100000 },
      { name: 'web', key: KEY_B },
    ]);
    expect(parseApiKeys(text, 'keys.json')).toEqual([
      { name: 'batch', key: KEY_A, requestsPerMinute: 60, tokensPerMinute: 100000 },
      { name: 'web', key: KEY_B },
    ]);
  });

  it('names the bad entry and never repeats a key in its error', () => {
    const cases: Array<[string, RegExp]> = [
      [`team-a ${KEY_A}`, /^keys line 1: expected name:key$/],
      [`team a:${KEY_A}`, /^keys line 1: the name must be 1 to 64 characters/],
      ['team-a:short', /^keys line 1: the key of 'team-a' must be 16 to 512 visible ASCII characters/],
      [`a:${KEY_A}\na:${KEY_B}`, /the key name 'a' appears twice/],
      [`a:${KEY_A}\nb:${KEY_A}`, /the key of 'b' is also another entry's key/],
      ['[{"name":"a"}]', /^keys\[0\]: the key of 'a' must be/],
      [`[{"name":"a","key":"${KEY_A}","rpm":5}]`, /^keys\[0\] has an unknown field 'rpm'$/],
      [`[{"name":"a","key":"${KEY_A}","tokensPerMinute":0}]`, /^keys\[0\]\.tokensPerMinute must be an integer in \[1, 1000000000000\], got /],
      ['{"a":1}', /^keys must be a JSON array/],
      ['[1,', /^keys is not valid JSON/],
    ];
    for (const [text, message] of cases) {
      let error: Error | undefined;
      try {
        parseApiKeys(text, 'keys');
      } catch (err) {
        error = err as Error;
      }
      expect(error?.message, text).toMatch(message);
      expect(error?.message).not.toContain(KEY_A);
      expect(error?.message).not.toContain(KEY_B);
    }
  });
});

describe('readApiKeysFile', () => {
  it('reads a file, and refuses a missing or empty one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kvroute-keys-'));
    writeFileSync(join(dir, 'keys'), `a:${KEY_A}\n`);
    writeFileSync(join(dir, 'empty'), '# nothing yet\n');
    expect(await readApiKeysFile(join(dir, 'keys'))).toEqual([{ name: 'a', key: KEY_A }]);
    await expect(readApiKeysFile(join(dir, 'empty'))).rejects.toThrow(/holds no key/);
    await expect(readApiKeysFile(join(dir, 'missing'))).rejects.toThrow(`cannot read the API keys file ${join(dir, 'missing')}: ENOENT`);
  });
});
