/**
 * What the client makes of an answer's text, apart from classifying it: the body parsed (and what of
 * it may be stored, bounded), and the one-line description a row's error message and the logs use.
 * Pure functions of the redacted text.
 */
import type { RawAttempt } from './_transport.js';
import { MAX_MESSAGE_LENGTH, readString, type AttemptClass } from './_classify.js';

/** Non-JSON bodies are kept for diagnosis, but not whole: an HTML error page can be large. */
const MAX_RAW_BODY = 2000;
/** A JSON answer longer than this is stored as its head only. */
const MAX_STORED_BODY = 16 * 1024;

/** An answer's body: parsed (JSON, else its text), and what may be stored of it. */
export interface Parsed {
  body: unknown;
  stored: string | null;
}

/** Parses the redacted `clean`; also renders what may be stored of the body (bounded JSON text). */
export function parseAnswerBody(clean: string, truncated: boolean, bytes: number): Parsed {
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
  const unreadable = cls.errorCode === 'unreadable_answer' ? ', not a readable answer' : '';
  return reason === '' ? `${statusOf(raw)}${cut}${unreadable}` : `${statusOf(raw)} (${reason})${cut}${unreadable}`;
}

/** The status and its text (`503 Service Unavailable`), or the transport code. */
export function statusOf(raw: RawAttempt): string {
  if (raw.type === 'transport') return raw.code.slice(0, 64);
  const text = raw.statusText.replace(/[^\x20-\x7e]/g, '').slice(0, 60);
  return `${raw.status}${text === '' ? '' : ` ${text}`}`;
}
