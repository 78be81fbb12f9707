import { defineConfig } from 'vitest/config';

// CI asks for a JSON report too, to print its "N passed, N failed" line.
const jsonReport = process.env.KVROUTE_VITEST_JSON;

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Tests open loopback sockets and worker threads: keep the 2-core machines unsaturated.
    pool: 'forks',
    maxWorkers: 2,
    reporters: jsonReport ? ['default', 'json'] : ['default'],
    outputFile: jsonReport ? { json: jsonReport } : undefined,
  },
});
