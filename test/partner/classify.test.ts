import { describe, expect, it } from 'vitest';
import { classifyResponse, classifyTransportFailure } from '../../src/partner/_classify.js';

describe('classifyResponse', () => {
  it.each([
    // status, kind, outcome, retry, errorCode, breaker
    [200, 'quote', 'ok', false, null, 'success'],
    [201, 'lead', 'ok', false, null, 'success'],
    [301, 'quote', 'rejected', false, 'unexpected_redirect', 'success'],
    [400, 'quote', 'rejected', false, 'state_not_supported', 'success'],
    [404, 'quote', 'rejected', false, 'http_404', 'success'],
    [403, 'quote', 'forbidden', false, 'forbidden', 'success'],
    [403, 'agent_validate', 'forbidden', false, 'forbidden', 'success'],
    [429, 'quote', 'retryable', true, 'rate_limited', 'neutral'],
    [500, 'quote', 'retryable', true, 'http_500', 'failure'],
    [502, 'quote', 'retryable', true, 'http_502', 'failure'],
    [503, 'lead', 'retryable', true, 'http_503', 'failure'],
    [504, 'quote', 'retryable', true, 'http_504', 'failure'],
    [501, 'quote', 'in_doubt', false, 'http_501', 'failure'],
    [505, 'lead', 'in_doubt', false, 'http_505', 'failure'],
    [501, 'agent_validate', 'retryable', true, 'http_501', 'failure'],
  ] as const)('%i for %s → %s', (status, kind, outcome, retry, errorCode, breaker) => {
    const body = status === 400 ? { status: 'failed', message: 'State AK is not supported', error_code: 'state_not_supported' } : 'plain text';
    expect(classifyResponse(kind, status, body)).toEqual({ outcome, retry, errorCode, breaker });
  });

  it("keeps the partner's error_code when there is one", () => {
    expect(classifyResponse('quote', 500, { error_code: 'server_error' }).errorCode).toBe('server_error');
    expect(classifyResponse('quote', 403, { message: 'Forbidden' }).errorCode).toBe('forbidden');
  });
});

describe('classifyTransportFailure', () => {
  it('retries a request whose body never left', () => {
    expect(classifyTransportFailure('quote', 'ECONNREFUSED', false)).toMatchObject({ outcome: 'retryable', retry: true });
  });
  it('never resends a write whose body left', () => {
    expect(classifyTransportFailure('quote', 'ECONNRESET', true)).toMatchObject({ outcome: 'in_doubt', retry: false });
    expect(classifyTransportFailure('lead', 'ETIMEDOUT', true)).toMatchObject({ outcome: 'in_doubt', retry: false });
  });
  it('retries a read (agent validation) whatever happened', () => {
    expect(classifyTransportFailure('agent_validate', 'ECONNRESET', true)).toMatchObject({ outcome: 'retryable', retry: true });
  });
});
