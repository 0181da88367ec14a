/**
 * Configuration: `quote-batch.config.yaml` < environment variables < command-line flags.
 * The API key comes only from `QUOTE_BATCH_API_KEY` or a key file, never from a flag or the
 * config file, so it does not end up in shell history, `ps` output or a committed file.
 */
import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { isMap, isScalar, LineCounter, parseDocument, type Document } from 'yaml';
import { z } from 'zod';
import { formatDuration, MAX_WAIT_MS, parseDuration } from '../duration.js';
import { QuoteBatchError } from '../errors.js';
import { assertSafeBaseUrl } from '../partner/base-url.js';
import type { Environment } from '../partner/types.js';
import { resolveNetwork, type NetworkFlags, type NetworkSettings } from './network.js';
import { assertPrivateFile } from './private-file.js';
import { configKeyOf, RUN_SETTINGS, type Setting, type SettingKind } from './settings.js';

export const ENVIRONMENTS = ['sandbox', 'uat', 'production'] as const satisfies readonly Environment[];
export { DEFAULTS } from './defaults.js';
export {
  configKeyOf, helpOf, OPERATIONS, resolveLedger, resolveLedgerTarget, resolveRunSettings, RUN_SETTINGS, STORE_REQUESTS,
  type RunSettingName, type RunSettings, type Setting, type SettingKind, type StoreRequests,
} from './settings.js';

/** The default file name looked up in the working directory. */
export const CONFIG_FILE_NAME = 'quote-batch.config.yaml';
/** The key the sandbox accepts when none is configured. */
export const SANDBOX_DEFAULT_KEY = 'sandbox-key';

/**
 * A duration as the flags take it (`90s`, `10m`, `2h`, or a number of seconds), of at least `minMs`,
 * read into milliseconds: checked with the file, so that a bad one is named with its key and line
 * like any other value.
 */
function duration(minMs: number) {
  return z.union([z.string(), z.number()])
    .transform((value) => parseDuration(String(value)))
    .refine((ms): ms is number => ms !== undefined && ms >= minMs, {
      error: minMs > 0 ? 'expected a duration more than 0, such as 90s, 10m, 2h or a number of seconds' : 'expected a duration such as 90s, 10m, 2h or a number of seconds (0: none)',
      abort: true,
    })
    .refine((ms) => ms <= MAX_WAIT_MS, { error: `expected a duration of at most ${formatDuration(MAX_WAIT_MS)}` });
}

/** One environment: its base URL, and the TLS files of the way to it (config/network.ts). */
const EnvironmentEntry = z.strictObject({
  base_url: z.string().optional(),
  ca: z.string().optional(),
  client_cert: z.string().optional(),
  client_key: z.string().optional(),
  client_key_passphrase_file: z.string().optional(),
});

export const ConfigFile = z.strictObject({
  /** Base URLs per environment (`sandbox` may point at an external sandbox), with their TLS files. */
  environments: z
    .strictObject({
      sandbox: EnvironmentEntry.optional(),
      uat: EnvironmentEntry.optional(),
      production: EnvironmentEntry.optional(),
    })
    .optional(),
  /** Defaults for the flags of `run` (and `--env`/`--ledger` of the other commands): one member per setting of `settings.ts`. */
  defaults: z
    .strictObject({
      env: z.enum(ENVIRONMENTS).optional(),
      ...Object.fromEntries(Object.values(RUN_SETTINGS).map((setting: Setting) => [configKeyOf(setting), schemaOf(setting.kind).optional()])),
      'api-key-file': z.string().optional(),
      agents: z.string().optional(),
      /** The proxy to the partner (`--proxy`); the environment's HTTPS_PROXY wins over it. */
      proxy: z.string().optional(),
    })
    .optional(),
});

/** The check of a setting's value in the config file, from its kind. */
function schemaOf(kind: SettingKind): z.ZodType {
  switch (kind.type) {
    case 'integer':
      // "more than 0": an integer of at least 1 reads as the count it is.
      return z.number().int().gt(kind.min - 1).max(kind.max);
    case 'number':
      return z.number().min(kind.min).max(kind.max);
    case 'duration':
      return duration(kind.minMs);
    case 'choice':
      return z.enum(kind.choices as [string, ...string[]]);
    case 'switch':
      return z.boolean();
    case 'text':
      return z.string();
  }
}
export type ConfigFile = z.infer<typeof ConfigFile>;

export interface LoadedConfig {
  /** Absolute path of the file read, or null when there was none. */
  path: string | null;
  file: ConfigFile;
}

/**
 * Reads `--config <file>` (must exist) or `./quote-batch.config.yaml` (optional).
 * A malformed file is a configuration error naming the file, line, column and member, e.g.
 * `quote-batch.config.yaml:7:16: defaults.concurrency: too big (expected at most 1024, got 5000)`.
 */
export function loadConfig(explicitPath: string | undefined, cwd: string): LoadedConfig {
  const path = resolve(cwd, explicitPath ?? CONFIG_FILE_NAME);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (explicitPath === undefined && code === 'ENOENT') return { path: null, file: {} };
    const reason = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : code === 'EACCES' ? 'permission denied' : (error as Error).message;
    throw new QuoteBatchError('E_CONFIG', `cannot read config file ${path}: ${reason}`, {
      cause: error,
      hint: `pass --config <file> naming a readable YAML file, or leave --config out to use ./${CONFIG_FILE_NAME} when there is one`,
    });
  }
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: true, uniqueKeys: true });
  const syntax = doc.errors[0];
  if (syntax !== undefined) {
    const pos = syntax.linePos?.[0] ?? { line: 1, col: 1 };
    const message = (syntax.message.split('\n')[0] ?? syntax.message).replace(/ at line \d+, column \d+:?$/, '');
    throw new QuoteBatchError('E_CONFIG', `${path}:${pos.line}:${pos.col}: YAML: ${message}`, {
      hint: 'check the indentation and quoting on that line',
    });
  }
  const result = ConfigFile.safeParse(doc.toJS() ?? {});
  if (!result.success) {
    const issues = result.error.issues;
    const first = describeConfigIssue(issues[0] as z.core.$ZodIssue, doc, lineCounter);
    const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : '';
    throw new QuoteBatchError('E_CONFIG', `${path}:${first.line}:${first.col}: ${first.text}${more}`, {
      hint: first.hint ?? 'see "Configuration" in README.md for the members a config file may have',
    });
  }
  return { path, file: result.data };
}

/** One zod issue as `path: what (expected …, got …)`, at its line and column in the file. */
function describeConfigIssue(issue: z.core.$ZodIssue, doc: Document, lineCounter: LineCounter): { text: string; line: number; col: number; hint?: string } {
  const path = issue.path.filter((key): key is string | number => typeof key !== 'symbol');
  const got = valueAt(doc, path);
  const at = (keyPath: readonly (string | number)[], atKey: boolean): { line: number; col: number } => {
    const node = atKey ? keyNodeAt(doc, keyPath) : (doc.getIn(keyPath, true) as { range?: [number, number, number] } | undefined);
    return node?.range === undefined ? { line: 1, col: 1 } : lineCounter.linePos(node.range[0]);
  };
  const name = path.join('.') || '(top level)';
  switch (issue.code) {
    case 'unrecognized_keys': {
      const key = issue.keys[0] ?? '';
      const allowed = allowedKeysAt(path);
      return {
        text: `${[...path, key].join('.')}: unknown key (expected one of ${allowed.join(', ')}, got "${key}")`,
        ...at([...path, key], true),
        hint: 'see "Configuration" in README.md; flag names are written as on the command line, e.g. max-attempts',
      };
    }
    case 'invalid_type':
      return { text: `${name}: wrong type (expected ${describeExpected(issue.expected)}, got ${describeValue(got)})`, ...at(path, false) };
    case 'invalid_value':
      return { text: `${name}: not allowed (expected one of ${issue.values.map(String).join(', ')}, got ${describeValue(got)})`, ...at(path, false) };
    case 'too_big':
      return { text: `${name}: too big (expected ${issue.inclusive === false ? 'less than' : 'at most'} ${String(issue.maximum)}, got ${describeValue(got)})`, ...at(path, false) };
    case 'too_small':
      return { text: `${name}: too small (expected ${issue.inclusive === false ? 'more than' : 'at least'} ${String(issue.minimum)}, got ${describeValue(got)})`, ...at(path, false) };
    default:
      return { text: `${name}: ${issue.message} (got ${describeValue(got)})`, ...at(path, false) };
  }
}

function valueAt(doc: Document, path: readonly (string | number)[]): unknown {
  const node = doc.getIn(path, true);
  return isScalar(node) ? node.value : (node as { toJSON?: () => unknown } | undefined)?.toJSON?.();
}

function keyNodeAt(doc: Document, path: readonly (string | number)[]): { range?: [number, number, number] } | undefined {
  const parent = path.length === 1 ? doc.contents : doc.getIn(path.slice(0, -1), true);
  if (!isMap(parent)) return undefined;
  const key = String(path[path.length - 1]);
  const pair = parent.items.find((item) => isScalar(item.key) && String(item.key.value) === key);
  return pair?.key as { range?: [number, number, number] } | undefined;
}

/** The members the config schema allows at `path` (a map). */
function allowedKeysAt(path: readonly (string | number)[]): string[] {
  let schema: z.ZodType = ConfigFile;
  for (const key of path) {
    while (schema instanceof z.ZodOptional) schema = schema.unwrap() as z.ZodType;
    if (!(schema instanceof z.ZodObject)) return [];
    schema = (schema.shape as Record<string, z.ZodType>)[String(key)] ?? z.never();
  }
  while (schema instanceof z.ZodOptional) schema = schema.unwrap() as z.ZodType;
  return schema instanceof z.ZodObject ? Object.keys(schema.shape) : [];
}

function describeExpected(expected: string): string {
  return expected === 'int' ? 'an integer' : expected === 'object' ? 'a map' : expected === 'array' ? 'a list' : `a ${expected}`;
}

function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a map';
  return JSON.stringify(value);
}

/** Flags shared by every command that talks to the partner. */
export interface ConnectionFlags extends NetworkFlags {
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
  /** The proxy, CAs and client certificate of the way to the partner. */
  network: NetworkSettings;
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
  const network = resolveNetwork(flags, env, {
    defaults: { proxy: config.file.defaults?.proxy },
    environment: config.file.environments?.[environment] ?? {},
  }, baseUrl, cwd);
  return { environment, baseUrl, apiKey, apiKeySource, network };
}

function readKeyFile(path: string): string {
  const fail = (reason: string, hint: string, cause?: unknown): QuoteBatchError =>
    new QuoteBatchError('E_CONFIG', `API key file ${path} ${reason}`, { cause, hint });
  let text: string;
  try {
    if (!statSync(path).isFile()) throw fail('is not a regular file', 'pass --api-key-file <file> naming the file that holds the key');
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if (error instanceof QuoteBatchError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw fail('does not exist', 'pass --api-key-file <file> naming the file that holds the key, or set QUOTE_BATCH_API_KEY', error);
    if (code === 'EACCES' || code === 'EPERM') throw fail('cannot be read: permission denied', 'make it readable by the user quote-batch runs as (and by nobody else: chmod 600)', error);
    throw fail(`cannot be read: ${(error as Error).message}`, 'pass --api-key-file <file> naming a readable file', error);
  }
  const key = text.trim();
  if (key === '') throw fail('is empty', 'write the key alone on the first line of the file');
  if (/\s/.test(key)) throw fail('must hold the key alone on one line', 'remove everything but the key (no name, no quotes, no second line)');
  assertPrivateFile(path, 'API key file');
  return key;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}
