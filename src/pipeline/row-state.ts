/**
 * Where a row's state is decided: every event that settles a row maps here to its new state, error
 * code and message, the README's state and answer tables as code ("Outcomes, resume and the
 * ledger"). Pure: the runner, resume, the other-jobs checks, crash recovery and `resolve` apply what
 * it returns; none of them picks a state of its own.
 */
import type { RejectedRow, ResolveChanges, RowOutcome, RowState, SentRow } from '../ledger/index.js';
import { FINAL_STATES } from '../ledger/index.js';
import type { QuoteSuccessResponse } from '../partner/schemas.js';
import type { CallOutcome } from '../partner/types.js';

/** What the ledger keeps of a row after an event (its attempts are counted apart). */
export type RowDecision = Omit<RowOutcome, 'attempts'>;

/** An agent validation that decided against the row (a valid agent is not an event: the row goes on). */
export type AgentVerdict =
  | { kind: 'invalid'; message: string }
  | { kind: 'bad_request' | 'failed'; message: string; httpStatus: number | null; errorCode: string | null };

export type RowEvent =
  /** The reader could not read the record (bad quoting, a bad JSON line, …). */
  | { type: 'unreadable'; message: string }
  /** The mapping or the request schema found problems (the message lists them). */
  | { type: 'mapping_problems'; message: string }
  /** Read and mapped with no problem: to be sent. */
  | { type: 'read' }
  /** Its row key appeared earlier in this job. */
  | { type: 'repeated_key'; rowKey: string }
  /** Another job of this environment and operation sent (or may have sent) its lead. */
  | { type: 'sent_by_other_job'; rowKey: string; sent: SentRow }
  /** The partner rejected this very request in another job: its answer, without an attempt. */
  | { type: 'rejected_by_other_job'; rejected: RejectedRow }
  | { type: 'agent'; verdict: AgentVerdict }
  /** The request cannot be sent (too large, not serialisable). */
  | { type: 'unsendable'; rowNumber: number; code: string; problem: string }
  /** Durably marked right before its request leaves. */
  | { type: 'marked' }
  /** The partner's answer, or the lack of one, classified by the client; `sentFrom` is the state the send began in. */
  | { type: 'answer'; outcome: CallOutcome<QuoteSuccessResponse>; agentId: string | null; sentFrom: RowState }
  /** A refusal the client sends again (429, 5xx, never left), or a mark whose request did not leave: as before. */
  | { type: 'put_back'; sentFrom: RowState }
  /** A run found stopped (crash, kill) had marked it: the request may have reached the partner. */
  | { type: 'process_stopped' }
  /** `resolve`: ops say what the partner did with a row in doubt. */
  | { type: 'resolved'; to: 'succeeded' | 'pending' }
  /** `resolve … --as pending` reopened the row whose word made this one a duplicate: its lead was never sent. */
  | { type: 'reopened' }
  /** Reopened, but its key appeared earlier in its own job in a row still to be sent: a duplicate of that one. */
  | { type: 'repeats_earlier'; rowKey: string };

/** A request body longer than this is not sent: the row is `invalid` (the partner would refuse it, 413). */
export const MAX_REQUEST_BYTES = 1024 * 1024;
/** Stored error messages are cut here. */
const MAX_MESSAGE = 1000;
/** Stored ids (transaction id, quote number) are cut here. */
const MAX_ID = 128;
/** `rows.error_message` of a row a stopped process left in flight (an earlier message is kept). */
export const STOPPED_MESSAGE = 'the process stopped while the request was in flight';

/** The new state of a row after `event`, with what the ledger keeps of it. */
export function decide(event: RowEvent): RowDecision {
  switch (event.type) {
    case 'unreadable':
      return { state: 'invalid', errorCode: 'unreadable_row', errorMessage: bounded(event.message) };
    case 'mapping_problems':
      return { state: 'invalid', errorCode: 'mapping_error', errorMessage: bounded(event.message) };
    case 'read':
    case 'reopened':
      return { state: 'pending', errorCode: null, errorMessage: null, sentBy: null };
    case 'repeated_key':
    case 'repeats_earlier':
      return { state: 'duplicate', errorCode: 'duplicate_row_key', errorMessage: bounded(`row key "${event.rowKey}" already appeared earlier in this job`), sentBy: null };
    case 'sent_by_other_job':
      return {
        state: 'duplicate', errorCode: 'sent_by_other_job', errorMessage: bounded(sentMessage(event.rowKey, event.sent)),
        // Followed by later lookups: this row counts only while that one does. The end of the chain, so
        // that the row refers to the row that sent the lead even once the jobs between are pruned.
        sentBy: event.sent.origin ?? { job_id: event.sent.job_id, row_number: event.sent.row_number },
      };
    case 'rejected_by_other_job': {
      // The partner's own answer, so that the row counts and groups with its rejection.
      const { http_status, error_code, error_message } = event.rejected;
      return { state: 'rejected', httpStatus: http_status, errorCode: error_code, errorMessage: error_message };
    }
    case 'agent': {
      const { verdict } = event;
      if (verdict.kind === 'invalid') return { state: 'agent_invalid', httpStatus: 200, errorCode: 'agent_invalid', errorMessage: bounded(verdict.message) };
      return { state: verdict.kind === 'bad_request' ? 'invalid' : 'failed', httpStatus: verdict.httpStatus, errorCode: verdict.errorCode, errorMessage: bounded(verdict.message) };
    }
    case 'unsendable':
      return { state: 'invalid', errorCode: event.code, errorMessage: bounded(`row ${event.rowNumber}: ${event.problem}`) };
    case 'marked':
      return { state: 'in_flight' };
    case 'answer':
      return answered(event.outcome, event.agentId, event.sentFrom);
    case 'put_back':
      return { state: event.sentFrom };
    case 'process_stopped':
      return STOPPED;
    case 'resolved':
      return { state: event.to, errorCode: null, errorMessage: null };
  }
}

/** What a run (or `resolve`) does to the rows a stopped process left in flight. */
export const STOPPED: RowDecision = { state: 'in_doubt', errorMessage: STOPPED_MESSAGE };

/** Whether a run sends a row an earlier run of the job left in `state` (`in_flight` was made `in_doubt` when the run started). */
export function sendsAgain(state: RowState, options: { retryFailed: boolean; resendInDoubt: boolean }): boolean {
  if (FINAL_STATES.has(state)) return false;
  if (state === 'failed') return options.retryFailed;
  if (state === 'in_doubt') return options.resendInDoubt;
  return true;
}

/** The README's answer table, "row becomes" column, for a call whose request left. */
function answered(outcome: CallOutcome<QuoteSuccessResponse>, agentId: string | null, sentFrom: RowState): RowDecision {
  const base = { agentId, httpStatus: outcome.httpStatus, responseJson: outcome.storedBody };
  if (outcome.halt !== undefined || outcome.kind === 'forbidden' || outcome.kind === 'misrouted') {
    // Endpoint- and auth-level answers say nothing about this row: it stays as it was, to be resent.
    return { ...base, state: sentFrom, errorCode: outcome.errorCode, errorMessage: bounded(outcome.message) };
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

/** The `error_message` of a row another job sent: its key (the ledger may hold it), the job and row. */
function sentMessage(rowKey: string, sent: SentRow): string {
  const by = sent.state === 'succeeded' ? `was already sent to the partner by job ${sent.job_id}`
    : sent.state === 'duplicate' ? `was already sent to the partner by a job before job ${sent.job_id}`
      : `may already have been sent to the partner by job ${sent.job_id}`;
  return `row key "${rowKey}" ${by} (its row ${sent.row_number}, ${sent.state}); not sent again (--resend-sent sends it)`;
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

/** What `resolve` applies when ops say the partner did `to` with rows in doubt (see `resolveInDoubt`). */
export function resolveChanges(to: 'succeeded' | 'pending'): ResolveChanges {
  return {
    resolved: decide({ type: 'resolved', to }),
    stopped: decide({ type: 'process_stopped' }),
    reopened: decide({ type: 'reopened' }),
    repeatsEarlier: (rowKey) => decide({ type: 'repeats_earlier', rowKey }),
  };
}
