/**
 * The main job end to end: the real CLI process, the sandbox over loopback HTTP, real ledger files.
 */
import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SandboxHandle } from '../../src/sandbox/index.js';
import { runCli, startCli } from '../helpers/cli.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import {
  countState, copyInto, resumePointOf, FIXTURES, KEY, ledgerBytes, MAPPING_CSV, readLedger, SAMPLE_CSV, startTestSandbox, waitFor,
} from './_setup.js';

const FINAL = ['succeeded', 'rejected', 'agent_invalid', 'invalid', 'duplicate'];

describe('run', () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let sandbox: SandboxHandle;

  beforeEach(async () => {
    tmp = makeTempDir();
    sandbox = await startTestSandbox();
  });
  afterEach(async () => {
    await sandbox.close();
    tmp.cleanup();
  });

  const run = (args: string[], env: Record<string, string> = {}) =>
    runCli(['run', SAMPLE_CSV, '--mapping', MAPPING_CSV, '--base-url', sandbox.url, '--env', 'sandbox', '--ledger', tmp.path('l.db'), '--quiet', ...args], {
      cwd: tmp.dir,
      env: { QUOTE_BATCH_API_KEY: KEY, ...env },
    });

  it('records every sample row in one state, matching the summary and check', async () => {
    const result = await run([]);
    expect(result.stderr).not.toMatch(/internal error/);
    expect(result.code).toBe(1); // the samples hold rows to fix
    const ledger = readLedger(tmp.path('l.db'));
    expect(ledger.rows).toHaveLength(200);
    for (const row of ledger.rows) expect(FINAL).toContain(row.state);
    // The summary prints the same counts as the ledger.
    for (const [state, n] of Object.entries(ledger.states)) {
      expect(result.stdout).toMatch(new RegExp(`\\b${state}\\s+${n}\\b`));
    }
    // The deliberately special sample rows (samples/README.md) end exactly where they should.
    const rowsIn = (state: string) => ledger.rows.filter((r) => r.state === state).map((r) => r.row_number);
    expect(rowsIn('invalid')).toEqual([17, 31, 48, 64, 79, 93, 112, 127, 140]);
    expect(rowsIn('rejected')).toEqual([23, 57, 86, 101, 150]);
    expect(rowsIn('duplicate')).toEqual([160, 175]);
    expect(rowsIn('agent_invalid')).toEqual([5, 9, 66, 71, 133, 144, 188, 190]);
    expect(ledger.states.succeeded).toBe(176);
    expect(ledger.jobs).toEqual([{ id: 1, status: 'completed', total_rows: 200 }]);
    expect(ledger.integrity).toBe('ok');
    // Agent validation: exactly one call per distinct e-mail among the rows that needed one.
    const stats = sandbox.stats();
    const emails = new Set(ledger.rows.filter((r) => r.state !== 'invalid' && r.state !== 'duplicate').map((r) => r.agent_email));
    expect(stats.operations.validate.received).toBe(emails.size);
    expect(stats.duplicateLeads).toEqual([]);
    expect(statSync(tmp.path('l.db')).mode & 0o777).toBe(0o600);
  });

  it('records in each second\'s sample the mean and the most requests in flight: a short run shows them, not the 0 at its end', async () => {
    const result = await run(['--no-adaptive', '--concurrency', '4']);
    expect(result.code, result.stderr).toBe(1);
    const db = new Database(tmp.path('l.db'), { readonly: true });
    try {
      const samples = db.prepare('SELECT in_flight, in_flight_max FROM run_samples ORDER BY elapsed_ms').all() as { in_flight: number; in_flight_max: number }[];
      // The last sample ends when nothing is in flight; its mean over the sample is not 0.
      expect(samples.at(-1)?.in_flight).toBeGreaterThan(0);
      expect(Math.max(...samples.map((s) => s.in_flight_max))).toBe(4);
      for (const s of samples) expect(s.in_flight_max).toBeGreaterThanOrEqual(s.in_flight);
    } finally {
      db.close();
    }
    const report = await runCli(['report', '--ledger', tmp.path('l.db'), '--format', 'json'], { cwd: tmp.dir });
    expect(JSON.parse(report.stdout).partner.in_flight_max).toBe(4);
  });

  it('says when adaptive concurrency ended at the --concurrency ceiling: the number is then the user\'s, not a limit the partner showed', async () => {
    const result = await run(['--concurrency', '1']); // a window never goes below 1: at the ceiling throughout
    expect(result.code, result.stderr).toBe(1);
    expect(result.stdout).toMatch(/\nin flight {4}1 requests allowed at the end \(median of (?:1 s|the last \d+ s)\): the --concurrency ceiling \(the partner's answers never called for fewer\)\n/);
  });

  it('says when --rate, not the partner, held the window below the ceiling', async () => {
    // 200 rows at 40/s from a partner that answers at once: about 1 request in flight, never half the
    // window of 4 a cold start allows, so the window never had to move.
    const result = await run(['--concurrency', '8', '--rate', '40']);
    expect(result.code, result.stderr).toBe(1);
    // The window may grow a little in the seconds a burst filled half of it, never to the ceiling.
    const allowed = /\nin flight {4}([\d.]+) requests allowed at the end \(median of (?:1 s|the last \d+ s)\) \(adaptive concurrency; --rate 40\/s held the sends back, so the window seldom filled: no limit of the partner's\)\n/.exec(result.stdout);
    expect(allowed, result.stdout).not.toBeNull();
    // The report tells the morning's reader the same.
    const json = await runCli(['report', '--ledger', tmp.path('l.db'), '--format', 'json'], { cwd: tmp.dir });
    const partner = JSON.parse(json.stdout).partner as { settled_limit: number };
    expect(partner).toMatchObject({ settled_ceiling: 8, settled_held_by_run: true });
    expect(Number(allowed?.[1])).toBe(Math.round(partner.settled_limit * 10) / 10);
    expect(partner.settled_limit).toBeLessThan(8);
    const table = await runCli(['report', '--ledger', tmp.path('l.db')], { cwd: tmp.dir, env: { COLUMNS: '200' } });
    expect(table.stdout).toMatch(/Partner's limit: settled at [\d.]+ requests in flight \(the run seldom filled it and met no 429: no limit of the partner's\)\n/);
  });

  it('sends nothing when a completed job is run again, and starts a new job for a changed file', async () => {
    expect((await run([])).code).toBe(1);
    const quotes = sandbox.stats().operations.quote.received;
    const again = await run([]);
    expect(again.code).toBe(1);
    expect(again.stderr + again.stdout).toMatch(/already completed/);
    expect(sandbox.stats().operations.quote.received).toBe(quotes);

    const changed = copyInto(tmp.dir, SAMPLE_CSV, 'changed.csv');
    writeFileSync(changed, readFileSync(changed, 'utf8').replace('Columbus', 'Cleveland'));
    const other = await runCli(['run', changed, '--mapping', MAPPING_CSV, '--base-url', sandbox.url, '--env', 'sandbox', '--ledger', tmp.path('l.db'), '--quiet'], {
      cwd: tmp.dir,
      env: { QUOTE_BATCH_API_KEY: KEY },
    });
    expect(other.code).toBe(1);
    expect(readLedger(tmp.path('l.db')).jobs.map((j) => j.id)).toEqual([1, 2]);
  });

  it('reads a quote that ran on as its first line, the lines after it as rows; a job begun before (input_reader null) keeps reading it as one row', async () => {
    // Row 5's last field opens a quote that the next line's "10,000" closes, wrongly: rows 5 and 6 ran together.
    const lines = readFileSync(SAMPLE_CSV, 'utf8').split('\n');
    lines[5] = (lines[5] as string).replace(/,([^,]*)$/, ',"$1');
    const input = tmp.path('run-on.csv');
    writeFileSync(input, lines.join('\n'));
    const runOn = (ledger: string, extra: string[] = []) =>
      runCli(['run', input, '--mapping', MAPPING_CSV, '--base-url', sandbox.url, '--env', 'sandbox', '--ledger', ledger, '--quiet', ...extra], { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: KEY } });
    const now = await runOn(tmp.path('now.db'));
    expect(now.code).toBe(1);
    const rowsNow = readLedger(tmp.path('now.db')).rows;
    expect(rowsNow).toHaveLength(200);
    expect(rowsNow[4]).toMatchObject({ row_number: 5, state: 'invalid' });
    expect(rowsNow[5]?.state).not.toBe('invalid');
    const reader = new Database(tmp.path('now.db'), { readonly: true });
    expect(reader.prepare('SELECT input_reader FROM jobs').pluck().get()).toBe(4); // INPUT_READER: CR CR LF ends a record too (src/ledger/schema.ts)
    reader.close();

    // A job begun before: its first run read rows 1-3, then quote-batch was upgraded.
    expect((await runOn(tmp.path('before.db'), ['--limit', '3'])).code).toBe(3);
    const db = new Database(tmp.path('before.db'));
    db.prepare('UPDATE jobs SET input_reader = NULL').run();
    db.close();
    expect((await runOn(tmp.path('before.db'))).code).toBe(1);
    const rowsBefore = readLedger(tmp.path('before.db')).rows;
    expect(rowsBefore).toHaveLength(199);
    expect(rowsBefore[4]).toMatchObject({ row_number: 5, state: 'invalid' });
    expect(rowsBefore[5]?.row_key).toBe(rowsNow[6]?.row_key);
  });

  it('reads a file whose header ends with CRLF and whose rows end with LF as rows; a job begun before (input_reader 2) keeps reading it the old way', async () => {
    const [header, ...rows] = readFileSync(SAMPLE_CSV, 'utf8').split('\r\n');
    const input = tmp.path('mixed.csv');
    writeFileSync(input, `${header}\r\n${rows.join('\n')}`);
    const runMixed = (ledger: string, extra: string[] = []) =>
      runCli(['run', input, '--mapping', MAPPING_CSV, '--base-url', sandbox.url, '--env', 'sandbox', '--ledger', ledger, '--quiet', ...extra], { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: KEY } });
    const now = await runMixed(tmp.path('mixed-now.db'));
    expect(now.code).toBe(1);
    const ledgerNow = readLedger(tmp.path('mixed-now.db'));
    expect(ledgerNow.rows).toHaveLength(200);
    expect(ledgerNow.states.succeeded).toBeGreaterThan(150);

    // A job begun before (input_reader 2): its runs read the file as that version did, with the
    // header's line end only. Here its first run got rows 1-3 (the resume point is row 3); the next
    // reads row 3 on to the end as one record, as that version would have, and row 3 is final.
    expect((await runMixed(tmp.path('mixed-before.db'), ['--limit', '3'])).code).toBe(3);
    const db = new Database(tmp.path('mixed-before.db'));
    db.prepare('UPDATE jobs SET input_reader = 2').run();
    db.close();
    const before = await runMixed(tmp.path('mixed-before.db'));
    expect(before.code).toBe(0);
    expect(readLedger(tmp.path('mixed-before.db')).rows.map((row) => row.row_number)).toEqual([1, 2, 3]);
  });

  it('reads a file mixing CR CR LF and CRLF line ends as rows, each as the samples have it; a job begun before (input_reader 3) keeps reading it the old way', async () => {
    const [header, ...rows] = readFileSync(SAMPLE_CSV, 'utf8').replace(/\r\n$/, '').split('\r\n');
    const input = tmp.path('crcrlf.csv');
    // A CRLF file converted again, then rows appended by a tool that writes CRLF: every other row too.
    writeFileSync(input, `${header}\r\r\n${rows.map((row, i) => `${row}${i % 2 === 0 ? '\r\r\n' : '\r\n'}`).join('')}`);
    const runMixed = (ledger: string, extra: string[] = []) =>
      runCli(['run', input, '--mapping', MAPPING_CSV, '--base-url', sandbox.url, '--env', 'sandbox', '--ledger', ledger, '--quiet', ...extra], { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: KEY } });
    const now = await runMixed(tmp.path('crcrlf-now.db'));
    expect(now.code).toBe(1);
    const plain = await run([]);
    expect(plain.code).toBe(1);
    // Row for row as the samples themselves read.
    const states = (path: string) => readLedger(path).rows.map((row) => `${row.row_number}:${row.state}`);
    expect(states(tmp.path('crcrlf-now.db'))).toEqual(states(tmp.path('l.db')));

    // A job begun before (input_reader 3): only CR CR LF, the header's line end, ends a record there.
    expect((await runMixed(tmp.path('crcrlf-before.db'), ['--limit', '1'])).code).toBe(3);
    const db = new Database(tmp.path('crcrlf-before.db'));
    db.prepare('UPDATE jobs SET input_reader = 3').run();
    db.close();
    await runMixed(tmp.path('crcrlf-before.db'));
    // Row 1 alone, then each row ending CRLF read with the next as one record, the last alone: 101.
    expect(readLedger(tmp.path('crcrlf-before.db')).rows).toHaveLength(101);
  });

  it('halts on 403 without sending a quote, and never prints the key', async () => {
    const canary = 'canary-key-Zq81x';
    const result = await run([], { QUOTE_BATCH_API_KEY: canary });
    expect(result.code).toBe(3);
    expect(result.stdout + result.stderr).toMatch(/403/);
    expect(result.stdout + result.stderr).not.toContain(canary);
    expect(sandbox.stats().operations.quote.received).toBe(0);
    const ledger = readLedger(tmp.path('l.db'));
    expect(ledger.runs.at(-1)?.status).toBe('halted');
    expect(ledger.states.succeeded ?? 0).toBe(0);
    expect(ledgerBytes(tmp.path('l.db'))).not.toContain(canary);
  });

  it('keeps the key and a licence id out of logs, errors and the ledger', async () => {
    const canaryKey = 'canary-key-Pw93k';
    const keyFile = tmp.path('key.txt');
    writeFileSync(keyFile, `${canaryKey}\n`);
    chmodSync(keyFile, 0o600);
    await sandbox.close();
    sandbox = await startTestSandbox({ apiKey: canaryKey });
    const result = await runCli(
      ['run', `${FIXTURES}/canary.csv`, '--mapping', `${FIXTURES}/canary.yaml`, '--base-url', sandbox.url, '--env', 'sandbox', '--ledger', tmp.path('c.db'), '--api-key-file', keyFile, '--json-log'],
      { cwd: tmp.dir },
    );
    expect(result.code).toBe(0);
    expect(readLedger(tmp.path('c.db')).states).toEqual({ succeeded: 3 });
    const everything = result.stdout + result.stderr + ledgerBytes(tmp.path('c.db'));
    expect(everything).not.toContain(canaryKey);
    expect(everything).not.toContain('CANARYLIC77');
    expect(everything).not.toContain('Canaryson');
    // With --store-requests full the body is kept as sent (the operator asked for it).
    const full = await runCli(
      ['run', `${FIXTURES}/canary.csv`, '--mapping', `${FIXTURES}/canary.yaml`, '--base-url', sandbox.url, '--env', 'sandbox', '--ledger', tmp.path('f.db'), '--api-key-file', keyFile, '--quiet', '--store-requests', 'full'],
      { cwd: tmp.dir },
    );
    expect(full.code).toBe(0);
    expect(ledgerBytes(tmp.path('f.db'))).toContain('CANARYLIC7731');
    expect(ledgerBytes(tmp.path('f.db'))).not.toContain(canaryKey);
  });

  it('trips the circuit breaker in an outage, gives up after --max-outage, leaves rows retryable, and completes once it is over', async () => {
    sandbox.setFaults({ outage: true });
    const started = Date.now();
    const down = await run(['--max-consecutive-failures', '6', '--max-attempts', '2', '--max-outage', '3s']);
    expect(down.code).toBe(3);
    expect(Date.now() - started).toBeGreaterThanOrEqual(3000);
    expect(down.stderr).toMatch(/warning: the partner looks down \(agent validation\): 6 consecutive transient failures .* the run gives up at .* \(--max-outage 3s\)/);
    // The halt says what the partner kept answering, in the log and in the summary.
    expect(down.stderr).toMatch(/error: halting: the partner did not recover within --max-outage \(3s; agent validation failing for \S+; its last answer 503 Service Unavailable\)/);
    expect(down.stdout).toMatch(/stopped +the partner did not recover within --max-outage \(3s; .*its last answer 503 Service Unavailable\)/);
    expect(down.stdout).toMatch(/exit 3: job not completed: the partner looks down; run the same command again later to resume/);
    let ledger = readLedger(tmp.path('l.db'));
    expect(ledger.states.succeeded ?? 0).toBe(0);
    expect(ledger.states.in_doubt ?? 0).toBe(0);
    expect(ledger.runs.at(-1)?.status).toBe('halted');
    sandbox.setFaults({ outage: false });
    const up = await run([]);
    expect(up.code).toBe(1);
    ledger = readLedger(tmp.path('l.db'));
    expect(ledger.rows).toHaveLength(200);
    for (const row of ledger.rows) expect(FINAL).toContain(row.state);
    expect(sandbox.stats().duplicateLeads).toEqual([]);
  });

  it('marks rows in_doubt when the answer is lost, and resends them only with --resend-in-doubt', async () => {
    sandbox.setFaults({ resetAfterRate: 0.1 });
    const first = await run([]);
    expect(first.code).toBe(3);
    const inDoubt = readLedger(tmp.path('l.db')).states.in_doubt ?? 0;
    expect(inDoubt).toBeGreaterThan(0);
    expect(first.stdout).toMatch(/in doubt/);
    sandbox.setFaults({ resetAfterRate: 0 });
    const quotes = sandbox.stats().operations.quote.received;
    const second = await run([]);
    expect(second.code).toBe(3);
    expect(sandbox.stats().operations.quote.received).toBe(quotes); // nothing resent blindly
    expect(readLedger(tmp.path('l.db')).states.in_doubt).toBe(inDoubt);
    const third = await run(['--resend-in-doubt']);
    expect(third.code).toBe(1);
    expect(sandbox.stats().operations.quote.received).toBe(quotes + inDoubt);
    expect(readLedger(tmp.path('l.db')).states.in_doubt ?? 0).toBe(0);
  });

  it('stops on SIGINT, records the run as interrupted, and resumes to completion without duplicates', async () => {
    sandbox.setFaults({ latencyMs: 40 });
    const ledgerPath = tmp.path('l.db');
    const { child, done } = startCli(
      ['run', SAMPLE_CSV, '--mapping', MAPPING_CSV, '--base-url', sandbox.url, '--env', 'sandbox', '--ledger', ledgerPath, '--quiet', '--concurrency', '4'],
      { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: KEY } },
    );
    await waitFor(() => countState(ledgerPath, 'succeeded') >= 20);
    child.kill('SIGINT');
    const stopped = await done;
    expect(stopped.code).toBe(3);
    let ledger = readLedger(ledgerPath);
    expect(ledger.runs.at(-1)?.status).toBe('interrupted');
    expect(ledger.jobs[0]?.status).toBe('interrupted');
    expect(ledger.states.in_flight ?? 0).toBe(0); // requests in flight were finished and recorded
    expect(ledger.states.in_doubt ?? 0).toBe(0);
    // The resume point: every row before it is final, so the next run seeks past them.
    const point = resumePointOf(ledgerPath);
    expect(point).toBeGreaterThan(1);
    expect(ledger.rows.filter((r) => r.row_number < point).every((r) => FINAL.includes(r.state))).toBe(true);
    sandbox.setFaults({ latencyMs: 0 });
    const quotesBefore = sandbox.stats().operations.quote.received;
    const resumed = await runCli(['run', SAMPLE_CSV, '--mapping', MAPPING_CSV, '--base-url', sandbox.url, '--env', 'sandbox', '--ledger', ledgerPath], {
      cwd: tmp.dir,
      env: { QUOTE_BATCH_API_KEY: KEY },
    });
    expect(resumed.stderr).toContain(`skipping rows 1-${point - 1}`);
    expect(resumed.code).toBe(1);
    expect(sandbox.stats().operations.quote.received - quotesBefore).toBe(
      readLedger(ledgerPath).rows.filter((r) => ['succeeded', 'rejected'].includes(r.state)).length - ledger.rows.filter((r) => ['succeeded', 'rejected'].includes(r.state)).length,
    );
    ledger = readLedger(ledgerPath);
    expect(ledger.rows).toHaveLength(200);
    for (const row of ledger.rows) expect(FINAL).toContain(row.state);
    expect(sandbox.stats().duplicateLeads).toEqual([]);
  });

  it('refuses a second process on the same job', async () => {
    sandbox.setFaults({ latencyMs: 100 });
    const ledgerPath = tmp.path('l.db');
    const { child, done } = startCli(
      ['run', SAMPLE_CSV, '--mapping', MAPPING_CSV, '--base-url', sandbox.url, '--env', 'sandbox', '--ledger', ledgerPath, '--quiet', '--concurrency', '2'],
      { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: KEY } },
    );
    try {
      await waitFor(() => countState(ledgerPath, 'succeeded') >= 2);
      const second = await run([]);
      expect(second.code).toBe(4);
      expect(second.stderr).toMatch(/in use by another live quote-batch process/);
    } finally {
      child.kill('SIGKILL');
      await done;
    }
  });
});

describe('run after SIGKILL', () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let sandbox: SandboxHandle;
  beforeEach(async () => {
    tmp = makeTempDir();
    sandbox = await startTestSandbox({ faults: { latencyMs: 20, jitterMs: 20 } });
  });
  afterEach(async () => {
    await sandbox.close();
    tmp.cleanup();
  });
  afterAll(() => undefined);

  it('resumes a killed run: one final state per row, no lead twice, in_doubt within the concurrency', async () => {
    const ledgerPath = tmp.path('l.db');
    const args = ['run', SAMPLE_CSV, '--mapping', MAPPING_CSV, '--base-url', sandbox.url, '--env', 'sandbox', '--ledger', ledgerPath, '--quiet', '--concurrency', '6'];
    const opts = { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: KEY } };
    const { child, done } = startCli(args, opts);
    await waitFor(() => countState(ledgerPath, 'succeeded') >= 60);
    child.kill('SIGKILL');
    expect((await done).signal).toBe('SIGKILL');

    const resumed = await runCli(args, opts);
    expect([1, 3]).toContain(resumed.code);
    const ledger = readLedger(ledgerPath);
    expect(ledger.rows).toHaveLength(200);
    expect(new Set(ledger.rows.map((r) => r.row_number)).size).toBe(200);
    for (const row of ledger.rows) expect([...FINAL, 'in_doubt']).toContain(row.state);
    expect(ledger.states.in_doubt ?? 0).toBeLessThanOrEqual(6);
    expect(resumed.code).toBe((ledger.states.in_doubt ?? 0) > 0 ? 3 : 1);
    expect(ledger.runs.map((r) => r.status)).toEqual(['crashed', 'completed']);
    expect(sandbox.stats().duplicateLeads).toEqual([]);
    expect(ledger.integrity).toBe('ok');
  });
});
