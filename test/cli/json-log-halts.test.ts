/**
 * Under --json-log every error line carries `code`, `hint` and `exit_code` (README "Errors"), the
 * line of a halt included: a key the partner refuses (E_FORBIDDEN), a base URL it answers 404 for
 * (E_MISROUTED), a Retry-After over --max-retry-after (E_RETRY_AFTER), a partner that stays down
 * (E_CIRCUIT_OPEN). The summary line after it carries the exit code too. The real CLI against the
 * sandbox over HTTP on loopback; the key is a canary that no line may hold.
 */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { SandboxHandle } from '../../src/sandbox/index.js';
import { runCli, type CliResult } from '../helpers/cli.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { MAPPING_CSV, SAMPLE_CSV } from '../pipeline/_setup.js';
import { CANARY_KEY, expectNoSecrets, startCanarySandbox } from '../robustness/_shared.js';

type LogLine = Record<string, unknown>;

describe('--json-log: the halt line carries code, hint and exit_code', () => {
  const tmp = useTempDir('quote-batch-json-halt-');
  let sandbox: SandboxHandle | undefined;

  afterEach(async () => {
    await sandbox?.close();
    sandbox = undefined;
  });

  async function run(baseUrl: string, extra: readonly string[], key = CANARY_KEY): Promise<{ result: CliResult; lines: LogLine[] }> {
    const result = await runCli(
      ['run', SAMPLE_CSV, '--mapping', MAPPING_CSV, '--base-url', baseUrl, '--env', 'sandbox', '--ledger', tmp.path('l.db'), '--json-log', ...extra],
      { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: key }, timeoutMs: 60_000 },
    );
    // Every stderr line is one JSON object.
    const lines = result.stderr.trimEnd().split('\n').map((line) => JSON.parse(line) as LogLine);
    return { result, lines };
  }

  /** Exit 3; one halt line at error level with `code`, a hint matching `hint`, exit_code 3; the summary last, with exit_code 3. */
  function expectHalt(outcome: { result: CliResult; lines: LogLine[] }, code: string, hint: RegExp): LogLine {
    const { result, lines } = outcome;
    expect(result.code, result.stderr).toBe(3);
    const halts = lines.filter((l) => l.event === 'halt');
    expect(halts, result.stderr).toHaveLength(1);
    const halt = halts[0]!;
    expect(halt).toMatchObject({ level: 'error', code, exit_code: 3, msg: expect.stringMatching(/^halting: /) });
    expect(halt.hint).toEqual(expect.stringMatching(hint));
    expect(lines.at(-1)).toMatchObject({ level: 'warn', event: 'summary', end: 'halted', exit_code: 3 });
    // Every line says what it is about: a log collector filters on `event`.
    for (const line of lines) expect(line.event, JSON.stringify(line)).toEqual(expect.any(String));
    // Every error line carries what README promises of error lines.
    for (const line of lines.filter((l) => l.level === 'error')) {
      expect(line, JSON.stringify(line)).toEqual(expect.objectContaining({ code: expect.any(String), hint: expect.any(String), exit_code: 3 }));
    }
    expectNoSecrets(code, [result], tmp.path('l.db'));
    return halt;
  }

  it('a key the partner refuses (403): E_FORBIDDEN, check the key', async () => {
    sandbox = await startCanarySandbox();
    const outcome = await run(sandbox.url, [], `${CANARY_KEY}-wrong`);
    expectHalt(outcome, 'E_FORBIDDEN', /check the API key .*QUOTE_BATCH_API_KEY.*--api-key-file/);
    expect(outcome.result.stderr).not.toContain(`${CANARY_KEY}-wrong`);
  });

  it('a base URL the partner answers 404 for: E_MISROUTED, check the base URL', async () => {
    sandbox = await startCanarySandbox();
    expectHalt(await run(`${sandbox.url}/wrong-prefix`, []), 'E_MISROUTED', /check the base URL/);
  });

  it('a Retry-After over --max-retry-after: E_RETRY_AFTER, run again after the time asked for', async () => {
    sandbox = await startCanarySandbox({ throttleRate: 1, retryAfterSeconds: 3600 });
    const before = Date.now();
    const halt = expectHalt(await run(sandbox.url, ['--max-retry-after', '1m']), 'E_RETRY_AFTER', /^run the same command again after \d{4}-\d\d-\d\dT[\d:.]+Z /);
    const after = new Date(/after (\S+)/.exec(String(halt.hint))![1]!).getTime();
    expect(after).toBeGreaterThanOrEqual(before + 3_590_000);
    expect(after).toBeLessThanOrEqual(Date.now() + 3_600_000);
  });

  it('a partner that does not recover within --max-outage: E_CIRCUIT_OPEN, run again later', async () => {
    sandbox = await startCanarySandbox({ failRate: 1 });
    expectHalt(
      await run(sandbox.url, ['--max-consecutive-failures', '2', '--max-outage', '1s', '--max-attempts', '2']),
      'E_CIRCUIT_OPEN',
      /run the same command again later/,
    );
  });

  it('a run shorter than the half minute a retries warning looks back over still warns of its 429s and failures', async () => {
    sandbox = await startCanarySandbox({ throttleRate: 0.15, failRate: 0.05, retryAfterSeconds: 0 });
    const { result, lines } = await run(sandbox.url, ['--max-attempts', '10']);
    expect(result.code, result.stderr).toBe(1); // the sample's invalid rows; every other row answered
    const retries = lines.filter((l) => l.event === 'retries');
    expect(retries, result.stderr).toHaveLength(1);
    expect(retries[0]).toMatchObject({ level: 'warn', msg: expect.stringMatching(/^retries piling up: in the last \d+ s /) });
    expect(Number(retries[0]!.throttled) + Number(retries[0]!.errors)).toBeGreaterThanOrEqual(5);
    expectNoSecrets('retries', [result], tmp.path('l.db'));
  });

  it('a run resumed after a kill: its warnings (a crashed run, rows in doubt) and its info lines carry an event too', async () => {
    sandbox = await startCanarySandbox();
    const first = await run(sandbox.url, ['--limit', '40']);
    expect(first.result.code, first.result.stderr).toBe(3);
    // What `kill -9` leaves: the run still marked running, a row marked in flight.
    const db = new Database(tmp.path('l.db'));
    db.prepare(`UPDATE runs SET status = 'running', finished_at = NULL`).run();
    db.prepare(`UPDATE rows SET state = 'in_flight' WHERE row_number = 3`).run();
    db.close();
    const { result, lines } = await run(sandbox.url, []);
    expect(result.code, result.stderr).toBe(3); // row 3 stays in doubt
    expect(lines.find((l) => l.event === 'crashed_runs')).toMatchObject({ level: 'warn', job: 1, runs: 1, newly_in_doubt: 1 });
    expect(lines.find((l) => l.event === 'rows_in_doubt')).toMatchObject({ level: 'warn', job: 1, rows: 1, resend: false });
    expect(lines.find((l) => l.event === 'job_resumed')).toMatchObject({ level: 'info', job: 1 });
    for (const line of lines) expect(line.event, JSON.stringify(line)).toEqual(expect.any(String));
    expectNoSecrets('resumed', [first.result, result], tmp.path('l.db'));
  });
});
