/**
 * Bounds on the texts the ledger stores: the last line of defence against a partner (or a lead
 * file) that sends megabytes where a short id or message belongs. The partner client and the
 * mapping bound what they produce too; whatever still arrives longer is cut here, visibly.
 */
import { createHash } from 'node:crypto';

/** Longest id or code kept: `agent_id`, `transaction_id`, `quote_number`, `error_code`, `row_key`, e-mails. */
export const MAX_STORED_ID_CHARS = 256;
/** Longest message kept: `rows.error_message`, `agents.message`. */
export const MAX_STORED_MESSAGE_CHARS = 4_000;
/** Longest JSON document kept: `request_json`, `response_json`, `input_issues_json`. */
export const MAX_STORED_JSON_CHARS = 64 * 1024;

/**
 * Cuts a message to `max` characters, ending it with a marker that says how long it was:
 * `…[cut: 5242880 chars]`.
 */
export function boundText(text: string, max?: number): string;
export function boundText(text: string | null, max?: number): string | null;
export function boundText(text: string | null, max = MAX_STORED_MESSAGE_CHARS): string | null {
  if (text === null || text.length <= max) return text;
  return `${head(text, max)}…[cut: ${text.length} chars]`;
}

/**
 * Cuts an identity (a row key, an e-mail) so that equal inputs still give equal results and
 * different ones almost surely differ: the head, then a SHA-256 of the whole text.
 */
export function boundKey(text: string, max?: number): string;
export function boundKey(text: string | null, max?: number): string | null;
export function boundKey(text: string | null, max = MAX_STORED_ID_CHARS): string | null {
  if (text === null || text.length <= max) return text;
  const digest = createHash('sha256').update(text).digest('hex').slice(0, 16);
  return `${head(text, max)}…[cut: ${text.length} chars, sha256 ${digest}]`;
}

/**
 * Cuts a JSON document and keeps it valid JSON, so that `json_extract` over the column still
 * works (a query fails on the first malformed value): `{"_cut": true, "chars": n, "head": "…"}`.
 */
export function boundJson(text: string | null, max = MAX_STORED_JSON_CHARS): string | null {
  if (text === null || text.length <= max) return text;
  // Half: quoting the head as a JSON string escapes its own quotes and backslashes.
  return JSON.stringify({ _cut: true, chars: text.length, head: head(text, Math.floor(max / 2)) });
}

/** The first `max` characters, not splitting a surrogate pair. */
function head(text: string, max: number): string {
  const code = text.charCodeAt(max - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}
