import { configDefaults, defineConfig } from 'vitest/config';

/**
 * The slow suites: crash and kill loops, outages that wait out real timers, many-process races,
 * measured scenarios. `npm run test:quick` (QUICK=1) leaves them out for the inner loop; `npm test`,
 * which CI runs, runs everything.
 */
export const SLOW_TESTS = [
  'test/robustness/**',
  'test/pipeline/warm-start.test.ts',
  'test/cli/ledger-faults.test.ts',
  'test/cli/closed-pipe.test.ts',
  'test/cli/signals.test.ts',
  'test/ledger/open-race.test.ts',
  'test/partner/client.test.ts',
  'test/report/cli.test.ts',
  'test/mapping/fast-validate.test.ts',
  'test/ledger/postgres-commands.test.ts',
  'test/cli/json-log-halts.test.ts',
  'test/input/property.test.ts',
  'test/pipeline/sent-by-other-job.test.ts',
  'test/sandbox/cli.test.ts',
];

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: process.env.QUICK === '1' ? [...configDefaults.exclude, ...SLOW_TESTS] : configDefaults.exclude,
    // Builds dist/ once, before any file runs (test files spawn the real CLI from dist/).
    globalSetup: ['test/helpers/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Tests spawn CLI processes and servers and mostly wait on them: three workers keep two cores busy.
    pool: 'forks',
    poolOptions: { forks: { maxForks: 3, minForks: 1 } },
    env: { NO_COLOR: '1' },
  },
});
