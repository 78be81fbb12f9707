import { describe, expect, it } from 'vitest';
import { LOCAL_BUILD_PATH } from '../../src/core/native-loader.mjs';
import { PREBUILT_TARGETS } from '../../scripts/prebuilt-targets.js';
import { compareVersions, parseReadelf, verifyBinary } from '../../scripts/verify-binary.js';

const READELF = `ELF Header:
  Type:                              DYN (Shared object file)
  Machine:                           AArch64
Dynamic section at offset 0xc5d50 contains 27 entries:
 0x0000000000000001 (NEEDED)             Shared library: [libm.so.6]
 0x0000000000000001 (NEEDED)             Shared library: [libc.so.6]
Version needs section '.gnu.version_r' contains 2 entries:
  0x0010:   Name: GLIBC_2.17  Flags: none  Version: 3
  0x0020:   Name: GLIBC_2.3.4  Flags: none  Version: 2
`;

describe('verify-binary', () => {
  it('compares dotted versions numerically', () => {
    expect(compareVersions('2.17', '2.3.4')).toBeGreaterThan(0);
    expect(compareVersions('2.28', '2.28')).toBe(0);
    expect(compareVersions('2.2.5', '2.17')).toBeLessThan(0);
  });

  it('reads the machine, the needed libraries and the newest glibc version', () => {
    expect(parseReadelf(READELF)).toEqual({ machine: 'AArch64', type: 'DYN', needed: ['libm.so.6', 'libc.so.6'], glibc: '2.17' });
  });

  it("flags a binary linked against a newer glibc than the target allows (the checkout's own build, against the release floor)", () => {
    const report = verifyBinary(LOCAL_BUILD_PATH, PREBUILT_TARGETS['linux-x64-gnu']);
    expect(report.machine).toBe(process.arch === 'x64' ? 'Advanced Micro Devices X86-64' : 'AArch64');
    expect(report.file).toMatch(/ELF 64-bit LSB shared object/);
    // cargo links this machine's glibc (2.36 here: GLIBC_2.34 symbols), the release build 2.17 (zig).
    expect(report.glibc).toMatch(/^2\.\d+/);
    expect(report.problems.some((p) => /newer than 2\.17/.test(p))).toBe(compareVersions(report.glibc!, '2.17') > 0);
    const asMusl = verifyBinary(LOCAL_BUILD_PATH, PREBUILT_TARGETS['linux-x64-musl']);
    expect(asMusl.problems).toEqual(
      expect.arrayContaining([expect.stringMatching(/^unexpected shared libraries: .*libc\.so\.6/), expect.stringMatching(/on a non-glibc target/)]),
    );
  });
});
