import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Tests spawn CLI processes and servers; two workers match the two cores of CI.
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    env: { NO_COLOR: '1' },
  },
});
