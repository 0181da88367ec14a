/**
 * Every error quote-batch raises on purpose is a {@link QuoteBatchError} with a stable `code`.
 * A single row's failure is never an exception: it is recorded as data (see the ledger's `rows`).
 * Only faults of a whole command or run are thrown.
 */
export type ErrorCode =
  /** A flag, argument or combination of them is wrong. */
  | 'E_USAGE'
  /** The config file, an environment variable or the API key is missing or invalid. */
  | 'E_CONFIG'
  /** The mapping file cannot be read, parsed or validated, or names columns the input lacks. */
  | 'E_MAPPING'
  /** The input file cannot be opened or its header cannot be read. */
  | 'E_INPUT'
  /** The ledger cannot be opened, created or written, or is from a newer version. */
  | 'E_LEDGER'
  /** Another live process holds the job (a run, `resolve` or `prune` of it): exit 4, nothing was done. */
  | 'E_JOB_LOCKED'
  /** The run halted: the partner refused the API key (401/403): it is wrong for this environment. */
  | 'E_FORBIDDEN'
  /** The run halted: the partner answered 404/405 or a redirect: the base URL or the endpoint is wrong. */
  | 'E_MISROUTED'
  /** The run halted: the partner asked (Retry-After) to wait longer than `--max-retry-after`. */
  | 'E_RETRY_AFTER'
  /** The run halted: the quota the partner announces for this key is spent until a reset beyond `--max-retry-after`. */
  | 'E_QUOTA_SPENT'
  /** The run halted: the partner looks down (no recovery within `--max-outage`, or too many sends in doubt). */
  | 'E_CIRCUIT_OPEN'
  /** The run halted: the proxy refused its credentials (407 Proxy Authentication Required). */
  | 'E_PROXY_AUTH'
  /** The run halted: the partner's TLS certificate is not trusted, or it refused our client certificate. */
  | 'E_TLS'
  /** The run halted: the partner refused every request with 429 for `--max-outage` (its quota for the key may be spent). */
  | 'E_RATE_LIMITED'
  /** The run halted: the base URL has not answered once (its name does not resolve, the connection is refused, TLS fails). */
  | 'E_UNREACHABLE'
  /** The process environment is unsafe (e.g. TLS verification disabled). */
  | 'E_UNSAFE'
  /** The sandbox could not start. */
  | 'E_SANDBOX'
  /** Standard output was closed by its reader (`… | head`): the command ends quietly, exit 0. */
  | 'E_OUTPUT_CLOSED';

export class QuoteBatchError extends Error {
  readonly code: ErrorCode;
  /** A short hint printed under the message at the CLI edge. */
  readonly hint: string | undefined;

  constructor(code: ErrorCode, message: string, options: { cause?: unknown; hint?: string } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'QuoteBatchError';
    this.code = code;
    this.hint = options.hint;
  }
}

/** Usage and configuration errors: the CLI exits 2 and nothing was sent. */
export const USAGE_ERROR_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'E_USAGE',
  'E_CONFIG',
  'E_MAPPING',
  'E_INPUT',
  'E_LEDGER',
  'E_UNSAFE',
  'E_SANDBOX',
]);

/**
 * The exit code the CLI gives a command that ended on `code`: 2 usage or configuration (nothing
 * sent), 4 the job is held by another live process (nothing done), 0 the reader closed standard
 * output, 3 otherwise (the run halted: run again to resume).
 */
export function exitCodeOfError(code: ErrorCode): 0 | 2 | 3 | 4 {
  if (code === 'E_JOB_LOCKED') return 4;
  if (code === 'E_OUTPUT_CLOSED') return 0;
  return USAGE_ERROR_CODES.has(code) ? 2 : 3;
}

export function isQuoteBatchError(error: unknown): error is QuoteBatchError {
  return error instanceof QuoteBatchError;
}
