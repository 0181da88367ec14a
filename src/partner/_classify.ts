/**
 * How each answer is read (the README's answer table): what one attempt's answer, or the lack of one,
 * means for the row, for the run, for the circuit breaker and for the concurrency limiter. Pure, so
 * that the whole table is tested without a network (test/partner/classify.test.ts).
 *
 * | answer                                               | quote / lead                        | agent validation        |
 * |------------------------------------------------------|-------------------------------------|-------------------------|
 * | 2xx, `status` success or absent, or body unreadable  | ok (a warning when unreadable)      | ok only when readable   |
 * |   (not JSON, a bad gzip/deflate, cut after the headers, an unknown charset)                                       |
 * | 2xx with `status` failed / error                     | rejected                            | transient: retried      |
 * | 400, 409, 413, 422 and other 4xx not listed below    | rejected                            | rejected (row invalid)  |
 * | 401, 403 / 404, 405, 3xx (not followed)              | halt: key / endpoint is wrong       | halt                    |
 * | 407 (from the proxy, to CONNECT or to the request)   | halt: the proxy's credentials       | halt                    |
 * | the partner's certificate not trusted                | halt: --ca-file                     | halt                    |
 * | the partner refused our client certificate (alert)   | halt: --client-cert                 | halt                    |
 * | 429                                                  | retried (slows; the breaker's refusals) | retried             |
 * | 500, 502, 503, 504                                   | retried (the breaker's failures)    | retried                 |
 * | CONNECT refused by the proxy (502/503/504, other)    | retried: outage of the way out      | retried                 |
 * | another 5xx or status                                | in_doubt (a write may have applied) | retried                 |
 * | time-out, reset or cut answer after the body left    | in_doubt (a tunnel cut too)         | retried                 |
 * | no connection / refused / reset before the body left | retried (to the proxy too)          | retried                 |
 *
 * An answer is classified by its status once the status line has arrived, whatever then happens to
 * its body: only a send with no status at all can be in doubt. A `Retry-After` longer than
 * `--max-retry-after`, and a base URL that never answered (`unreachable`), are decided by the client
 * (they depend on a flag and on the run's history).
 */
import type { AttemptKind, OutcomeKind } from './types.js';

/** Statuses by which the partner says "this failed, try again later". */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([429, 500, 502, 503, 504]);
/** The key is wrong: every request would fail alike. */
const AUTH_STATUSES: ReadonlySet<number> = new Set([401, 403]);
/** The proxy wants credentials it was not given, or refused those it was: every request would fail alike. */
const PROXY_AUTH_REQUIRED = 407;
/** The endpoint is wrong (a misrouted gateway or a wrong base URL): every request would fail alike. */
const ENDPOINT_STATUSES: ReadonlySet<number> = new Set([404, 405]);
/** An agent id longer than this is not an id: the answer is unreadable (and would bloat every request). */
export const MAX_AGENT_ID_LENGTH = 256;
/** A partner's message is kept up to this length. */
export const MAX_MESSAGE_LENGTH = 300;

/**
 * How the circuit breaker reads an attempt: `success` (the partner answered sensibly: it accepted
 * the request, or refused it for good), `failure` (a transient failure), `in_doubt` (a write that
 * may have been applied: a failure too, and counted on its own), `refused` (a 429: the partner is
 * up but takes nothing; a breaker opens when it takes nothing for long, see circuit-breaker.ts),
 * `neutral` (says nothing about the partner's health: a halt).
 */
export type BreakerSignal = 'success' | 'failure' | 'in_doubt' | 'refused' | 'neutral';

/**
 * Why a request never reached a server at the base URL: its host name did not resolve (`name`), the
 * connection was refused (`refused`), or the TLS handshake failed (`tls`: a plain HTTP port, no
 * protocol or cipher in common). Before anything answered in a run, that is the address's fault,
 * not an outage.
 */
export type Unreachable = 'name' | 'refused' | 'tls';

/**
 * Why an attempt halts the run at once, every request being bound to fail alike: the partner refused
 * the key (`key`) or the endpoint is wrong (`endpoint`); the proxy refused its credentials
 * (`proxy_auth`); the partner's certificate is not trusted (`tls_trust`); the partner refused the
 * connection for want of a client certificate it trusts (`tls_client_cert`).
 */
export type HaltCause = 'key' | 'endpoint' | 'proxy_auth' | 'tls_trust' | 'tls_client_cert';

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
  /** Set when the run must halt at once (outcome `forbidden` or `misrouted`). */
  halt?: HaltCause;
  /** Set for a failure that proves no server answered at the address (see {@link Unreachable}). */
  unreachable?: Unreachable;
}

/** One attempt's answer, as read off the wire (no got object). */
export type Answer =
  | {
      type: 'response';
      status: number;
      /** The parsed JSON body; raw text when it was not JSON; null when empty. */
      body: unknown;
      /** Why the body could not be read although the status line arrived (see `RawAttempt`). */
      bodyError?: string | undefined;
    }
  | {
      type: 'transport';
      code: string;
      bodySent: boolean;
      /** Set when the proxy failed (no tunnel to the partner): its answer to CONNECT, if it gave one. */
      proxy?: { status?: number };
    };

/** Classifies one attempt's answer for an operation. */
export function classifyAnswer(kind: AttemptKind, answer: Answer): AttemptClass {
  if (answer.type === 'response') return classifyResponse(kind, answer.status, answer.body, answer.bodyError);
  if (answer.proxy !== undefined) return classifyProxyFailure(answer.code, answer.proxy.status);
  const tls = tlsRefusal(answer.code);
  if (tls === 'tls_trust') return { outcome: 'misrouted', retry: false, errorCode: answer.code, breaker: 'neutral', throttled: false, halt: tls };
  if (tls === 'tls_client_cert') return { outcome: 'forbidden', retry: false, errorCode: answer.code, breaker: 'neutral', throttled: false, halt: tls };
  return classifyTransportFailure(kind, answer.code, answer.bodySent);
}

/**
 * The proxy failed before any tunnel to the partner existed, so no request left: a 407 halts (the
 * proxy's credentials), anything else (a CONNECT refused with 502/503/504 or another status, no
 * connection to the proxy) is an outage of the way out: retried, counted toward the breaker.
 */
export function classifyProxyFailure(code: string, status: number | undefined): AttemptClass {
  if (status === PROXY_AUTH_REQUIRED) {
    return { outcome: 'forbidden', retry: false, errorCode: 'proxy_auth_required', breaker: 'neutral', throttled: false, halt: 'proxy_auth' };
  }
  return { outcome: 'retryable', retry: true, errorCode: status === undefined ? `proxy_${code}` : `proxy_http_${status}`, breaker: 'failure', throttled: false };
}

/**
 * Node's codes for our side not trusting the partner's certificate (it is checked before any byte
 * of the request is written) and OpenSSL's alerts by which the partner refuses the connection over
 * our certificate (TLS 1.3 sends it once the client has finished its handshake, but the server reads
 * no request on a connection it refused). Neither clears up by retrying.
 */
const TLS_UNTRUSTED = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT', 'CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID', 'CERT_UNTRUSTED', 'CERT_REVOKED', 'CERT_SIGNATURE_FAILURE',
  'CERT_CHAIN_TOO_LONG', 'INVALID_CA', 'ERR_TLS_CERT_ALTNAME_INVALID',
]);
const TLS_CLIENT_CERT_ALERT = /^ERR_SSL_(?:SSLV3|TLSV1|TLSV13)_ALERT_(?:CERTIFICATE_REQUIRED|BAD_CERTIFICATE|UNSUPPORTED_CERTIFICATE|CERTIFICATE_REVOKED|CERTIFICATE_EXPIRED|CERTIFICATE_UNKNOWN|UNKNOWN_CA|ACCESS_DENIED|HANDSHAKE_FAILURE)$/;

/** Whether a transport code is a TLS refusal that halts the run, and which. */
export function tlsRefusal(code: string): 'tls_trust' | 'tls_client_cert' | undefined {
  if (TLS_UNTRUSTED.has(code)) return 'tls_trust';
  return TLS_CLIENT_CERT_ALERT.test(code) ? 'tls_client_cert' : undefined;
}

/**
 * Classifies an HTTP answer by its status and, for a 2xx, by its body's `status`. `bodyError`: the
 * body could not be read (the status still decides; a 2xx then succeeds with a warning).
 */
export function classifyResponse(kind: AttemptKind, status: number, body: unknown, bodyError?: string): AttemptClass {
  if (bodyError !== undefined) body = null;
  const partnerCode = boundedCode(readString(body, 'error_code'));
  const base = { throttled: false };
  if (status >= 200 && status < 300) {
    if (kind === 'agent_validate') {
      return readValidation(body) === undefined
        ? { ...base, outcome: 'retryable', retry: true, errorCode: 'unreadable_answer', breaker: 'failure' }
        : { ...base, outcome: 'ok', retry: false, errorCode: null, breaker: 'success' };
    }
    if (bodyError !== undefined) {
      return {
        ...base, outcome: 'ok', retry: false, errorCode: null, breaker: 'success',
        warning: `the partner answered ${status}, but ${bodyError}: recorded as succeeded without its details`,
      };
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
    return { ...base, outcome: 'misrouted', retry: false, errorCode: 'unexpected_redirect', breaker: 'neutral', halt: 'endpoint' };
  }
  if (AUTH_STATUSES.has(status)) {
    return { ...base, outcome: 'forbidden', retry: false, errorCode: partnerCode ?? (status === 403 ? 'forbidden' : `http_${status}`), breaker: 'neutral', halt: 'key' };
  }
  // From a proxy on the way (to a plain-HTTP request, or a gateway's own): not the partner's key.
  if (status === PROXY_AUTH_REQUIRED) return { ...base, outcome: 'forbidden', retry: false, errorCode: 'proxy_auth_required', breaker: 'neutral', halt: 'proxy_auth' };
  if (ENDPOINT_STATUSES.has(status)) return { ...base, outcome: 'misrouted', retry: false, errorCode: `http_${status}`, breaker: 'neutral', halt: 'endpoint' };
  if (status === 429) return { outcome: 'retryable', retry: true, errorCode: partnerCode ?? 'rate_limited', breaker: 'refused', throttled: true };
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
  if (!bodySent) {
    const unreachable = unreachableBy(code);
    return { outcome: 'retryable', retry: true, errorCode: code, breaker: 'failure', throttled: false, ...(unreachable === undefined ? {} : { unreachable }) };
  }
  if (kind === 'agent_validate') return { outcome: 'retryable', retry: true, errorCode: code, breaker: 'failure', throttled: false };
  return { outcome: 'in_doubt', retry: false, errorCode: code, breaker: 'in_doubt', throttled: false };
}

/** What a transport code that stopped a request before it left says of the address, if anything (see {@link Unreachable}). */
export function unreachableBy(code: string): Unreachable | undefined {
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME' || code === 'EAI_FAIL') return 'name';
  if (code === 'ECONNREFUSED') return 'refused';
  if (isTlsFailure(code)) return 'tls';
  return undefined;
}

/**
 * True for a code of a failed TLS handshake: the connection never carried the request. `EPROTO`
 * (TLS spoken to a plain HTTP port, say) is one only before the secure connection was made: the
 * transport says so (`bodySent` false). A certificate we do not trust, or an alert refusing ours,
 * halts the run whenever it comes ({@link tlsRefusal}, checked first).
 */
export function isTlsFailure(code: string): boolean {
  return code === 'EPROTO' || code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_') || TLS_UNTRUSTED.has(code);
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
