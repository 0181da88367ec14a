/**
 * The default of every setting, written once (README, "Configuration"): the flags' help, the run's
 * settings (`settings.ts`) and the partner client's own defaults (for library users) all read it.
 */
export const DEFAULTS = {
  /** The ledger a command works on, relative to the working directory. */
  ledger: 'quote-batch.db',
  operation: 'quote',
  /** Requests in flight at most. */
  concurrency: 8,
  /** Requests per second at most; 0 = no cap. */
  rate: 0,
  /** Attempts per request for retryable failures. */
  maxAttempts: 5,
  /** Whole-request time-out. */
  timeoutMs: 30_000,
  storeRequests: 'masked',
  /** Consecutive transient failures of one operation that open its circuit breaker. */
  maxConsecutiveFailures: 10,
  /** A breaker open this long without recovery halts the run. */
  maxOutageMs: 600_000,
  /** A `Retry-After` longer than this halts the run instead of waiting. */
  maxRetryAfterMs: 300_000,
  adaptive: true,
  retryFailed: true,
  resendInDoubt: false,
  /** First back-off ceiling (full jitter, doubling per attempt) and the largest. */
  backoffBaseMs: 500,
  backoffCapMs: 30_000,
  /** First pause between probes of an open breaker; doubles per failed probe up to the cap. */
  breakerCooldownMs: 1000,
  breakerMaxCooldownMs: 30_000,
  /**
   * A worker's lease on its chunks (PostgreSQL ledger): renewed every third of it; a worker that dies
   * leaves its chunks to the others once it has run out.
   */
  leaseMs: 30_000,
  /** Answer bodies are read up to this many bytes (decompressed). */
  maxBodyBytes: 1024 * 1024,
} as const;
