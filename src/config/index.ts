/**
 * Configuration: `quote-batch.config.yaml` < environment variables < command-line flags.
 * The API key comes only from `QUOTE_BATCH_API_KEY` or a key file, never from a flag or the
 * config file, so it does not end up in shell history, `ps` output or a committed file.
 */
import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { QuoteBatchError } from '../errors.js';
import { assertSafeBaseUrl } from '../partner/base-url.js';
import type { Environment, Operation } from '../partner/types.js';

export const ENVIRONMENTS = ['sandbox', 'uat', 'production'] as const satisfies readonly Environment[];
export const OPERATIONS = ['quote', 'lead'] as const satisfies readonly Operation[];
export const STORE_REQUESTS = ['none', 'masked', 'full'] as const;
export type StoreRequests = (typeof STORE_REQUESTS)[number];

/** The default file name looked up in the working directory. */
export const CONFIG_FILE_NAME = 'quote-batch.config.yaml';
/** The key the sandbox accepts when none is configured. */
export const SANDBOX_DEFAULT_KEY = 'sandbox-key';

const positiveInt = z.number().int().positive();

/** The config file as the user writes it. Every member is optional. */
export const ConfigFile = z.strictObject({
  /** Base URLs per environment (`sandbox` may point at an external sandbox). */
  environments: z
    .strictObject({
      sandbox: z.strictObject({ base_url: z.string().optional() }).optional(),
      uat: z.strictObject({ base_url: z.string().optional() }).optional(),
      production: z.strictObject({ base_url: z.string().optional() }).optional(),
    })
    .optional(),
  /** Defaults for the flags of `run` (and `--env`/`--ledger` of the other commands). */
  defaults: z
    .strictObject({
      env: z.enum(ENVIRONMENTS).optional(),
      ledger: z.string().optional(),
      operation: z.enum(OPERATIONS).optional(),
      concurrency: positiveInt.max(1024).optional(),
      rate: z.number().nonnegative().optional(),
      'max-attempts': positiveInt.max(100).optional(),
      timeout: positiveInt.optional(),
      'store-requests': z.enum(STORE_REQUESTS).optional(),
      'max-consecutive-failures': positiveInt.optional(),
      /** Durations: `90s`, `10m`, `2h`, or a number of seconds. */
      'max-outage': z.union([z.string(), z.number().nonnegative()]).optional(),
      'max-retry-after': z.union([z.string(), z.number().nonnegative()]).optional(),
      'max-runtime': z.union([z.string(), z.number().nonnegative()]).optional(),
      adaptive: z.boolean().optional(),
      'resend-in-doubt': z.boolean().optional(),
      'retry-failed': z.boolean().optional(),
      'api-key-file': z.string().optional(),
      agents: z.string().optional(),
    })
    .optional(),
});
export type ConfigFile = z.infer<typeof ConfigFile>;

export interface LoadedConfig {
  /** Absolute path of the file read, or null when there was none. */
  path: string | null;
  file: ConfigFile;
}

/**
 * Reads `--config <file>` (must exist) or `./quote-batch.config.yaml` (optional).
 * A malformed file is a configuration error naming the file, line and member.
 */
export function loadConfig(explicitPath: string | undefined, cwd: string): LoadedConfig {
  const path = resolve(cwd, explicitPath ?? CONFIG_FILE_NAME);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if (explicitPath === undefined && (error as NodeJS.ErrnoException).code === 'ENOENT') {
      return { path: null, file: {} };
    }
    throw new QuoteBatchError('E_CONFIG', `cannot read config file ${path}: ${(error as Error).message}`);
  }
  const doc = parseDocument(text, { prettyErrors: true });
  if (doc.errors.length > 0) {
    throw new QuoteBatchError('E_CONFIG', `config file ${path}: ${doc.errors[0]?.message ?? 'invalid YAML'}`);
  }
  const result = ConfigFile.safeParse(doc.toJS() ?? {});
  if (!result.success) {
    const issue = result.error.issues[0];
    const where = issue === undefined ? '' : issue.path.join('.');
    throw new QuoteBatchError('E_CONFIG', `config file ${path}: ${where}: ${issue?.message ?? 'invalid'}`, {
      hint: 'see "Configuration" in README.md for the members a config file may have',
    });
  }
  return { path, file: result.data };
}

/** Flags shared by every command that talks to the partner. */
export interface ConnectionFlags {
  env?: string;
  baseUrl?: string;
  apiKeyFile?: string;
  config?: string;
}

export interface ConnectionSettings {
  environment: Environment;
  /** null: start the embedded sandbox in-process. */
  baseUrl: string | null;
  apiKey: string;
  /** Where the key came from, for messages (never the key itself). */
  apiKeySource: string;
}

/**
 * Resolves which deployment to call, its base URL and the API key.
 * `--env` defaults to `sandbox` only when no base URL is configured anywhere.
 */
export function resolveConnection(
  flags: ConnectionFlags,
  env: Readonly<Record<string, string | undefined>>,
  config: LoadedConfig,
  cwd: string,
): ConnectionSettings {
  const urls: Record<Environment, string | undefined> = {
    sandbox: nonEmpty(env.QUOTE_BATCH_SANDBOX_URL) ?? config.file.environments?.sandbox?.base_url,
    uat: nonEmpty(env.QUOTE_BATCH_UAT_URL) ?? config.file.environments?.uat?.base_url,
    production: nonEmpty(env.QUOTE_BATCH_PRODUCTION_URL) ?? config.file.environments?.production?.base_url,
  };
  let environment: Environment;
  const requested = flags.env ?? config.file.defaults?.env;
  if (requested !== undefined) {
    if (!(ENVIRONMENTS as readonly string[]).includes(requested)) {
      throw new QuoteBatchError('E_USAGE', `--env must be one of ${ENVIRONMENTS.join(', ')}, got "${requested}"`);
    }
    environment = requested as Environment;
  } else if (flags.baseUrl === undefined && urls.uat === undefined && urls.production === undefined) {
    environment = 'sandbox';
  } else {
    throw new QuoteBatchError('E_USAGE', 'a base URL is configured, so --env is required', {
      hint: 'pass --env uat or --env production (or --env sandbox for the embedded sandbox)',
    });
  }

  const baseUrl = flags.baseUrl ?? urls[environment] ?? null;
  // Refuse an unsafe URL before anything (a ledger file, a job) is created.
  if (baseUrl !== null) assertSafeBaseUrl(baseUrl);
  if (baseUrl === null && environment !== 'sandbox') {
    throw new QuoteBatchError('E_CONFIG', `no base URL for environment "${environment}"`, {
      hint: `set QUOTE_BATCH_${environment.toUpperCase()}_URL, or environments.${environment}.base_url in ${CONFIG_FILE_NAME}, or pass --base-url`,
    });
  }

  const keyFile = flags.apiKeyFile ?? config.file.defaults?.['api-key-file'];
  let apiKey: string | undefined;
  let apiKeySource: string;
  if (keyFile !== undefined) {
    apiKey = readKeyFile(resolve(cwd, keyFile));
    apiKeySource = `key file ${keyFile}`;
  } else {
    apiKey = nonEmpty(env.QUOTE_BATCH_API_KEY);
    apiKeySource = 'QUOTE_BATCH_API_KEY';
  }
  if (apiKey === undefined) {
    if (environment !== 'sandbox') {
      throw new QuoteBatchError('E_CONFIG', `no API key for environment "${environment}"`, {
        hint: 'set QUOTE_BATCH_API_KEY or pass --api-key-file <file> (there is no flag that takes the key itself)',
      });
    }
    apiKey = SANDBOX_DEFAULT_KEY;
    apiKeySource = `the sandbox default key "${SANDBOX_DEFAULT_KEY}"`;
  }
  return { environment, baseUrl, apiKey, apiKeySource };
}

function readKeyFile(path: string): string {
  let text: string;
  try {
    if (!statSync(path).isFile()) throw new Error('not a regular file');
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new QuoteBatchError('E_CONFIG', `cannot read API key file ${path}: ${(error as Error).message}`);
  }
  const key = text.trim();
  if (key === '' || /\s/.test(key)) {
    throw new QuoteBatchError('E_CONFIG', `API key file ${path} must hold the key alone on one line`);
  }
  return key;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}
