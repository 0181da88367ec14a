/**
 * The settings of a run, resolved once: a flag, else the environment variable, else the config
 * file's `defaults:` member, else the default ({@link DEFAULTS}). One table says, for each, its flag,
 * its key in the config file, its check and its help; the flags of `run`, the config file's schema
 * and {@link resolveRunSettings} are all made from it.
 */
import { resolve } from 'node:path';
import { MAX_WAIT_MS } from '../duration.js';
import { DEFAULTS } from './defaults.js';

export const OPERATIONS = ['quote', 'lead'] as const;
export const STORE_REQUESTS = ['none', 'masked', 'full'] as const;
export type StoreRequests = (typeof STORE_REQUESTS)[number];

/** How a setting's value is written and checked (on the command line and in the config file alike). */
export type SettingKind =
  | { type: 'integer'; min: number; max: number }
  | { type: 'number'; min: number; max: number }
  /** `90s`, `10m`, `2h`, or a number of seconds; read into milliseconds. */
  | { type: 'duration'; minMs: number; maxMs: number }
  | { type: 'choice'; choices: readonly string[] }
  /** `--x` and `--no-x`. */
  | { type: 'switch'; on: string; off: string }
  | { type: 'text' };

export interface Setting {
  /** The flag, as commander declares it (`--max-attempts <n>`); the config file's key is its name (`max-attempts`). */
  flag: string;
  kind: SettingKind;
  /** The flag's help, without its default (added from {@link DEFAULTS}). */
  help: string;
  /** An environment variable that sets it (below the flag, above the config file). */
  env?: string;
  /** How the default reads in the help, when it is not the value itself (`10m` for 600000 ms). */
  shownDefault?: string;
}

/** The settings of `run` that have a default or a config-file key, by the name `resolveRunSettings` gives them. */
export const RUN_SETTINGS = {
  ledger: { flag: '--ledger <file or url>', kind: { type: 'text' }, env: 'QUOTE_BATCH_LEDGER', help: 'the ledger: a SQLite file, or postgres://user@host:5432/db (docs/ledger.md)' },
  operation: { flag: '--operation <op>', kind: { type: 'choice', choices: OPERATIONS }, help: 'partner operation each row is sent to' },
  concurrency: { flag: '--concurrency <n>', kind: { type: 'integer', min: 1, max: 1024 }, help: 'requests in flight at once' },
  rate: { flag: '--rate <n>', kind: { type: 'number', min: 0, max: 1e6 }, help: 'at most N requests per second, 0 = no cap' },
  maxAttempts: { flag: '--max-attempts <n>', kind: { type: 'integer', min: 1, max: 100 }, help: 'attempts per request for retryable failures' },
  timeoutMs: { flag: '--timeout <ms>', kind: { type: 'integer', min: 1, max: 3_600_000 }, help: 'whole-request time-out in ms' },
  storeRequests: { flag: '--store-requests <mode>', kind: { type: 'choice', choices: STORE_REQUESTS }, help: 'how much of each request the ledger keeps' },
  maxConsecutiveFailures: {
    flag: '--max-consecutive-failures <n>', kind: { type: 'integer', min: 1, max: 1e6 }, help: 'consecutive transient failures of one operation that open the circuit breaker',
  },
  maxOutageMs: {
    flag: '--max-outage <duration>', kind: { type: 'duration', minMs: 0, maxMs: MAX_WAIT_MS }, shownDefault: '10m',
    help: 'halt (exit 3) when the partner has not recovered this long after the breaker opened, e.g. 90s, 10m; 0 = wait for ever',
  },
  maxRetryAfterMs: {
    flag: '--max-retry-after <duration>', kind: { type: 'duration', minMs: 0, maxMs: MAX_WAIT_MS }, shownDefault: '5m',
    help: 'a Retry-After longer than this halts the run instead of waiting',
  },
  maxRuntimeMs: {
    flag: '--max-runtime <duration>', kind: { type: 'duration', minMs: 1, maxMs: MAX_WAIT_MS }, shownDefault: 'none',
    help: 'stop like SIGTERM once the run has lasted this long, e.g. 2h',
  },
  leaseMs: {
    flag: '--lease <duration>', kind: { type: 'duration', minMs: 1000, maxMs: 3_600_000 }, shownDefault: '30s',
    help: 'PostgreSQL ledger: how long a worker holds its chunks without renewing; a dead worker\'s chunks wait this long',
  },
  adaptive: {
    flag: '--adaptive', kind: { type: 'switch', on: "adapt the requests in flight to the partner's answers, up to --concurrency", off: 'keep exactly --concurrency requests in flight' },
    help: '',
  },
  retryFailed: { flag: '--retry-failed', kind: { type: 'switch', on: 'resend rows left failed by an earlier run', off: 'leave rows left failed by an earlier run alone' }, help: '' },
  resendInDoubt: {
    flag: '--resend-in-doubt', kind: { type: 'switch', on: 'also resend rows left in_doubt (they may have reached the partner)', off: 'leave rows in doubt alone' }, help: '',
  },
} as const satisfies Record<string, Setting>;

export type RunSettingName = keyof typeof RUN_SETTINGS;

/** The resolved settings of a run. */
export interface RunSettings {
  /** The ledger's path (absolute) or connection string. */
  ledger: string;
  operation: (typeof OPERATIONS)[number];
  concurrency: number;
  rate: number;
  maxAttempts: number;
  timeoutMs: number;
  storeRequests: StoreRequests;
  maxConsecutiveFailures: number;
  maxOutageMs: number;
  maxRetryAfterMs: number;
  maxRuntimeMs: number | undefined;
  leaseMs: number;
  adaptive: boolean;
  retryFailed: boolean;
  resendInDoubt: boolean;
}

/** The config file's key of a setting: its flag's name (`--max-attempts <n>` → `max-attempts`). */
export function configKeyOf(setting: Setting): string {
  return setting.flag.replace(/^--/, '').replace(/ .*$/, '');
}

/** The help of a setting's flag, with its default. */
export function helpOf(name: RunSettingName): string {
  const setting: Setting = RUN_SETTINGS[name];
  const shown = setting.shownDefault ?? (name in DEFAULTS ? String(DEFAULTS[name as keyof typeof DEFAULTS]) : undefined);
  const env = setting.env === undefined ? '' : `; or ${setting.env}`;
  return shown === undefined ? `${setting.help}${env}` : `${setting.help} (default ${shown}${env})`;
}

/**
 * Resolves a run's settings: each flag given, else its environment variable, else the config
 * file's `defaults:` member, else the default. Flags and config values arrive checked (commander's
 * parsers and the config schema are made from the same table); an environment variable is text.
 */
export function resolveRunSettings(
  flags: Partial<Record<RunSettingName, unknown>>,
  env: Readonly<Record<string, string | undefined>>,
  configDefaults: Readonly<Record<string, unknown>>,
  cwd: string,
): RunSettings {
  const pick = <T>(name: RunSettingName, fallback: T): T => {
    const setting: Setting = RUN_SETTINGS[name];
    const fromEnv = setting.env === undefined ? undefined : env[setting.env]?.trim();
    return (flags[name] ?? (fromEnv === '' ? undefined : fromEnv) ?? configDefaults[configKeyOf(setting)] ?? fallback) as T;
  };
  return {
    ledger: resolveLedgerTarget(cwd, pick<string>('ledger', DEFAULTS.ledger)),
    operation: pick('operation', DEFAULTS.operation),
    concurrency: pick('concurrency', DEFAULTS.concurrency),
    rate: pick('rate', DEFAULTS.rate),
    maxAttempts: pick('maxAttempts', DEFAULTS.maxAttempts),
    timeoutMs: pick('timeoutMs', DEFAULTS.timeoutMs),
    storeRequests: pick('storeRequests', DEFAULTS.storeRequests),
    maxConsecutiveFailures: pick('maxConsecutiveFailures', DEFAULTS.maxConsecutiveFailures),
    maxOutageMs: pick('maxOutageMs', DEFAULTS.maxOutageMs),
    maxRetryAfterMs: pick('maxRetryAfterMs', DEFAULTS.maxRetryAfterMs),
    maxRuntimeMs: pick<number | undefined>('maxRuntimeMs', undefined),
    leaseMs: pick('leaseMs', DEFAULTS.leaseMs),
    adaptive: pick('adaptive', DEFAULTS.adaptive),
    retryFailed: pick('retryFailed', DEFAULTS.retryFailed),
    resendInDoubt: pick('resendInDoubt', DEFAULTS.resendInDoubt),
  };
}

/**
 * The ledger a command other than `run` works on: `--ledger`, else `QUOTE_BATCH_LEDGER`, else the
 * config file's `defaults.ledger`, else the default: the same one `run` writes.
 */
export function resolveLedger(cwd: string, flag: string | undefined, env: Readonly<Record<string, string | undefined>>, configDefaults: Readonly<Record<string, unknown>>): string {
  return resolveRunSettings({ ledger: flag }, env, configDefaults, cwd).ledger;
}

/** A ledger named by a flag, the environment or the config file: a connection string as it is, a file resolved against `cwd`. */
export function resolveLedgerTarget(cwd: string, value: string): string {
  return /^postgres(ql)?:\/\//i.test(value) ? value : resolve(cwd, value);
}
