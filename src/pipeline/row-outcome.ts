/**
 * From a partner call's outcome to what the ledger keeps of the row (the README's answer table, the
 * "row becomes" column), with every stored text bounded.
 */
import type { RowOutcome, RowState } from '../ledger/index.js';
import type { QuoteSuccessResponse } from '../partner/schemas.js';
import type { CallOutcome } from '../partner/types.js';

/** A request body longer than this is not sent: the row is `invalid` (the partner would refuse it, 413). */
export const MAX_REQUEST_BYTES = 1024 * 1024;
/** Stored error messages are cut here. */
const MAX_MESSAGE = 1000;
/** Stored ids (transaction id, quote number) are cut here. */
const MAX_ID = 128;

/** The ledger row for a call whose request left (the row was marked `in_flight`). */
export function outcomeToRow(outcome: CallOutcome<QuoteSuccessResponse>, agentId: string | null, initial: RowState): RowOutcome {
  const base = {
    attempts: outcome.attempts.length,
    agentId,
    httpStatus: outcome.httpStatus,
    responseJson: outcome.storedBody,
  };
  if (outcome.halt !== undefined || outcome.kind === 'forbidden' || outcome.kind === 'misrouted') {
    // Endpoint- and auth-level answers say nothing about this row: it stays as it was, to be resent.
    return { ...base, state: initial, errorCode: outcome.errorCode, errorMessage: bounded(outcome.message) };
  }
  switch (outcome.kind) {
    case 'ok': {
      const body = outcome.parsed;
      const issues: unknown[] = body?.input_issues !== undefined ? [...body.input_issues] : [];
      if (outcome.warning !== undefined) issues.push({ severity: 'warning', type: 'unreadable_answer', message: outcome.warning });
      return {
        ...base,
        state: 'succeeded',
        transactionId: boundedId(body?.transaction_id),
        quoteNumber: boundedId(body?.quote?.quote_number),
        totalPremium: body?.quote?.premium_summary?.total_premium ?? null,
        inputIssuesJson: issues.length > 0 ? boundedJson(issues) : null,
      };
    }
    case 'rejected':
      return { ...base, state: 'rejected', errorCode: outcome.errorCode, errorMessage: reasonOf(outcome) };
    case 'in_doubt':
      return { ...base, state: 'in_doubt', errorCode: outcome.errorCode, errorMessage: reasonOf(outcome) };
    default:
      return { ...base, state: 'failed', errorCode: outcome.errorCode, errorMessage: reasonOf(outcome) };
  }
}

/**
 * The reason kept in `rows.error_message`: the partner's own message when it sent one (so that
 * analysts can group rows by it), else the client's one-line description.
 */
export function reasonOf(outcome: CallOutcome): string {
  const body = outcome.body;
  if (body !== null && typeof body === 'object' && typeof (body as { message?: unknown }).message === 'string') {
    const message = (body as { message: string }).message.replace(/\s+/g, ' ').trim();
    if (message !== '') return bounded(message);
  }
  return bounded(outcome.message);
}

/**
 * The body to send, or why it cannot be: a request nested too deep to serialise, or larger than
 * {@link MAX_REQUEST_BYTES}.
 */
export function serializeForSend(request: unknown): { json: string } | { problem: string; code: string } {
  let json: string;
  try {
    json = JSON.stringify(request);
  } catch (error) {
    return { code: 'request_not_serialisable', problem: `the request cannot be serialised (${(error as Error).message})` };
  }
  // UTF-8 is at most 3 bytes per UTF-16 unit: only measure when it could be over.
  if (json.length * 3 > MAX_REQUEST_BYTES) {
    const bytes = Buffer.byteLength(json, 'utf8');
    if (bytes > MAX_REQUEST_BYTES) {
      return { code: 'request_too_large', problem: `the request would be ${bytes} bytes, over the ${MAX_REQUEST_BYTES}-byte limit: not sent` };
    }
  }
  return { json };
}

export function bounded(text: string, max = MAX_MESSAGE): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

function boundedId(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? bounded(value, MAX_ID) : null;
}

function boundedJson(value: unknown): string {
  let json: string;
  try {
    json = JSON.stringify(value);
  } catch {
    json = '';
  }
  return json !== '' && json.length <= 16 * 1024
    ? json
    : JSON.stringify([{ severity: 'warning', type: 'cut', message: 'the input issues of the answer were too large to keep' }]);
}
