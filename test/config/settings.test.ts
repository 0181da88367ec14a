/** Settings resolved once, from one table (src/config/settings.ts): flag, else environment, else config file, else default. */
import { describe, expect, it } from 'vitest';
import { ConfigFile, DEFAULTS, configKeyOf, helpOf, resolveRunSettings, RUN_SETTINGS, type RunSettingName } from '../../src/config/index.js';

const names = Object.keys(RUN_SETTINGS) as RunSettingName[];

describe('run settings', () => {
  it('take the defaults when nothing is given', () => {
    const settings = resolveRunSettings({}, {}, {}, '/work');
    expect(settings).toEqual({
      ledger: '/work/quote-batch.db', operation: DEFAULTS.operation, concurrency: DEFAULTS.concurrency, rate: DEFAULTS.rate,
      maxAttempts: DEFAULTS.maxAttempts, timeoutMs: DEFAULTS.timeoutMs, storeRequests: DEFAULTS.storeRequests,
      maxConsecutiveFailures: DEFAULTS.maxConsecutiveFailures, maxOutageMs: DEFAULTS.maxOutageMs, maxRetryAfterMs: DEFAULTS.maxRetryAfterMs,
      maxRuntimeMs: undefined, leaseMs: DEFAULTS.leaseMs, adaptive: DEFAULTS.adaptive, retryFailed: DEFAULTS.retryFailed, resendInDoubt: DEFAULTS.resendInDoubt,
    });
  });

  it.each<[string, Partial<Record<RunSettingName, unknown>>, Record<string, string>, Record<string, unknown>, string]>([
    ['the flag over everything', { ledger: 'flag.db' }, { QUOTE_BATCH_LEDGER: 'env.db' }, { ledger: 'config.db' }, '/work/flag.db'],
    ['the environment over the config file', {}, { QUOTE_BATCH_LEDGER: 'env.db' }, { ledger: 'config.db' }, '/work/env.db'],
    ['an empty environment variable is not set', {}, { QUOTE_BATCH_LEDGER: '  ' }, { ledger: 'config.db' }, '/work/config.db'],
    ['the config file over the default', {}, {}, { ledger: 'config.db' }, '/work/config.db'],
    ['a connection string as it is', {}, { QUOTE_BATCH_LEDGER: 'postgres://qb@db.internal:5432/leads' }, {}, 'postgres://qb@db.internal:5432/leads'],
  ])('the ledger: %s', (_, flags, env, config, expected) => {
    expect(resolveRunSettings(flags, env, config, '/work').ledger).toBe(expected);
  });

  it('a config value by its flag name; a false switch is not "unset"', () => {
    const settings = resolveRunSettings({ adaptive: false }, {}, { 'max-attempts': 2, adaptive: true, 'max-outage': 30_000 }, '/w');
    expect(settings).toMatchObject({ maxAttempts: 2, adaptive: false, maxOutageMs: 30_000 });
  });

  it('every setting is a member of the config file, checked as its flag is', () => {
    for (const name of names) {
      const key = configKeyOf(RUN_SETTINGS[name]);
      const bad = ConfigFile.safeParse({ defaults: { [key]: { not: 'a value' } } });
      expect(bad.success, key).toBe(false);
    }
    expect(ConfigFile.safeParse({ defaults: { concurrency: 0 } }).success).toBe(false);
    expect(ConfigFile.safeParse({ defaults: { concurrency: 64, 'max-outage': '30s', 'store-requests': 'none', adaptive: false } }).success).toBe(true);
  });

  it('says each default in its help as the table has it', () => {
    expect(helpOf('concurrency')).toBe(`requests in flight at once (default ${DEFAULTS.concurrency})`);
    expect(helpOf('ledger')).toContain(`(default ${DEFAULTS.ledger}; or QUOTE_BATCH_LEDGER)`);
    expect(helpOf('maxOutageMs')).toContain('(default 10m)');
    expect(DEFAULTS.maxOutageMs).toBe(10 * 60_000);
  });
});
