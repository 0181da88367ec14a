/** Contract §5's answer table, row by row, for quote/lead and for agent validation. */
import { describe, expect, it } from 'vitest';
import { classifyAnswer, classifyResponse, classifyTransportFailure, readValidation, tlsRefusal, unreachableBy, type Answer } from '../../src/partner/_classify.js';
import { charsetOf, decodeBody, describeBodyError, describeTransportError } from '../../src/partner/_transport.js';

const FAILED = { status: 'failed', message: 'State AK is not supported', error_code: 'state_not_supported' };
const SUCCESS = { status: 'success', message: 'Processed successfully.', transaction_id: 't-1' };
const VALID = { status: 'success', message: 'User verification success', data: { is_valid: true, agent_id: 'xyz-1' } };
const NOT_VALID = { status: 'success', message: 'User not found.', data: { is_valid: false } };

const response = (status: number, body: unknown = null): Answer => ({ type: 'response', status, body });
/** An answer whose status line arrived and whose body then could not be read. */
const unreadable = (status: number, bodyError: string, body: unknown = null): Answer => ({ type: 'response', status, body, bodyError });
const BAD_GZIP = 'the body is not the gzip or deflate its Content-Encoding says (Z_DATA_ERROR)';
const CUT = 'the body was cut short after the headers (ECONNRESET)';
const CHARSET = 'its charset "x-klingon" cannot be decoded';

describe('quote and lead answers', () => {
  it.each([
    // answer, outcome, retry, breaker, throttled, errorCode
    ['200, status success', response(200, SUCCESS), 'ok', false, 'success', false, null],
    ['201, no status at all', response(201, { transaction_id: 't' }), 'ok', false, 'success', false, null],
    ['200, status pending (unknown word)', response(200, { status: 'pending' }), 'ok', false, 'success', false, null],
    ['200, status failed', response(200, FAILED), 'rejected', false, 'success', false, 'state_not_supported'],
    ['200, status error without a code', response(200, { status: 'error', message: 'x' }), 'rejected', false, 'success', false, 'answer_error'],
    ['400', response(400, FAILED), 'rejected', false, 'success', false, 'state_not_supported'],
    ['409', response(409, 'conflict'), 'rejected', false, 'success', false, 'http_409'],
    ['413', response(413), 'rejected', false, 'success', false, 'http_413'],
    ['422', response(422), 'rejected', false, 'success', false, 'http_422'],
    ['418', response(418), 'rejected', false, 'success', false, 'http_418'],
    ['401', response(401), 'forbidden', false, 'neutral', false, 'http_401'],
    ['403', response(403, { message: 'Forbidden' }), 'forbidden', false, 'neutral', false, 'forbidden'],
    ['404', response(404, '<html>not found</html>'), 'misrouted', false, 'neutral', false, 'http_404'],
    ['405', response(405), 'misrouted', false, 'neutral', false, 'http_405'],
    ['301', response(301), 'misrouted', false, 'neutral', false, 'unexpected_redirect'],
    ['307', response(307), 'misrouted', false, 'neutral', false, 'unexpected_redirect'],
    ['429', response(429), 'retryable', true, 'refused', true, 'rate_limited'],
    ['500', response(500, { error_code: 'server_error' }), 'retryable', true, 'failure', false, 'server_error'],
    ['502', response(502), 'retryable', true, 'failure', false, 'http_502'],
    // With or without Retry-After (its wait is the client's): an outage or overload, not a rate limit.
    ['503', response(503), 'retryable', true, 'failure', false, 'http_503'],
    ['504', response(504), 'retryable', true, 'failure', false, 'http_504'],
    ['501 (a write may have applied)', response(501), 'in_doubt', false, 'in_doubt', false, 'http_501'],
    ['time-out after the body left', { type: 'transport', code: 'ETIMEDOUT', bodySent: true }, 'in_doubt', false, 'in_doubt', false, 'ETIMEDOUT'],
    ['reset after the body left', { type: 'transport', code: 'ECONNRESET', bodySent: true }, 'in_doubt', false, 'in_doubt', false, 'ECONNRESET'],
    ['refused', { type: 'transport', code: 'ECONNREFUSED', bodySent: false }, 'retryable', true, 'failure', false, 'ECONNREFUSED'],
    ['reset before the body left', { type: 'transport', code: 'ECONNRESET', bodySent: false }, 'retryable', true, 'failure', false, 'ECONNRESET'],
    // Once the status line arrived, the status decides, whatever happens to the body after it.
    ['200, a body that is not the gzip it claims', unreadable(200, BAD_GZIP, '{"status":"failed"}'), 'ok', false, 'success', false, null],
    ['200, a body cut short after the headers', unreadable(200, CUT, '{"status":"fai'), 'ok', false, 'success', false, null],
    ['200, a charset it cannot read', unreadable(200, CHARSET), 'ok', false, 'success', false, null],
    ['400, a body cut short', unreadable(400, CUT), 'rejected', false, 'success', false, 'http_400'],
    ['429, a bad gzip', unreadable(429, BAD_GZIP), 'retryable', true, 'refused', true, 'rate_limited'],
    ['503, a body cut short', unreadable(503, CUT), 'retryable', true, 'failure', false, 'http_503'],
    ['501, a bad gzip (a write may have applied)', unreadable(501, BAD_GZIP), 'in_doubt', false, 'in_doubt', false, 'http_501'],
    ['403, a bad gzip', unreadable(403, BAD_GZIP), 'forbidden', false, 'neutral', false, 'forbidden'],
  ] as const)('%s', (_name, answer, outcome, retry, breaker, throttled, errorCode) => {
    for (const kind of ['quote', 'lead'] as const) {
      expect(classifyAnswer(kind, answer)).toMatchObject({ outcome, retry, breaker, throttled, errorCode });
    }
  });

  it('a 2xx whose body could not be read succeeds with a warning that says why', () => {
    for (const why of [BAD_GZIP, CUT, CHARSET]) {
      expect(classifyAnswer('quote', unreadable(200, why, '{"status":"success"}')).warning).toBe(`the partner answered 200, but ${why}: recorded as succeeded without its details`);
    }
  });

  it('a 2xx whose body is not a JSON object succeeds with a warning', () => {
    for (const body of ['<html>ok</html>', null, [1, 2], 42]) {
      const cls = classifyResponse('quote', 200, body);
      expect(cls.outcome).toBe('ok');
      expect(cls.warning).toMatch(/not a JSON object/);
    }
    expect(classifyResponse('quote', 200, SUCCESS).warning).toBeUndefined();
  });

  it("keeps a partner's error_code only when it looks like one", () => {
    expect(classifyResponse('quote', 400, { error_code: 'x'.repeat(5000) }).errorCode).toBe('http_400');
    expect(classifyResponse('quote', 400, { error_code: 'two words' }).errorCode).toBe('http_400');
  });
});

describe('agent validation answers', () => {
  it.each([
    ['200, valid', response(200, VALID), 'ok', false, 'success'],
    ['200, not valid', response(200, NOT_VALID), 'ok', false, 'success'],
    ['200, valid without agent_id', response(200, { status: 'success', message: 'User verification success', data: { is_valid: true } }), 'ok', false, 'success'],
    ['200, not JSON', response(200, '<html>maintenance</html>'), 'retryable', true, 'failure'],
    ['200, status error', response(200, { status: 'error', message: 'upstream', data: { is_valid: false } }), 'retryable', true, 'failure'],
    ['200, no data', response(200, { status: 'success', message: 'ok' }), 'retryable', true, 'failure'],
    ['200, is_valid a string', response(200, { status: 'success', data: { is_valid: 'false' } }), 'retryable', true, 'failure'],
    ['200, a 1 MB agent id', response(200, { status: 'success', data: { is_valid: true, agent_id: 'a'.repeat(1_000_000) } }), 'retryable', true, 'failure'],
    ['400', response(400, { status: 'error', message: 'email is not valid' }), 'rejected', false, 'success'],
    ['403', response(403, { status: 'error', message: 'Forbidden' }), 'forbidden', false, 'neutral'],
    ['404', response(404), 'misrouted', false, 'neutral'],
    ['302', response(302), 'misrouted', false, 'neutral'],
    ['429', response(429), 'retryable', true, 'refused'],
    ['500', response(500), 'retryable', true, 'failure'],
    ['200 valid, then a bad gzip', unreadable(200, BAD_GZIP, VALID), 'retryable', true, 'failure'],
    ['200, cut short after the headers', unreadable(200, CUT), 'retryable', true, 'failure'],
    ['501', response(501), 'retryable', true, 'failure'],
    ['time-out after the body left', { type: 'transport', code: 'ETIMEDOUT', bodySent: true }, 'retryable', true, 'failure'],
    ['reset after the body left', { type: 'transport', code: 'ECONNRESET', bodySent: true }, 'retryable', true, 'failure'],
  ] as const)('%s', (_name, answer, outcome, retry, breaker) => {
    expect(classifyAnswer('agent_validate', answer)).toMatchObject({ outcome, retry, breaker });
  });
});

describe('readValidation', () => {
  it('reads valid, not valid, and valid without an id', () => {
    expect(readValidation(VALID)).toEqual({ isValid: true, agentId: 'xyz-1', message: 'User verification success' });
    expect(readValidation(NOT_VALID)).toEqual({ isValid: false, agentId: undefined, message: 'User not found.' });
    expect(readValidation({ status: 'success', data: { is_valid: true, agent_id: '  ' } })).toEqual({ isValid: true, agentId: undefined, message: '' });
  });
  it('is undefined for anything that is not a result', () => {
    for (const body of [null, 'text', [], { status: 'success' }, { data: { is_valid: true } }, { status: 'error', data: { is_valid: false } },
      { status: 'success', data: { is_valid: true, agent_id: 7 } }]) {
      expect(readValidation(body)).toBeUndefined();
    }
  });
});

describe('classifyTransportFailure', () => {
  it('retries a request whose body never left, never resends a write whose body left, always retries a read', () => {
    expect(classifyTransportFailure('quote', 'ECONNREFUSED', false)).toMatchObject({ outcome: 'retryable', retry: true });
    expect(classifyTransportFailure('lead', 'ETIMEDOUT', true)).toMatchObject({ outcome: 'in_doubt', retry: false });
    expect(classifyTransportFailure('agent_validate', 'ECONNRESET', true)).toMatchObject({ outcome: 'retryable', retry: true });
  });

  it.each([
    // code, body sent, what it says of the address
    ['ENOTFOUND', false, 'name'],
    ['EAI_AGAIN', false, 'name'],
    ['ECONNREFUSED', false, 'refused'],
    ['ERR_SSL_WRONG_VERSION_NUMBER', false, 'tls'],
    ['ERR_SSL_NO_SHARED_CIPHER', false, 'tls'],
    ['EPROTO', false, 'tls'],
    ['ECONNRESET', false, undefined],
    ['ETIMEDOUT', false, undefined],
    ['EHOSTUNREACH', false, undefined],
    ['ECONNRESET', true, undefined],
    ['EPROTO', true, undefined],
  ] as const)('%s (body sent: %s) says the address is unreachable: %s', (code, bodySent, kind) => {
    for (const op of ['quote', 'agent_validate'] as const) expect(classifyTransportFailure(op, code, bodySent).unreachable).toBe(kind);
    if (!bodySent) expect(unreachableBy(code)).toBe(kind);
  });

  it('a TLS handshake that failed never carried the body, although got counts it written', () => {
    expect(describeTransportError({ code: 'EPROTO', message: 'wrong version number', timings: { upload: 1 } })).toMatchObject({ bodySent: false });
    expect(describeTransportError({ code: 'CERT_HAS_EXPIRED', message: 'expired', timings: { upload: 1, secureConnect: 1 } })).toMatchObject({ bodySent: false });
    // Once the connection was secured, a protocol error may come mid-answer: the body may have left.
    expect(describeTransportError({ code: 'EPROTO', message: 'bad record', timings: { upload: 1, secureConnect: 1 } })).toMatchObject({ bodySent: true });
  });
});

describe('bodies the transport cannot read', () => {
  it('decodes UTF-8 by default, a charset the Encoding standard knows, and refuses an unknown one', () => {
    expect(charsetOf('application/json; charset="UTF-16LE"')).toBe('utf-16le');
    expect(charsetOf('application/json')).toBeUndefined();
    expect(decodeBody(Buffer.from('{"a":"é"}'), undefined)).toEqual({ text: '{"a":"é"}' });
    expect(decodeBody(Buffer.from('{"a":"é"}', 'utf16le'), 'utf-16le')).toEqual({ text: '{"a":"é"}' });
    expect(decodeBody(Buffer.from([0x7b, 0xe9, 0x7d]), 'iso-8859-1')).toEqual({ text: '{é}' });
    expect(decodeBody(Buffer.from('{}'), 'x-klingon')).toEqual({ text: '', error: CHARSET });
  });

  it('says why, from the error got gave after the status line', () => {
    expect(describeBodyError({ name: 'ReadError', code: 'Z_DATA_ERROR' })).toBe(BAD_GZIP);
    expect(describeBodyError({ name: 'ReadError', code: 'ECONNRESET' })).toBe(CUT);
    expect(describeBodyError({ name: 'TimeoutError', code: 'ETIMEDOUT', event: 'request' })).toMatch(/did not arrive in time/);
  });
});

describe('the way to the partner: proxy and TLS (README, "Behind a proxy…")', () => {
  const viaProxy = (code: string, status?: number): Answer => ({ type: 'transport', code, bodySent: false, proxy: status === undefined ? {} : { status } });
  const tls = (code: string, bodySent = false): Answer => ({ type: 'transport', code, bodySent });
  it.each([
    // answer, outcome, retry, breaker, errorCode, halt
    ['CONNECT answered 407', viaProxy('PROXY_407', 407), 'forbidden', false, 'neutral', 'proxy_auth_required', 'proxy_auth'],
    ['407 answered to the request itself (a plain-HTTP proxy, a gateway)', response(407), 'forbidden', false, 'neutral', 'proxy_auth_required', 'proxy_auth'],
    ['CONNECT answered 502: an outage of the way out', viaProxy('PROXY_502', 502), 'retryable', true, 'failure', 'proxy_http_502', undefined],
    ['CONNECT answered 503', viaProxy('PROXY_503', 503), 'retryable', true, 'failure', 'proxy_http_503', undefined],
    ['CONNECT answered 504', viaProxy('PROXY_504', 504), 'retryable', true, 'failure', 'proxy_http_504', undefined],
    ['CONNECT answered 403 (a proxy rule) or 500: a failed CONNECT', viaProxy('PROXY_403', 403), 'retryable', true, 'failure', 'proxy_http_403', undefined],
    ['no connection to the proxy', viaProxy('ECONNREFUSED'), 'retryable', true, 'failure', 'proxy_ECONNREFUSED', undefined],
    ['no answer to CONNECT in time', viaProxy('ETIMEDOUT'), 'retryable', true, 'failure', 'proxy_ETIMEDOUT', undefined],
    ['the partner\'s certificate from an unknown CA', tls('SELF_SIGNED_CERT_IN_CHAIN'), 'misrouted', false, 'neutral', 'SELF_SIGNED_CERT_IN_CHAIN', 'tls_trust'],
    ['the partner\'s certificate for another name', tls('ERR_TLS_CERT_ALTNAME_INVALID'), 'misrouted', false, 'neutral', 'ERR_TLS_CERT_ALTNAME_INVALID', 'tls_trust'],
    ['the partner\'s certificate expired', tls('CERT_HAS_EXPIRED'), 'misrouted', false, 'neutral', 'CERT_HAS_EXPIRED', 'tls_trust'],
    // TLS 1.3: the alert comes after the client wrote its request, which the server never read.
    ['TLS 1.3: no client certificate', tls('ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED', true), 'forbidden', false, 'neutral', 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED', 'tls_client_cert'],
    ['TLS 1.2: no client certificate', tls('ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE'), 'forbidden', false, 'neutral', 'ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE', 'tls_client_cert'],
    ['a client certificate from a CA the partner does not trust', tls('ERR_SSL_TLSV1_ALERT_UNKNOWN_CA', true), 'forbidden', false, 'neutral', 'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA', 'tls_client_cert'],
    ['another TLS error is a transport failure as before', tls('ERR_SSL_WRONG_VERSION_NUMBER'), 'retryable', true, 'failure', 'ERR_SSL_WRONG_VERSION_NUMBER', undefined],
  ] as const)('%s', (_name, answer, outcome, retry, breaker, errorCode, halt) => {
    for (const kind of ['quote', 'lead', 'agent_validate'] as const) {
      const cls = classifyAnswer(kind, answer);
      expect(cls).toMatchObject({ outcome, retry, breaker, errorCode, throttled: false });
      expect(cls.halt).toBe(halt);
    }
  });

  it('a tunnel cut after the body was sent leaves a quote or lead in doubt, as any cut answer; a validation is retried', () => {
    const cut: Answer = { type: 'transport', code: 'ECONNRESET', bodySent: true };
    expect(classifyAnswer('quote', cut)).toMatchObject({ outcome: 'in_doubt', retry: false, breaker: 'in_doubt' });
    expect(classifyAnswer('lead', cut)).toMatchObject({ outcome: 'in_doubt', retry: false, breaker: 'in_doubt' });
    expect(classifyAnswer('agent_validate', cut)).toMatchObject({ outcome: 'retryable', retry: true, breaker: 'failure' });
  });

  it('the partner\'s own refusals name their cause too: key (401, 403), endpoint (404, 405, redirects)', () => {
    expect([401, 403].map((status) => classifyResponse('quote', status, null).halt)).toEqual(['key', 'key']);
    expect([404, 405, 301].map((status) => classifyResponse('quote', status, null).halt)).toEqual(['endpoint', 'endpoint', 'endpoint']);
    expect([400, 429, 500, 200].map((status) => classifyResponse('quote', status, {}).halt)).toEqual([undefined, undefined, undefined, undefined]);
  });

  it('tlsRefusal tells trust from client-certificate refusals', () => {
    expect(tlsRefusal('UNABLE_TO_VERIFY_LEAF_SIGNATURE')).toBe('tls_trust');
    expect(tlsRefusal('ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE')).toBe('tls_client_cert');
    expect(tlsRefusal('ECONNRESET')).toBeUndefined();
  });
});
