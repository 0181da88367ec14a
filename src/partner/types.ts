/**
 * Contract between the partner client and its callers (pipeline, `agents` command).
 * A call never throws for a per-request failure: it returns a classified {@link CallOutcome}.
 */
export type Environment = 'sandbox' | 'uat' | 'production';
export type Operation = 'quote' | 'lead';
export type AttemptKind = 'agent_validate' | Operation;

/**
 * - `ok`: 2xx (for agent validation: a readable result).
 * - `rejected`: 400 or another final 4xx (not 401/403/404/405/429), or a 2xx whose body says
 *   `failed`/`error`: fix the data.
 * - `forbidden`: 401/403/407: the key is wrong; the run halts.
 * - `misrouted`: 404, 405 or a redirect (not followed): the endpoint is wrong; the run halts.
 * - `retryable`: the partner said it failed (429/5xx), or the request provably never left, and the
 *   attempts are used up, or the client halted or was stopped before sending: safe to send again later.
 * - `in_doubt`: the body may have reached the partner but no answer came (time-out/reset after send).
 */
export type OutcomeKind = 'ok' | 'rejected' | 'forbidden' | 'misrouted' | 'retryable' | 'in_doubt';

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
  /**
   * The answer body as it may be stored: JSON text, redacted and bounded (a cut or non-JSON body
   * is stored as a small JSON object or string saying so); null when there was no answer.
   */
  storedBody: string | null;
  /** A 2xx whose body could not be read: the row succeeded, with this warning. */
  warning?: string | undefined;
  /** Set when this call made the client halt (key or endpoint wrong, a `Retry-After` too long). */
  halt?: string | undefined;
  /** Whole call, all attempts and waits included. */
  durationMs: number;
  attempts: AttemptRecord[];
}
