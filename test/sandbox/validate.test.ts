// The validate operation against spec §4.1, §5 and §7: every row of the §7 table and both 200 cases.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type SandboxHandle } from '../../src/sandbox/index.js';
import { AGENTS_FILE, KEY, post, VALIDATE } from './_client.js';

let sandbox: SandboxHandle;

beforeAll(async () => {
  sandbox = await startSandbox({ apiKey: KEY, agentsFile: AGENTS_FILE });
});
afterAll(async () => {
  await sandbox.close();
});

describe('validate: HTTP 200 (spec §4.1)', () => {
  it('answers a known eligible agent with is_valid true and its agent_id', async () => {
    const reply = await post(sandbox.url, VALIDATE, { email: 'valid.agent@example.com' });
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-type')).toBe('application/json');
    expect(reply.json).toStrictEqual({
      status: 'success',
      message: 'User verification success',
      data: { is_valid: true, agent_id: 'xyz-100200300' },
    });
  });

  it('matches e-mails without regard to case or surrounding spaces', async () => {
    const reply = await post(sandbox.url, VALIDATE, { email: '  mixed.case@EXAMPLE.com ' });
    expect(reply.json).toStrictEqual({
      status: 'success',
      message: 'User verification success',
      data: { is_valid: true, agent_id: 'xyz-100200301' },
    });
  });

  it('answers a known but ineligible agent with is_valid false, no agent_id and the spec message', async () => {
    const reply = await post(sandbox.url, VALIDATE, { email: 'ineligible.agent@example.com' });
    expect(reply.status).toBe(200);
    expect(reply.json).toStrictEqual({
      status: 'success',
      message: 'The specified user_type does not match the account.',
      data: { is_valid: false },
    });
  });

  it('answers an unknown agent with is_valid false, no agent_id and a not-found message', async () => {
    const reply = await post(sandbox.url, VALIDATE, { email: 'nobody@example.com' });
    expect(reply.status).toBe(200);
    expect(reply.json).toStrictEqual({ status: 'success', message: 'User not found.', data: { is_valid: false } });
  });

  it('ignores members other than email', async () => {
    const reply = await post(sandbox.url, VALIDATE, { email: 'valid.agent@example.com', user_type: 'agent' });
    expect(reply.status).toBe(200);
    expect((reply.json as { data: { is_valid: boolean } }).data.is_valid).toBe(true);
  });
});

describe('validate: errors (spec §7 table)', () => {
  const isErrorBody = (json: unknown): void => {
    expect(json).toStrictEqual({ status: 'error', message: expect.any(String) });
    expect((json as { message: string }).message.length).toBeGreaterThan(0);
  };

  it('400 when the body is not valid JSON', async () => {
    const reply = await post(sandbox.url, VALIDATE, '{"email": "valid.agent@example.com"');
    expect(reply.status).toBe(400);
    isErrorBody(reply.json);
  });

  it('400 when the body is empty', async () => {
    const reply = await post(sandbox.url, VALIDATE, '');
    expect(reply.status).toBe(400);
    isErrorBody(reply.json);
  });

  it('400 when the body is JSON but not an object', async () => {
    const reply = await post(sandbox.url, VALIDATE, '["valid.agent@example.com"]');
    expect(reply.status).toBe(400);
    isErrorBody(reply.json);
  });

  it('400 when the required email is missing', async () => {
    const reply = await post(sandbox.url, VALIDATE, {});
    expect(reply.status).toBe(400);
    isErrorBody(reply.json);
    expect((reply.json as { message: string }).message).toMatch(/email/);
  });

  it.each([
    ['no at sign', 'valid.agent.example.com'],
    ['no domain dot', 'valid.agent@example'],
    ['spaces inside', 'valid agent@example.com'],
    ['not a string', 12345],
  ])('400 when the e-mail format is invalid (%s)', async (_case, email) => {
    const reply = await post(sandbox.url, VALIDATE, { email });
    expect(reply.status).toBe(400);
    isErrorBody(reply.json);
    expect((reply.json as { message: string }).message).toMatch(/e-mail/);
  });

  it('403 Forbidden when the API key is missing', async () => {
    const reply = await post(sandbox.url, VALIDATE, { email: 'valid.agent@example.com' }, null);
    expect(reply.status).toBe(403);
    expect(reply.json).toStrictEqual({ status: 'error', message: 'Forbidden' });
  });

  it('403 Forbidden when the API key is wrong', async () => {
    const reply = await post(sandbox.url, VALIDATE, { email: 'valid.agent@example.com' }, `${KEY}x`);
    expect(reply.status).toBe(403);
    expect(reply.json).toStrictEqual({ status: 'error', message: 'Forbidden' });
  });

  it('checks the key before the body: a bad key with bad JSON is 403, not 400', async () => {
    const reply = await post(sandbox.url, VALIDATE, 'not json', 'wrong');
    expect(reply.status).toBe(403);
    expect(reply.json).toStrictEqual({ status: 'error', message: 'Forbidden' });
  });

  it('500 Internal server error on an injected upstream fault', async () => {
    const faulty = await startSandbox({ apiKey: KEY, agentsFile: AGENTS_FILE, faults: { upstreamErrorRate: 1 } });
    try {
      const reply = await post(faulty.url, VALIDATE, { email: 'valid.agent@example.com' });
      expect(reply.status).toBe(500);
      expect(reply.json).toStrictEqual({ status: 'error', message: 'Internal server error' });
      // A bad request is still a 400: the upstream is only consulted for a well-formed one.
      expect((await post(faulty.url, VALIDATE, {})).status).toBe(400);
      expect(faulty.stats().faults.upstreamError).toBe(1);
    } finally {
      await faulty.close();
    }
  });
});

describe('validate: routing', () => {
  it('answers 405 to a GET on the operation and 404 to an unknown path', async () => {
    const get = await fetch(`${sandbox.url}${VALIDATE}`);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    await get.text();
    const unknown = await post(sandbox.url, '/account/v2/agent/validate', { email: 'valid.agent@example.com' });
    expect(unknown.status).toBe(404);
  });
});
