/**
 * The README's state table and answer table ("Outcomes, resume and the ledger"), row by row, through
 * the one module that decides a row's state (src/pipeline/row-state.ts).
 */
import { describe, expect, it } from 'vitest';
import { ROW_STATES, type RowState } from '../../src/ledger/index.js';
import { classifyAnswer, type Answer } from '../../src/partner/_classify.js';
import type { QuoteSuccessResponse } from '../../src/partner/schemas.js';
import type { CallOutcome } from '../../src/partner/types.js';
import { decide, resolveChanges, sendsAgain, serializeForSend, STOPPED, type RowEvent } from '../../src/pipeline/row-state.js';

const response = (status: number, body: unknown = null): Answer => ({ type: 'response', status, body });

/** The call's outcome once the client is done with an answer (attempts used up for a retried one; `halt` when the client halted on it). */
function outcomeOf(answer: Answer, halt?: string): CallOutcome<QuoteSuccessResponse> {
  const cls = classifyAnswer('quote', answer);
  const body = answer.type === 'response' ? answer.body : null;
  return {
    kind: cls.outcome, httpStatus: answer.type === 'response' ? answer.status : null, body,
    parsed: cls.outcome === 'ok' ? (body as QuoteSuccessResponse) : undefined,
    errorCode: cls.errorCode, message: `quote: answer ${answer.type === 'response' ? answer.status : answer.code}`,
    storedBody: null, warning: cls.warning, halt, durationMs: 1, attempts: [],
  };
}

const afterAnswer = (answer: Answer, sentFrom: RowState = 'pending', halt?: string): RowState =>
  decide({ type: 'answer', outcome: outcomeOf(answer, halt), agentId: null, sentFrom }).state;

describe('the answer table: what a quote or lead answer makes of the row', () => {
  it.each<[string, Answer, RowState]>([
    ['2xx, status success', response(200, { status: 'success', transaction_id: 't-1', quote: { quote_number: 'Q1', premium_summary: { total_premium: 10 } } }), 'succeeded'],
    ['2xx, no status', response(201, { transaction_id: 't-2' }), 'succeeded'],
    ['2xx, body unreadable', response(200, '<html>ok</html>'), 'succeeded'],
    ['2xx, status failed', response(200, { status: 'failed', message: 'no', error_code: 'state_not_supported' }), 'rejected'],
    ['2xx, status error', response(200, { status: 'error', message: 'no' }), 'rejected'],
    ['400', response(400, { status: 'failed', message: 'missing', error_code: 'missing_required_parameter' }), 'rejected'],
    ['409', response(409), 'rejected'],
    ['413', response(413), 'rejected'],
    ['422', response(422), 'rejected'],
    ['another 4xx (418)', response(418), 'rejected'],
    ['429, attempts used up', response(429), 'failed'],
    ['500, attempts used up', response(500), 'failed'],
    ['502, attempts used up', response(502), 'failed'],
    ['503, attempts used up', response(503), 'failed'],
    ['504, attempts used up', response(504), 'failed'],
    ['time-out after the body was sent', { type: 'transport', code: 'ETIMEDOUT', bodySent: true }, 'in_doubt'],
    ['reset after the body was sent', { type: 'transport', code: 'ECONNRESET', bodySent: true }, 'in_doubt'],
    ['no connection, attempts used up', { type: 'transport', code: 'ECONNREFUSED', bodySent: false }, 'failed'],
    ['reset before the body left, attempts used up', { type: 'transport', code: 'ECONNRESET', bodySent: false }, 'failed'],
  ])('%s → %s', (_, answer, state) => {
    expect(afterAnswer(answer)).toBe(state);
  });

  it.each<[string, Answer]>([
    ['401', response(401)], ['403', response(403, { message: 'Forbidden' })], ['404', response(404)], ['405', response(405)], ['a redirect (302)', response(302)],
  ])('%s halts the run: the row stays as it was (pending, failed or in doubt)', (_, answer) => {
    for (const from of ['pending', 'failed', 'in_doubt'] as const) expect(afterAnswer(answer, from, 'halted')).toBe(from);
  });

  it('a Retry-After over --max-retry-after halts the run: the row stays as it was', () => {
    expect(afterAnswer(response(429), 'pending', 'the partner asks to wait 1h')).toBe('pending');
    expect(afterAnswer(response(503), 'failed', 'the partner asks to wait 1h')).toBe('failed');
  });

  it('keeps what a success says (ids, premium) and warns of an unreadable one', () => {
    const ok = decide({ type: 'answer', agentId: 'xyz-1', sentFrom: 'pending', outcome: outcomeOf(response(200, { status: 'success', transaction_id: 't', quote: { quote_number: 'Q', premium_summary: { total_premium: 546.5 } } })) });
    expect(ok).toMatchObject({ state: 'succeeded', transactionId: 't', quoteNumber: 'Q', totalPremium: 546.5, agentId: 'xyz-1', inputIssuesJson: null });
    const unreadable = decide({ type: 'answer', agentId: null, sentFrom: 'pending', outcome: outcomeOf(response(200, 'not json')) });
    expect(JSON.parse(unreadable.inputIssuesJson ?? '[]')).toEqual([expect.objectContaining({ type: 'unreadable_answer' })]);
  });

  it("keeps the partner's own message for a rejection, so that rows group by it", () => {
    const rejected = decide({ type: 'answer', agentId: null, sentFrom: 'pending', outcome: outcomeOf(response(400, { status: 'failed', message: ' State  AK\nis not supported ', error_code: 'state_not_supported' })) });
    expect(rejected).toMatchObject({ state: 'rejected', errorCode: 'state_not_supported', errorMessage: 'State AK is not supported', httpStatus: 400 });
  });
});

describe('the state table: how each state comes about, and what the next run does with it', () => {
  const sent = { job_id: 3, row_number: 7, state: 'succeeded' as const };
  const ways: Record<RowState, RowEvent[]> = {
    pending: [{ type: 'read' }, { type: 'put_back', sentFrom: 'pending' }, { type: 'resolved', to: 'pending' }, { type: 'reopened' }],
    in_flight: [{ type: 'marked' }],
    succeeded: [{ type: 'resolved', to: 'succeeded' }],
    rejected: [{ type: 'rejected_by_other_job', rejected: { job_id: 2, row_number: 4, http_status: 400, error_code: 'state_not_supported', error_message: 'no' } }],
    agent_invalid: [{ type: 'agent', verdict: { kind: 'invalid', message: 'The specified user_type does not match the account.' } }],
    invalid: [
      { type: 'unreadable', message: 'line 4: unclosed quote' },
      { type: 'mapping_problems', message: 'row 4: application.drivers[0].dob: expected YYYY-MM-DD' },
      { type: 'agent', verdict: { kind: 'bad_request', message: 'bad e-mail', httpStatus: 400, errorCode: null } },
      { type: 'unsendable', rowNumber: 4, code: 'request_too_large', problem: 'too large' },
    ],
    duplicate: [{ type: 'repeated_key', rowKey: 'k' }, { type: 'sent_by_other_job', rowKey: 'k', sent }, { type: 'repeats_earlier', rowKey: 'k' }],
    failed: [{ type: 'agent', verdict: { kind: 'failed', message: 'agent validation: 500', httpStatus: 500, errorCode: 'http_500' } }, { type: 'put_back', sentFrom: 'failed' }],
    in_doubt: [{ type: 'process_stopped' }, { type: 'put_back', sentFrom: 'in_doubt' }],
  };

  it.each(ROW_STATES.map((s) => [s]))('%s', (state) => {
    for (const event of ways[state]) expect(decide(event).state, event.type).toBe(state);
  });

  it.each<[RowState, boolean, boolean, boolean]>([
    // state, sent by default, with --no-retry-failed, with --resend-in-doubt
    ['pending', true, true, true],
    ['succeeded', false, false, false],
    ['rejected', false, false, false],
    ['agent_invalid', false, false, false],
    ['invalid', false, false, false],
    ['duplicate', false, false, false],
    ['failed', true, false, true],
    ['in_doubt', false, false, true],
  ])('on the next run, %s is sent: %s (%s without retrying failed rows, %s with --resend-in-doubt)', (state, byDefault, noRetry, resend) => {
    expect(sendsAgain(state, { retryFailed: true, resendInDoubt: false })).toBe(byDefault);
    expect(sendsAgain(state, { retryFailed: false, resendInDoubt: false })).toBe(noRetry);
    expect(sendsAgain(state, { retryFailed: true, resendInDoubt: true })).toBe(resend);
  });
});

describe('what is kept with each state', () => {
  it('a row another job sent names its key, that job and row, and points at the row that sent it', () => {
    const decision = decide({ type: 'sent_by_other_job', rowKey: 'click-9', sent: { job_id: 3, row_number: 7, state: 'in_doubt', origin: { job_id: 1, row_number: 2 } } });
    expect(decision).toEqual({
      state: 'duplicate', errorCode: 'sent_by_other_job', sentBy: { job_id: 1, row_number: 2 },
      errorMessage: 'row key "click-9" may already have been sent to the partner by job 3 (its row 7, in_doubt); not sent again (--resend-sent sends it)',
    });
  });

  it('a row a stopped process left in flight is in doubt, saying why', () => {
    expect(STOPPED).toEqual({ state: 'in_doubt', errorMessage: 'the process stopped while the request was in flight' });
  });

  it('resolve clears the error of a resolved row and of a reopened one', () => {
    const changes = resolveChanges('pending');
    expect(changes.resolved).toEqual({ state: 'pending', errorCode: null, errorMessage: null });
    expect(changes.reopened).toEqual({ state: 'pending', errorCode: null, errorMessage: null, sentBy: null });
    expect(changes.repeatsEarlier('k')).toMatchObject({ state: 'duplicate', errorCode: 'duplicate_row_key', errorMessage: 'row key "k" already appeared earlier in this job' });
    expect(resolveChanges('succeeded').resolved.state).toBe('succeeded');
  });

  it('bounds stored messages, and refuses to send a request over 1 MiB', () => {
    expect(decide({ type: 'mapping_problems', message: 'x'.repeat(5000) }).errorMessage).toHaveLength(1000);
    const big = serializeForSend({ blob: 'x'.repeat(1024 * 1024) });
    expect(big).toMatchObject({ code: 'request_too_large' });
    expect(serializeForSend({ a: 1 })).toEqual({ json: '{"a":1}' });
  });
});
