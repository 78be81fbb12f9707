import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadAccess } from '../../../src/server/access/load.js';
import { parseRouterConfig } from '../../../src/server/config/config.js';

const dir = mkdtempSync(join(tmpdir(), 'kvroute-access-'));
const file = (name: string, text: string) => {
  writeFileSync(join(dir, name), text);
  return join(dir, name);
};

describe('loadAccess', () => {
  it('reads the admin token from its file, trimmed', async () => {
    const access = await loadAccess(parseRouterConfig({ adminTokenFile: file('token', '  s3cret-token\n') }));
    expect(access.adminToken).toBe('s3cret-token');
    expect(access.control).toBeUndefined();
    await expect(loadAccess(parseRouterConfig({ adminTokenFile: file('blank', '\n') }))).rejects.toThrow(/must hold one token/);
    await expect(loadAccess(parseRouterConfig({ adminTokenFile: join(dir, 'none') }))).rejects.toThrow(/cannot read the admin token file .*: ENOENT/);
    expect(() => parseRouterConfig({ adminToken: 'a', adminTokenFile: 'b' })).toThrow('give either adminToken or adminTokenFile, not both');
  });

  it('joins the keys file and the keys passed in, refusing a name given twice', async () => {
    const keys = file('keys', 'a:sk-aaaaaaaaaaaaaaaaaaaa\n');
    const access = await loadAccess(parseRouterConfig({ apiKeysFile: keys }), [{ name: 'b', key: 'sk-bbbbbbbbbbbbbbbbbbbb' }]);
    expect(access.control?.keys).toBe(2);
    await expect(loadAccess(parseRouterConfig({ apiKeysFile: keys }), [{ name: 'a', key: 'sk-cccccccccccccccccccc' }])).rejects.toThrow(/'a' is given twice/);
  });
});
