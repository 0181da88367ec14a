/**
 * What the client makes of an answer's text, apart from classifying it: the body parsed (and what of
 * it may be stored, bounded), and the one-line description a row's error message and the logs use.
 * Pure functions of the redacted text.
 */
import type { RawAttempt } from './_transport.js';
import { MAX_MESSAGE_LENGTH, readString, type AttemptClass, type HaltCause } from './_classify.js';
import type { HaltKind } from './client-api.js';

/** Non-JSON bodies are kept for diagnosis, but not whole: an HTML error page can be large. */
const MAX_RAW_BODY = 2000;
/** A JSON answer longer than this is stored as its head only. */
const MAX_STORED_BODY = 16 * 1024;

/** An answer's body: parsed (JSON, else its text), and what may be stored of it. */
export interface Parsed {
  body: unknown;
  stored: string | null;
}

/**
 * Parses the redacted `clean`; also renders what may be stored of the body (bounded JSON text).
 * `unreadable`: why the body could not be read (a bad gzip, cut short…): what arrived of it is kept
 * as a note, never parsed.
 */
export function parseAnswerBody(clean: string, truncated: boolean, bytes: number, unreadable?: string): Parsed {
  if (unreadable !== undefined) {
    const head = clean.length > MAX_RAW_BODY ? `${clean.slice(0, MAX_RAW_BODY)}…` : clean;
    return { body: head === '' ? null : head, stored: JSON.stringify({ quote_batch_note: `answer not readable: ${unreadable}`, head }) };
  }
  if (clean.trim() === '') return { body: null, stored: null };
  if (!truncated) {
    try {
      const body = JSON.parse(clean) as unknown;
      if (clean.length <= MAX_STORED_BODY) return { body, stored: clean };
      return { body, stored: JSON.stringify({ quote_batch_note: `answer of ${bytes} bytes; only its beginning is kept`, head: clean.slice(0, MAX_RAW_BODY) }) };
    } catch {
      // Not JSON: kept as (bounded) text below.
    }
  }
  const head = clean.length > MAX_RAW_BODY ? `${clean.slice(0, MAX_RAW_BODY)}…` : clean;
  const stored = truncated
    ? JSON.stringify({ quote_batch_note: `answer longer than ${bytes} bytes: cut there`, head })
    : JSON.stringify(head);
  return { body: head, stored };
}

/** One attempt in a line: the transport error, or the status with the partner's error code and message. */
export function describeAttempt(raw: RawAttempt, body: unknown, cls: AttemptClass): string {
  if (raw.type === 'transport') {
    const sent = cls.outcome === 'in_doubt' ? ' after the body was sent: the partner may have processed it' : '';
    return `${raw.code} (${raw.detail}${sent})`;
  }
  const partnerMessage = readString(body, 'message');
  const code = readString(body, 'error_code');
  const reason = [code?.slice(0, 64), partnerMessage === undefined ? undefined : partnerMessage.slice(0, MAX_MESSAGE_LENGTH)]
    .filter((s): s is string => s !== undefined && s !== '')
    .join(': ');
  const cut = raw.truncated ? `, answer cut at ${raw.bytes} bytes` : '';
  const unreadable = raw.bodyError !== undefined ? `, body not readable: ${raw.bodyError}` : cls.errorCode === 'unreadable_answer' ? ', not a readable answer' : '';
  return reason === '' ? `${statusOf(raw)}${cut}${unreadable}` : `${statusOf(raw)} (${reason})${cut}${unreadable}`;
}

/** The status and its text (`503 Service Unavailable`), or the transport code. */
export function statusOf(raw: RawAttempt): string {
  if (raw.type === 'transport') return raw.code.slice(0, 64);
  const text = raw.statusText.replace(/[^\x20-\x7e]/g, '').slice(0, 60);
  return `${raw.status}${text === '' ? '' : ` ${text}`}`;
}

/** What the wording of a halt needs to know of the client. */
export interface HaltContext {
  /** The operation's path (`/partner/v2/policy/quote`). */
  path: string;
  /** Said after the verb, e.g. " while probing". */
  when: string;
  baseShown: string;
  proxyShown: string | undefined;
  proxyHasCredentials: boolean;
  hasClientCert: boolean;
}

/** The halt an attempt classified `forbidden` or `misrouted` calls for, and its reason: one line, no secret, naming the hop. */
export function haltOf(cls: AttemptClass, raw: RawAttempt, c: HaltContext): { kind: HaltKind; reason: string } {
  const cause: HaltCause = cls.halt ?? (cls.outcome === 'forbidden' ? 'key' : 'endpoint');
  const tlsDetail = raw.type === 'transport' ? `${raw.code}: ${raw.detail}` : statusOf(raw);
  switch (cause) {
    case 'key':
      return { kind: 'forbidden', reason: `the partner refused the API key (${statusOf(raw)})${c.when}: it is wrong for this environment, or revoked` };
    case 'endpoint':
      return { kind: 'misrouted', reason: `the partner answered ${statusOf(raw)} for ${c.path}${c.when}: the base URL or the endpoint is wrong (a misrouted gateway?)` };
    case 'proxy_auth': {
      const proxy = c.proxyShown === undefined ? 'a proxy on the way to the partner' : `the proxy ${c.proxyShown}`;
      const given = c.proxyHasCredentials ? 'refused the user and password given in its URL' : 'asks for a user and password, and its URL gives none';
      return { kind: 'proxy_auth', reason: `${proxy} answered 407 Proxy Authentication Required${c.when}: it ${given} (not the partner's API key)` };
    }
    case 'tls_trust':
      return { kind: 'tls_trust', reason: `the TLS certificate of ${c.baseShown} is not trusted${c.when} (${tlsDetail})` };
    case 'tls_client_cert': {
      const given = c.hasClientCert ? 'did not accept the client certificate given (--client-cert)' : 'asks for a client certificate (mutual TLS), and none was given';
      return { kind: 'tls_client_cert', reason: `${c.baseShown} refused the TLS connection${c.when} (${tlsDetail}): it ${given}` };
    }
  }
}

/**
 * A transient failure as the outage's halt names it (its last one): the answer, the hop that failed
 * when it was the proxy's, or a request sent and not answered `withinTimeout`.
 */
export function failureText(raw: RawAttempt, withinTimeout: string, proxyShown: string | undefined): string {
  if (raw.type === 'response') return `its last answer ${statusOf(raw)}`;
  if (raw.proxy !== undefined) return `last attempt stopped at the proxy hop: ${raw.detail}`;
  if (raw.code === 'ETIMEDOUT' && raw.bodySent) return `last attempt sent and not answered ${withinTimeout}`;
  return `last attempt ${statusOf(raw)}, no answer${proxyShown === undefined ? '' : ` (through the proxy ${proxyShown})`}`;
}
