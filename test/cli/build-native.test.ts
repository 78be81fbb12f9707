import { afterEach, describe, expect, it, vi } from 'vitest';
import { HELP, cdylibName, run } from '../../src/cli/build-native.js';
import { UsageError } from '../../src/cli/usage.js';

// The real build (cargo in an installed package, then the addon loading from it) runs in
// test/package/install.test.ts, in a project of its own: here it would replace the checkout's build.
describe('kvroute build-native', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
    vi.restoreAllMocks();
  });

  it('prints its help', async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    expect(await run(['--help'])).toBe(0);
    expect(log).toHaveBeenCalledWith(HELP);
    expect(HELP).toMatch(/rustup\.rs/);
  });

  it('refuses arguments it does not take', async () => {
    await expect(run(['now'])).rejects.toThrow(UsageError);
    await expect(run(['--release'])).rejects.toMatchObject({ code: 'ERR_PARSE_ARGS_UNKNOWN_OPTION' });
  });

  it('says how to get cargo when there is none', async () => {
    vi.stubEnv('CARGO', '/nonexistent/cargo');
    await expect(run([])).rejects.toThrow(/cargo was not found .*install a Rust toolchain from https:\/\/rustup\.rs/);
  });

  it('knows what cargo names the library on each OS', () => {
    expect(cdylibName('linux')).toBe('libkvroute_native.so');
    expect(cdylibName('darwin')).toBe('libkvroute_native.dylib');
    expect(cdylibName('win32')).toBe('kvroute_native.dll');
  });
});
