/**
 * How each answer is read (the README's answer table): what one attempt's answer, or the lack of one,
 * means for the row, for the run, for the circuit breaker and for the concurrency limiter. Pure, so
 * that the whole table is tested without a network (test/partner/classify.test.ts).
 *
 * | answer                                               | quote / lead                        | agent validation        |
 * |------------------------------------------------------|-------------------------------------|-------------------------|
 * | 2xx, `status` success or absent, or body unreadable  | ok (a warning when unreadable)      | ok only when readable   |
 * | 2xx with `status` failed / error                     | rejected                            | transient: retried      |
 * | 400, 409, 413, 422 and other 4xx not listed below    | rejected                            | rejected (row invalid)  |
 * | 401, 403, 407 / 404, 405, 3xx (not followed)         | halt: key / endpoint is wrong       | halt                    |
 * | 429, 500, 502, 503, 504                              | retried (429 slows, 5xx breaker)    | retried                 |
 * | another 5xx or status                                | in_doubt (a write may have applied) | retried                 |
 * | time-out, reset or cut answer after the body left    | in_doubt                            | retried                 |
 * | no connection / refused / reset before the body left | retried                             | retried                 |
 *
 * A `Retry-After` longer than `--max-retry-after` is decided by the client (it depends on a flag).
 */
import type { AttemptKind, OutcomeKind } from './types.js';

/** Statuses by which the partner says "this failed, try again later". */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([429, 500, 502, 503, 504]);
/** The key is wrong: every request would fail alike. */
const AUTH_STATUSES: ReadonlySet<number> = new Set([401, 403, 407]);
/** The endpoint is wrong (a misrouted gateway or a wrong base URL): every request would fail alike. */
const ENDPOINT_STATUSES: ReadonlySet<number> = new Set([404, 405]);
/** An agent id longer than this is not an id: the answer is unreadable (and would bloat every request). */
export const MAX_AGENT_ID_LENGTH = 256;
/** A partner's message is kept up to this length. */
export const MAX_MESSAGE_LENGTH = 300;

/**
 * How the circuit breaker reads an attempt: `success` (the partner answered sensibly), `failure`
 * (a transient failure), `in_doubt` (a write that may have been applied: a failure too, and counted
 * on its own), `neutral` (says nothing about the partner's health: a 429, a halt).
 */
export type BreakerSignal = 'success' | 'failure' | 'in_doubt' | 'neutral';

export interface AttemptClass {
  /** What this attempt means for the call (a retryable attempt may be followed by another). */
  outcome: OutcomeKind;
  /** True when another attempt may follow (attempts and the Retry-After cap permitting). */
  retry: boolean;
  errorCode: string | null;
  breaker: BreakerSignal;
  /**
   * The partner refuses our rate (429): the limiter's pacing signal. A 503, even with `Retry-After`, is
   * an outage or an overload, not a rate limit: it cuts the window as an error does, and counts toward
   * the breaker; its `Retry-After` still sets its own request's wait.
   */
  throttled: boolean;
  /** Set for a 2xx whose body could not be read: the row succeeds, with this warning. */
  warning?: string;
}

/** One attempt's answer, as read off the wire (no got object). */
export type Answer =
  | {
      type: 'response';
      status: number;
      /** The parsed JSON body; raw text when it was not JSON; null when empty. */
      body: unknown;
    }
  | { type: 'transport'; code: string; bodySent: boolean };

/** Classifies one attempt's answer for an operation. */
export function classifyAnswer(kind: AttemptKind, answer: Answer): AttemptClass {
  if (answer.type === 'transport') return classifyTransportFailure(kind, answer.code, answer.bodySent);
  return classifyResponse(kind, answer.status, answer.body);
}

/** Classifies an HTTP answer by its status and, for a 2xx, by its body's `status`. */
export function classifyResponse(kind: AttemptKind, status: number, body: unknown): AttemptClass {
  const partnerCode = boundedCode(readString(body, 'error_code'));
  const base = { throttled: false };
  if (status >= 200 && status < 300) {
    if (kind === 'agent_validate') {
      return readValidation(body) === undefined
        ? { ...base, outcome: 'retryable', retry: true, errorCode: 'unreadable_answer', breaker: 'failure' }
        : { ...base, outcome: 'ok', retry: false, errorCode: null, breaker: 'success' };
    }
    if (!isObject(body)) {
      return {
        ...base, outcome: 'ok', retry: false, errorCode: null, breaker: 'success',
        warning: `the partner answered ${status} with a body that is not a JSON object: recorded as succeeded without its details`,
      };
    }
    const answerStatus = readString(body, 'status')?.toLowerCase();
    if (answerStatus === 'failed' || answerStatus === 'error') {
      return { ...base, outcome: 'rejected', retry: false, errorCode: partnerCode ?? `answer_${answerStatus}`, breaker: 'success' };
    }
    return { ...base, outcome: 'ok', retry: false, errorCode: null, breaker: 'success' };
  }
  if (status >= 300 && status < 400) {
    // Redirects are not followed: the key must not be replayed to a host we were not given.
    return { ...base, outcome: 'misrouted', retry: false, errorCode: 'unexpected_redirect', breaker: 'neutral' };
  }
  if (AUTH_STATUSES.has(status)) {
    return { ...base, outcome: 'forbidden', retry: false, errorCode: partnerCode ?? (status === 403 ? 'forbidden' : `http_${status}`), breaker: 'neutral' };
  }
  if (ENDPOINT_STATUSES.has(status)) return { ...base, outcome: 'misrouted', retry: false, errorCode: `http_${status}`, breaker: 'neutral' };
  if (status === 429) return { outcome: 'retryable', retry: true, errorCode: partnerCode ?? 'rate_limited', breaker: 'neutral', throttled: true };
  if (RETRYABLE_STATUSES.has(status)) {
    return { outcome: 'retryable', retry: true, errorCode: partnerCode ?? `http_${status}`, breaker: 'failure', throttled: false };
  }
  if (status >= 400 && status < 500) {
    return { ...base, outcome: 'rejected', retry: false, errorCode: partnerCode ?? `http_${status}`, breaker: 'success' };
  }
  // Another 5xx (501, 505, …) or a status outside the classes: nothing says whether a write was
  // applied. A read (agent validation) is safe to repeat.
  if (kind === 'agent_validate') return { ...base, outcome: 'retryable', retry: true, errorCode: partnerCode ?? `http_${status}`, breaker: 'failure' };
  return { ...base, outcome: 'in_doubt', retry: false, errorCode: partnerCode ?? `http_${status}`, breaker: 'in_doubt' };
}

/**
 * Classifies a failure with no (complete) answer. A request whose body never completely left cannot
 * have been processed, so it is retried; after the body left, a quote or lead may have been
 * processed and is `in_doubt` (never resent blindly). Agent validation is a read: always retried.
 */
export function classifyTransportFailure(kind: AttemptKind, code: string, bodySent: boolean): AttemptClass {
  if (!bodySent || kind === 'agent_validate') return { outcome: 'retryable', retry: true, errorCode: code, breaker: 'failure', throttled: false };
  return { outcome: 'in_doubt', retry: false, errorCode: code, breaker: 'in_doubt', throttled: false };
}

/** A readable validation result (README, agent validation): HTTP 200, `status` success, `data.is_valid` a boolean. */
export interface ValidationResult {
  isValid: boolean;
  /** The agent id when valid and given (a valid answer without one is still valid). */
  agentId: string | undefined;
  message: string;
}

/** Reads a validation answer's body; `undefined` when it is not a readable result. */
export function readValidation(body: unknown): ValidationResult | undefined {
  if (!isObject(body) || readString(body, 'status')?.toLowerCase() !== 'success') return undefined;
  const data = body.data;
  if (!isObject(data) || typeof data.is_valid !== 'boolean') return undefined;
  const agentId = data.agent_id;
  if (agentId !== undefined && agentId !== null && (typeof agentId !== 'string' || agentId.length > MAX_AGENT_ID_LENGTH)) return undefined;
  return {
    isValid: data.is_valid,
    agentId: data.is_valid && typeof agentId === 'string' && agentId.trim() !== '' ? agentId : undefined,
    message: (readString(body, 'message') ?? '').replace(/\s+/g, ' ').trim().slice(0, MAX_MESSAGE_LENGTH),
  };
}

/** Error codes that prove the request never reached the partner, whatever the timings say. */
export const NEVER_LEFT_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ENETUNREACH', 'EHOSTUNREACH',
]);

/** Time-out phases that end before the body is sent (got's `TimeoutError.event`). */
export const BEFORE_SEND_PHASES: ReadonlySet<string> = new Set(['lookup', 'connect', 'secureConnect', 'send']);

export function readString(body: unknown, key: string): string | undefined {
  if (!isObject(body)) return undefined;
  const value = body[key];
  return typeof value === 'string' ? value : undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A partner's `error_code` is kept only when it looks like a code (short, one token). */
function boundedCode(code: string | undefined): string | undefined {
  if (code === undefined) return undefined;
  const trimmed = code.trim();
  return trimmed !== '' && trimmed.length <= 64 && !/\s/.test(trimmed) ? trimmed : undefined;
}
