import { defineConfig } from 'vitest/config';

// The real-engine suite (npm run test:engines): kvroute in front of vLLM's CPU build. Opt-in, never
// part of npm test: its first run installs vLLM into bench/.cache/engines/ (several GB). One file,
// one process, in order: the checks share two engines and restart them.
export default defineConfig({
  test: {
    include: ['test/engines-real/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 1,
    fileParallelism: false,
    sequence: { concurrent: false },
    testTimeout: 300_000,
    hookTimeout: 3_600_000,
    reporters: ['verbose'],
  },
});
