/**
 * `quote-batch agents` through the real binary, against a sandbox started here with a fixture
 * agents list (`--base-url`), and against the embedded sandbox (`--env sandbox`).
 */
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { readAgentsFile, startSandbox, type SandboxHandle } from '../../src/sandbox/index.js';
import { runCli, REPO_ROOT } from '../helpers/cli.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { findClosedPort } from '../partner/_scripted-server.js';

const CANARY = 'canary-key-7f3a9';
const AGENTS_FIXTURE = join(REPO_ROOT, 'test', 'fixtures', 'partner', 'agents-command.csv');

let sandbox: SandboxHandle;
let temp: ReturnType<typeof makeTempDir>;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, apiKey: CANARY, agents: readAgentsFile(AGENTS_FIXTURE) });
});
afterAll(async () => {
  await sandbox.close();
});
beforeEach(() => {
  sandbox.reset();
  temp = makeTempDir('quote-batch-agents-');
});
afterEach(() => {
  temp.cleanup();
});

function agents(args: readonly string[], env: Record<string, string | undefined> = { QUOTE_BATCH_API_KEY: CANARY }) {
  return runCli(['agents', ...args], { cwd: temp.dir, env, timeoutMs: 60_000 });
}

describe('quote-batch agents', () => {
  it('prints a table and exits 0 when every agent is valid; each distinct e-mail is validated once', async () => {
    const result = await agents([
      'valid.agent@example.test', 'second.agent@example.test', 'VALID.Agent@example.test', '--env', 'sandbox', '--base-url', sandbox.url,
    ]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^email\s+valid\s+agent_id\s+message$/);
    expect(lines.slice(1)).toEqual([
      expect.stringMatching(/^valid\.agent@example\.test\s+yes\s+xyz-100000001\s+User verification success$/),
      expect.stringMatching(/^second\.agent@example\.test\s+yes\s+xyz-100000003\s+User verification success$/),
    ]);
    expect(sandbox.stats().operations.validate.received).toBe(2);
  });

  it('--json prints an array and exits 1 when some agent is not valid or the e-mail is malformed', async () => {
    const result = await agents([
      'valid.agent@example.test', 'ineligible.agent@example.test', 'unknown.agent@example.test', 'not-an-email',
      '--base-url', sandbox.url, '--env', 'sandbox', '--json',
    ]);
    expect(result.code).toBe(1);
    const rows = JSON.parse(result.stdout) as { email: string; valid: boolean | null; agent_id: string | null; message: string; outcome: string; http_status: number }[];
    expect(rows.map((r) => [r.email, r.valid, r.agent_id, r.outcome, r.http_status])).toEqual([
      ['valid.agent@example.test', true, 'xyz-100000001', 'ok', 200],
      ['ineligible.agent@example.test', false, null, 'ok', 200],
      ['unknown.agent@example.test', false, null, 'ok', 200],
      ['not-an-email', false, null, 'malformed', null],
    ]);
    expect(rows[1]?.message).toBe('The specified user_type does not match the account.');
    expect(rows[3]?.message).toBe('not an e-mail address: not sent to the partner');
  });

  it('validates addresses locally first, as run does: a malformed one is never sent', async () => {
    const result = await agents(['not an email', 'a@b', 'two@@example.test', 'valid.agent@example.test', '--base-url', sandbox.url, '--env', 'sandbox']);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe('');
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines.slice(1)).toEqual([
      'not an email              no     -              not an e-mail address: not sent to the partner',
      'a@b                       no     -              not an e-mail address: not sent to the partner',
      'two@@example.test         no     -              not an e-mail address: not sent to the partner',
      'valid.agent@example.test  yes    xyz-100000001  User verification success',
    ]);
    // Only the well-formed address reached the partner.
    expect(sandbox.stats().operations.validate.received).toBe(1);
  });

  it('exits 3 on 403 and says why, without ever printing the key', async () => {
    writeFileSync(temp.path('key.txt'), 'canary-key-wrong-3b1e\n', { mode: 0o600 });
    const result = await agents(['valid.agent@example.test', '--env', 'sandbox', '--base-url', sandbox.url, '--api-key-file', temp.path('key.txt')], {});
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/the partner refused the API key \(403\): it is not valid for the sandbox environment/);
    expect(`${result.stdout}${result.stderr}`).not.toContain('canary-key-wrong-3b1e');
    expect(sandbox.stats().operations.validate.received).toBe(1);
  });

  it('exits 3 at once when the base URL never answers, naming the host and what to check', async () => {
    const port = await findClosedPort();
    const started = Date.now();
    const result = await agents(['valid.agent@example.test', 'second.agent@example.test', '--env', 'sandbox', '--base-url', `http://127.0.0.1:${port}`]);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(result.code).toBe(3);
    expect(result.stderr).toBe(
      `error: the base URL http://127.0.0.1:${port} has not answered once in this run: 127.0.0.1:${port} refused the connection (ECONNREFUSED)\n`
      + `hint: check the port of 127.0.0.1:${port} (--base-url, --env, QUOTE_BATCH_*_URL or the config file) and that the partner's service listens there, then run the same command again\n`,
    );
    expect(`${result.stdout}${result.stderr}`).not.toContain(CANARY);
  });

  it('--json-log: every stderr line is one JSON object, the error with its code, hint and exit code', async () => {
    const port = await findClosedPort();
    const results = [
      await agents(['valid.agent@example.test', '--env', 'sandbox', '--base-url', `http://127.0.0.1:${port}`, '--json-log']),
      await agents(['valid.agent@example.test', '--env', 'sandbox', '--json-log'], { QUOTE_BATCH_API_KEY: CANARY }),
      await agents(['valid.agent@example.test', '--env', 'staging', '--json-log']),
    ];
    expect(results.map((r) => r.code)).toEqual([3, 1, 2]);
    const lines = results.map((r) => r.stderr.trimEnd().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>));
    expect(lines[0]).toEqual([expect.objectContaining({ level: 'error', event: 'error', code: 'E_UNREACHABLE', exit_code: 3, hint: expect.stringMatching(/^check the port of /) })]);
    expect(lines[1]).toEqual([expect.objectContaining({ level: 'info', event: 'sandbox_started' })]);
    expect(lines[2]).toEqual([expect.objectContaining({ level: 'error', code: 'E_USAGE', exit_code: 2 })]);
  });

  it('starts the embedded sandbox with ./samples/agents.csv for --env sandbox', async () => {
    mkdirSync(temp.path('samples'));
    copyFileSync(AGENTS_FIXTURE, join(temp.path('samples'), 'agents.csv'));
    const result = await agents(['second.agent@example.test', '--env', 'sandbox'], {});
    expect(result.stderr).toMatch(/embedded sandbox/);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/second\.agent@example\.test\s+yes\s+xyz-100000003/);
  });

  it.each([
    [[]],
    [['valid.agent@example.test', '--env', 'staging']],
    [['valid.agent@example.test', '--env', 'uat']],
    [['valid.agent@example.test', '--base-url', 'http://partner.example.com', '--env', 'uat']],
  ])('usage and configuration errors exit 2 with nothing sent: %j', async (args) => {
    const result = await agents(args);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/error/);
    expect(sandbox.stats().operations.validate.received).toBe(0);
  });
});
