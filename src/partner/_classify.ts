/**
 * Classification of one attempt (contract §5): what the partner's answer, or the lack of one,
 * means for the row. Pure, so that the whole table is tested without a network.
 */
import type { AttemptKind, OutcomeKind } from './types.js';

/** Statuses by which the partner says "this failed, try again later". */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([429, 500, 502, 503, 504]);

/** How the breaker should read an attempt. */
export type BreakerSignal = 'success' | 'failure' | 'neutral';

export interface AttemptClass {
  outcome: OutcomeKind;
  /** True when another attempt may follow (attempts and the Retry-After cap permitting). */
  retry: boolean;
  errorCode: string | null;
  breaker: BreakerSignal;
}

/** Classifies an HTTP answer by its status; the body only supplies the partner's `error_code`. */
export function classifyResponse(kind: AttemptKind, status: number, body: unknown): AttemptClass {
  const partnerCode = readString(body, 'error_code');
  if (status >= 200 && status < 300) return { outcome: 'ok', retry: false, errorCode: null, breaker: 'success' };
  if (status >= 300 && status < 400) {
    // Redirects are not followed: the key must not be replayed to a host we were not given.
    return { outcome: 'rejected', retry: false, errorCode: 'unexpected_redirect', breaker: 'success' };
  }
  if (status === 403) return { outcome: 'forbidden', retry: false, errorCode: partnerCode ?? 'forbidden', breaker: 'success' };
  if (status === 429) return { outcome: 'retryable', retry: true, errorCode: partnerCode ?? 'rate_limited', breaker: 'neutral' };
  if (RETRYABLE_STATUSES.has(status)) {
    return { outcome: 'retryable', retry: true, errorCode: partnerCode ?? `http_${status}`, breaker: 'failure' };
  }
  if (status >= 400 && status < 500) {
    return { outcome: 'rejected', retry: false, errorCode: partnerCode ?? `http_${status}`, breaker: 'success' };
  }
  // Another 5xx (501, 505, …) or a status outside the classes: nothing says whether a write was
  // applied. A read (agent validation) is safe to repeat.
  if (kind === 'agent_validate') {
    return { outcome: 'retryable', retry: true, errorCode: partnerCode ?? `http_${status}`, breaker: 'failure' };
  }
  return { outcome: 'in_doubt', retry: false, errorCode: partnerCode ?? `http_${status}`, breaker: 'failure' };
}

/**
 * Classifies a failure with no answer. A request whose body never completely left cannot have
 * been processed, so it is retried; after the body left, a quote or lead may have been processed
 * and is `in_doubt` (never resent blindly). Agent validation is a read: always safe to retry.
 */
export function classifyTransportFailure(kind: AttemptKind, code: string, bodySent: boolean): AttemptClass {
  if (!bodySent || kind === 'agent_validate') return { outcome: 'retryable', retry: true, errorCode: code, breaker: 'failure' };
  return { outcome: 'in_doubt', retry: false, errorCode: code, breaker: 'failure' };
}

/** Error codes that prove the request never reached the partner, whatever the timings say. */
export const NEVER_LEFT_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ENETUNREACH', 'EHOSTUNREACH',
]);

/** Time-out phases that end before the body is sent (got's `TimeoutError.event`). */
export const BEFORE_SEND_PHASES: ReadonlySet<string> = new Set(['lookup', 'connect', 'secureConnect', 'send']);

export function readString(body: unknown, key: string): string | undefined {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const value = (body as Record<string, unknown>)[key];
  return typeof value === 'string' ? value : undefined;
}
