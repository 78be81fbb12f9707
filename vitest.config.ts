import { configDefaults, defineConfig } from 'vitest/config';

// CI asks for a JSON report too, to print its "N passed, N failed" line.
const jsonReport = process.env.KVROUTE_VITEST_JSON;

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The real-engine suite is opt-in (npm run test:engines, vitest.engines.config.ts).
    exclude: [...configDefaults.exclude, 'test/engines-real/**'],
    // Type tests of the public API (expectTypeOf), checked by tsc as a user's code would be: they
    // import 'kvroute/...' (tsconfig.json maps those names to the sources).
    typecheck: { enabled: true, include: ['test/types/**/*.test-d.ts'], tsconfig: './tsconfig.json' },
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Tests open loopback sockets and worker threads: keep the 2-core machines unsaturated.
    pool: 'forks',
    maxWorkers: 2,
    reporters: jsonReport ? ['default', 'json'] : ['default'],
    outputFile: jsonReport ? { json: jsonReport } : undefined,
  },
});
