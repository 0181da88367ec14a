/**
 * Contract between the partner client and its callers (pipeline, `agents` command).
 * A call never throws for a per-request failure: it returns a classified {@link CallOutcome}.
 */
export type Environment = 'sandbox' | 'uat' | 'production';
export type Operation = 'quote' | 'lead';
export type AttemptKind = 'agent_validate' | Operation;

/**
 * - `ok`: 2xx.
 * - `rejected`: 400 or another final 4xx (not 403/429): fix the data.
 * - `forbidden`: 403: the key is wrong; halt.
 * - `retryable`: the partner said it failed (429/5xx) or the request provably never left, and the
 *   attempts are used up (or the circuit breaker is open): safe to send again later.
 * - `in_doubt`: the body may have reached the partner but no answer came (time-out/reset after send).
 */
export type OutcomeKind = 'ok' | 'rejected' | 'forbidden' | 'retryable' | 'in_doubt';

export interface AttemptRecord {
  kind: AttemptKind;
  /** ISO 8601 UTC. */
  startedAt: string;
  durationMs: number;
  httpStatus: number | null;
  /** Partner `error_code`, or a transport code such as `ECONNREFUSED`, `ETIMEDOUT`, `ECONNRESET`. */
  errorCode: string | null;
  /** Classification of this single attempt (a retryable attempt may be followed by another). */
  outcome: OutcomeKind;
}

export interface CallOutcome<T = unknown> {
  kind: OutcomeKind;
  httpStatus: number | null;
  /** The parsed JSON body when there was one; raw text (truncated) when the body was not JSON. */
  body: unknown;
  /** `body` validated against the response schema, when it matched. */
  parsed: T | undefined;
  errorCode: string | null;
  /** A one-line human-readable reason; never contains the API key. */
  message: string;
  /** Whole call, all attempts and waits included. */
  durationMs: number;
  attempts: AttemptRecord[];
}
