/**
 * A lead is not sent twice by a new job: a file fixed in place (or run again with --fresh) is a new
 * job, whose rows already sent by an earlier job of the same environment and operation are recorded
 * `duplicate` in uat and production, and sent (with one warning) in the sandbox. The real CLI, the
 * sandbox over loopback HTTP (standing in for uat), real ledger files.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SandboxHandle } from '../../src/sandbox/index.js';
import Database from 'better-sqlite3';
import { Ledger } from '../../src/ledger/index.js';
import { SQL } from '../../src/ledger/_statements.js';
import { decide } from '../../src/pipeline/row-state.js';
import type { Environment, Operation } from '../../src/partner/types.js';
import { runCli } from '../helpers/cli.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { KEY, MAPPING_CSV, readLedger, SAMPLE_CSV, startTestSandbox } from './_setup.js';

describe('rows another job already sent', () => {
  const tmp = useTempDir();
  let sandbox: SandboxHandle;
  beforeEach(async () => {
    sandbox = await startTestSandbox();
  });
  afterEach(() => sandbox.close());

  const run = (input: string, env: string, args: string[] = []) =>
    runCli(['run', input, '--mapping', MAPPING_CSV, '--base-url', sandbox.url, '--env', env, '--ledger', tmp.path('l.db'), '--quiet', ...args], {
      cwd: tmp.dir,
      env: { QUOTE_BATCH_API_KEY: KEY },
    });

  /** The samples with row 17's impossible date of birth (13/45/1990) fixed in place, as a user would. */
  const fixedInPlace = (): string => {
    const fixed = readFileSync(SAMPLE_CSV, 'utf8').replace('13/45/1990', '03/15/1990');
    expect(fixed).not.toBe(readFileSync(SAMPLE_CSV, 'utf8'));
    const path = tmp.path('leads-fixed.csv');
    writeFileSync(path, fixed);
    return path;
  };

  it('uat: a file fixed in place sends only its fixed row; --fresh sends nothing; --resend-sent sends what it is given', async () => {
    const first = await run(SAMPLE_CSV, 'uat');
    expect(first.code, first.stderr).toBe(1); // the samples hold rows to fix
    expect(readLedger(tmp.path('l.db')).states.succeeded).toBe(176);
    const quotesBefore = sandbox.stats().operations.quote.received;

    const second = await run(fixedInPlace(), 'uat');
    expect(second.code, second.stderr).toBe(1); // the rejected rows are still wrong
    const job2 = readLedger(tmp.path('l.db'), 2);
    // 176 leads job 1 sent, and the two repeats of them in the file: recorded, not sent.
    expect(job2.states).toMatchObject({ duplicate: 178, rejected: 5, succeeded: 1 });
    expect(job2.rows.find((r) => r.row_number === 17)?.state).toBe('succeeded');
    // Only row 17 went out: the 5 rejected requests are unchanged, and carry job 1's answer.
    expect(sandbox.stats().operations.quote.received - quotesBefore).toBe(1);
    expect(sandbox.stats().duplicateLeads).toEqual([]);
    const db = new Database(tmp.path('l.db'), { readonly: true });
    const answers = (job: number) => db.prepare(`SELECT row_number, http_status, error_code, error_message, attempts FROM rows WHERE job_id = ? AND state = 'rejected' ORDER BY row_number`).all(job) as { row_number: number; attempts: number }[];
    expect(answers(2).map((r) => ({ ...r, attempts: 1 }))).toEqual(answers(1));
    expect(answers(2).every((r) => r.attempts === 0)).toBe(true);
    const rejectedInJob1 = answers(1).map((r) => r.row_number);
    expect(db.prepare(`SELECT error_message FROM rows WHERE job_id = 2 AND row_number = 1`).get()).toEqual({
      error_message: 'row key "clk_cf7b62f5b30f" was already sent to the partner by job 1 (its row 1, succeeded); not sent again (--resend-sent sends it)',
    });
    db.close();
    // One warning of each kind, naming rows and jobs, not keys (a key may be personal data).
    expect(second.stderr).toContain('row 1: its lead was already sent to the partner by job 1 (its row 1, succeeded): recorded duplicate, not sent; likewise every other row whose lead another job sent to uat (--resend-sent sends them)');
    // The first of the rejected rows to reach the check: rows wait for their agents and slots, so not always row 23.
    const rejectedWarning = /row (\d+): the partner rejected this very request in job 1 \(its row \1\): recorded rejected with that answer, not sent again/.exec(second.stderr);
    expect(rejectedWarning, second.stderr).not.toBeNull();
    expect(rejectedInJob1).toContain(Number(rejectedWarning?.[1]));
    expect(second.stderr.match(/^warning: /gm)).toHaveLength(2);
    expect(second.stderr).not.toContain('clk_');
    expect(second.stdout).toContain('178 duplicate row(s) were not sent: another job of this ledger had sent (or may have sent)\ntheir leads to uat');
    expect(second.stdout).toContain(`--job 2 --status duplicate --format source --out sent-before.csv`);
    expect(second.stdout).toContain('5 rejected row(s) were not sent again: the partner had rejected the very same request in\nanother job');
    const paragraphs = second.stdout.split('\n\n').filter((p) => p.includes('were not sent'));
    expect(paragraphs).toHaveLength(2);
    for (const line of paragraphs.join('\n').split('\n').filter((l) => !l.includes('quote-batch '))) expect(line.length, line).toBeLessThanOrEqual(100);
    // The report says why the job's success rate is low: its leads succeeded in job 1.
    const json = await runCli(['report', '--ledger', tmp.path('l.db'), '--job', '2', '--format', 'json'], { cwd: tmp.dir });
    expect(JSON.parse(json.stdout).rows).toMatchObject({ success_rate: 0.005, by_other_jobs: { sent: 178, rejected: 5, in_doubt_there: 0, in_doubt_jobs: [] } });
    const table = await runCli(['report', '--ledger', tmp.path('l.db'), '--job', '2'], { cwd: tmp.dir });
    expect(table.stdout).toContain('  by other jobs, not sent: 178 leads sent before (duplicate), 5 requests rejected before\n');

    // --fresh alone starts a new job of the same file: nothing goes out.
    const fresh = await run(SAMPLE_CSV, 'uat', ['--fresh', '--json-log']);
    expect(fresh.code, fresh.stderr).toBe(1);
    expect(readLedger(tmp.path('l.db'), 3).states).toMatchObject({ duplicate: 178, rejected: 5, invalid: 9 }); // row 17 has its bad date again
    expect(sandbox.stats().operations.quote.received - quotesBefore).toBe(1);
    const summary = fresh.stderr.trimEnd().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>).find((l) => l.event === 'summary');
    expect(summary).toMatchObject({ duplicate: 178, sent_by_other_job: 176 + 2, rejected_by_other_job: 5 });

    // Deliberately, the rows exported from job 2 as sent before (in the input's own layout): sent again.
    const exported = tmp.path('sent-before.csv');
    const exportRun = await runCli(['export', '--ledger', tmp.path('l.db'), '--job', '2', '--status', 'duplicate', '--format', 'source', '--out', exported], { cwd: tmp.dir });
    expect(exportRun.code, exportRun.stderr).toBe(0);
    const again = await run(exported, 'uat', ['--resend-sent']);
    expect(again.code, again.stderr).toBe(0);
    expect(readLedger(tmp.path('l.db'), 4).states).toEqual({ succeeded: 176, duplicate: 2 });
    expect(sandbox.stats().duplicateLeads).toHaveLength(176);
    expect(again.stderr).not.toContain('already sent');
  });

  it('uat: rows an interrupted run left pending, whose leads another job sent meanwhile, are caught when marked', async () => {
    const first = await run(SAMPLE_CSV, 'uat');
    expect(first.code, first.stderr).toBe(1);
    const fixed = fixedInPlace();
    const second = await run(fixed, 'uat');
    expect(second.code, second.stderr).toBe(1);
    // What a run of job 2 reading its rows while job 1 was still sending them would have left: rows
    // recorded pending (job 1 had not answered for them yet), the run interrupted.
    const db = new Database(tmp.path('l.db'));
    db.prepare(`UPDATE rows SET state = 'pending', error_code = NULL, error_message = NULL WHERE job_id = 2 AND error_code = 'sent_by_other_job'`).run();
    db.prepare(`UPDATE jobs SET status = 'interrupted', resume_row = NULL, resume_offset = NULL, resume_line = NULL WHERE id = 2`).run();
    db.close();
    const quotesBefore = sandbox.stats().operations.quote.received;
    const resumed = await run(fixed, 'uat');
    expect(readLedger(tmp.path('l.db')).runs.filter((r) => r.job_id === 2)).toHaveLength(2); // job 2 resumed, not a new job
    expect(resumed.code, resumed.stderr).toBe(1);
    expect(sandbox.stats().operations.quote.received).toBe(quotesBefore);
    expect(sandbox.stats().duplicateLeads).toEqual([]);
    expect(readLedger(tmp.path('l.db'), 2).states).toMatchObject({ duplicate: 178, rejected: 5, succeeded: 1 });
    expect(resumed.stderr.match(/its lead was already sent to the partner by job 1/g)).toHaveLength(1);
  });

  it('uat: rows job 2 found only in doubt in job 1, which ops then resolve `pending` there, are pending again in job 2 and sent once', async () => {
    // Night 1 ended with rows 1-3 in doubt (a reset after sending); the partner never had their leads.
    expect((await run(SAMPLE_CSV, 'uat')).code).toBe(1);
    const db = new Database(tmp.path('l.db'));
    db.prepare(`UPDATE rows SET state = 'in_doubt', error_code = 'ECONNRESET' WHERE job_id = 1 AND row_number IN (1, 2, 3)`).run();
    db.prepare(`UPDATE jobs SET status = 'interrupted', finished_at = NULL WHERE id = 1`).run();
    sandbox.reset();
    // Night 2, before anyone settled night 1: those three may have been sent, so they are not sent;
    // the summary, the log's summary line and the report say they are settled in job 1.
    const night2 = await run(fixedInPlace(), 'uat', ['--json-log']);
    expect(night2.code).toBe(1);
    expect(night2.stdout).toContain(`\nOf those, 3 only may have been sent: their rows are in doubt in job 1. Settle them there\n  quote-batch resolve --ledger ${tmp.path('l.db')} --job 1 --rows <n,...> --as succeeded|pending\n(pending: the partner never had the lead; these rows become pending again, and the next run sends it).\n`);
    const summaryLine = night2.stderr.split('\n').filter((l) => l.includes('"event":"summary"')).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(summaryLine.map((l) => [l.sent_by_other_job, l.in_doubt_in_other_job])).toEqual([[178, 3]]);
    const report2 = await runCli(['report', '--ledger', tmp.path('l.db'), '--job', '2', '--format', 'json'], { cwd: tmp.dir });
    expect(JSON.parse(report2.stdout).rows.by_other_jobs).toEqual({ sent: 178, rejected: 5, in_doubt_there: 3, in_doubt_jobs: [1] });
    expect((await runCli(['report', '--ledger', tmp.path('l.db'), '--job', '2'], { cwd: tmp.dir })).stdout)
      .toContain('\n    of those leads, 3 only may have been sent: in doubt in job 1; settle them there (resolve)\n');
    const duplicates = db.prepare(`SELECT row_number, error_message, sent_by_job, sent_by_row FROM rows WHERE job_id = 2 AND row_number IN (1, 2, 3) ORDER BY row_number`).all();
    expect(duplicates).toEqual([1, 2, 3].map((n) => ({
      row_number: n, sent_by_job: 1, sent_by_row: n, error_message: expect.stringMatching(new RegExp(`may already have been sent to the partner by job 1 \\(its row ${n}, in_doubt\\)`)),
    })));
    expect(sandbox.stats().operations.quote.received).toBe(1); // row 17, fixed
    // Ops ask the partner: rows 1 and 2 never arrived, row 3 did.
    const resolved = await runCli(['resolve', '--ledger', tmp.path('l.db'), '--job', '1', '--rows', '1,2', '--as', 'pending', '--note', 'partner: not received'], { cwd: tmp.dir });
    expect(resolved.code, resolved.stderr).toBe(0);
    // Job 2 recorded rows 1 and 2 duplicate on those rows' word: they are pending again there too.
    expect(resolved.stdout).toContain("\njob 2: 2 row(s) that it had recorded duplicate because of these rows are pending again (rows 1-2): the next run of job 2's file sends their leads, unless a run of job 1 sends them first\n");
    expect(readLedger(tmp.path('l.db'), 2).rows.filter((r) => r.row_number <= 3).map((r) => r.state)).toEqual(['pending', 'pending', 'duplicate']);
    expect(db.prepare(`SELECT row_number, from_state, to_state FROM resolutions WHERE job_id = 2 ORDER BY row_number`).all())
      .toEqual([1, 2].map((n) => ({ row_number: n, from_state: 'duplicate', to_state: 'pending' })));
    expect((await runCli(['resolve', '--ledger', tmp.path('l.db'), '--job', '1', '--rows', '3', '--as', 'succeeded'], { cwd: tmp.dir })).code).toBe(0);
    // The file was fixed in place: job 2's file is the one run now. It sends the two leads, once.
    const fixedAgain = await run(fixedInPlace(), 'uat');
    expect(fixedAgain.code, fixedAgain.stderr).toBe(1); // completed; the samples' rows to fix
    expect(sandbox.stats().operations.quote.received).toBe(3);
    expect(readLedger(tmp.path('l.db'), 2).rows.filter((r) => r.row_number <= 3).map((r) => r.state)).toEqual(['succeeded', 'succeeded', 'duplicate']);
    // Job 2's report: none of its leads is in doubt anywhere now.
    const settled = await runCli(['report', '--ledger', tmp.path('l.db'), '--job', '2', '--format', 'json'], { cwd: tmp.dir });
    expect(JSON.parse(settled.stdout).rows.by_other_jobs).toMatchObject({ in_doubt_there: 0, in_doubt_jobs: [] });
    // Job 1, run again (its file as it was), finds them sent by job 2, and sends nothing.
    const again = await run(SAMPLE_CSV, 'uat');
    expect(again.code, again.stderr).toBe(1);
    expect(sandbox.stats().operations.quote.received).toBe(3);
    expect(readLedger(tmp.path('l.db'), 1).rows.filter((r) => r.row_number <= 3).map((r) => r.state)).toEqual(['duplicate', 'duplicate', 'succeeded']);
    expect(readLedger(tmp.path('l.db'), 1).jobs.find((j) => j.id === 1)?.status).toBe('completed');
    expect(Object.keys(sandbox.stats().leads)).toHaveLength(3);
    expect(sandbox.stats().duplicateLeads).toEqual([]);
    // And a third job finds them sent.
    const third = await run(fixedInPlace(), 'uat', ['--fresh']);
    expect(third.code, third.stderr).toBe(1);
    expect(sandbox.stats().operations.quote.received).toBe(3);
    db.close();
  });

  it('sandbox: the rows are sent again, with one warning that uat and production would not send them', async () => {
    const first = await run(SAMPLE_CSV, 'sandbox');
    expect(first.code, first.stderr).toBe(1);
    const second = await run(fixedInPlace(), 'sandbox');
    expect(second.code, second.stderr).toBe(1);
    expect(readLedger(tmp.path('l.db'), 2).states).toMatchObject({ succeeded: 177, duplicate: 2, rejected: 5 });
    expect(second.stderr.match(/was already sent by job 1/g)).toHaveLength(1);
    expect(second.stderr).toContain('in the sandbox such rows are sent again; in uat and production they are recorded duplicate, not sent (unless --resend-sent)');
    expect(second.stdout).not.toContain('were not sent');
  });
});

describe('Ledger: rows of other jobs', () => {
  const tmp = useTempDir();

  it('counts a row recorded sent_by_other_job only while the row it found sent still counts', () => {
    const ledger = Ledger.open(tmp.path('l.db'));
    try {
      const job = (n: number): number => ledger.createJob({
        input_path: `/in/${n}.csv`, input_sha256: `in-${n}`, input_format: 'csv', mapping_path: '/m.yaml', mapping_sha256: 'm',
        environment: 'uat', operation: 'quote', base_url: 'http://127.0.0.1:1',
      }).id;
      const [one, two, three, four] = [job(1), job(2), job(3), job(4)] as [number, number, number, number];
      const find = (jobId: number, key: string) => ledger.sentByOtherJob(jobId, 'uat', 'quote', key);
      const setState = (jobId: number, row: number, state: string) =>
        ledger.db.prepare('UPDATE rows SET state = ? WHERE job_id = ? AND row_number = ?').run(state, jobId, row);
      // Job 1 left row 1 in doubt; job 2 found it so (a chain: job 3 found job 2's row).
      ledger.insertRows(one, [{ rowNumber: 1, rowKey: 'k', agentEmail: null, state: 'in_doubt' }]);
      const dup = (sentBy: { job_id: number; row_number: number } | null, message: string | null = null) =>
        ({ rowNumber: 1, rowKey: 'k', agentEmail: null, state: 'duplicate' as const, errorCode: 'sent_by_other_job', errorMessage: message, sentBy });
      ledger.insertRows(two, [dup({ job_id: one, row_number: 1 })]);
      ledger.insertRows(three, [dup({ job_id: two, row_number: 1 })]);
      expect(find(four, 'k')).toEqual({ job_id: one, row_number: 1, state: 'in_doubt' });
      expect(find(one, 'k')).toBeUndefined();
      // Resolved pending there: the partner never had it. No row counts, for job 1 itself nor any other.
      setState(one, 1, 'pending');
      expect(find(one, 'k')).toBeUndefined();
      expect(find(four, 'k')).toBeUndefined();
      // Sent at last by job 1: its row counts again, and so do the rows that point to it.
      setState(one, 1, 'succeeded');
      expect(find(four, 'k')).toEqual({ job_id: one, row_number: 1, state: 'succeeded' });
      // For job 1 itself, rows that lead back to its own are no evidence: its own rows are its own business.
      expect(find(one, 'k')).toBeUndefined();
      setState(one, 1, 'in_flight'); // as when job 1 marks it, in the transaction that looks again
      expect(find(one, 'k')).toBeUndefined();
      expect(find(four, 'k')).toEqual({ job_id: one, row_number: 1, state: 'in_flight' });
      // Job 1 pruned: what job 2 recorded stands (the lead was sent).
      ledger.db.prepare('DELETE FROM rows WHERE job_id = ?').run(one);
      expect(find(four, 'k')).toEqual({ job_id: two, row_number: 1, state: 'duplicate', origin: { job_id: two, row_number: 1 } });
      // A ring of duplicates pointing at one another is no evidence.
      ledger.insertRows(one, [dup({ job_id: three, row_number: 1 })]); // 1 → 3 → 2 → 1
      expect(find(four, 'k')).toBeUndefined();
      // Rows written before schema version 6 point by their message; one whose message says nothing counts, as before.
      ledger.insertRows(four, [{ rowNumber: 5, rowKey: 'old', agentEmail: null, state: 'pending' }]);
      const message = decide({ type: 'sent_by_other_job', rowKey: 'old', sent: { job_id: four, row_number: 5, state: 'in_doubt' } }).errorMessage ?? null;
      ledger.insertRows(two, [{ ...dup(null, message), rowNumber: 8, rowKey: 'old' }, { ...dup(null), rowNumber: 9, rowKey: 'older' }]);
      expect(find(three, 'old')).toBeUndefined(); // job 4's row 5 is pending
      setState(four, 5, 'in_doubt');
      // A row recording it would refer to the row that sent (may have sent) the lead: job 4's.
      expect(find(three, 'old')).toEqual({ job_id: two, row_number: 8, state: 'duplicate', origin: { job_id: four, row_number: 5 } });
      expect(find(three, 'older')).toEqual({ job_id: two, row_number: 9, state: 'duplicate', origin: { job_id: two, row_number: 9 } });
    } finally {
      ledger.close();
    }
  });

  it('finds a key another job of the same environment and operation sent, or may have sent; and a request it had rejected', () => {
    const ledger = Ledger.open(tmp.path('l.db'));
    try {
      const job = (environment: Environment, operation: Operation): number => ledger.createJob({
        input_path: `/in/${environment}-${operation}.csv`, input_sha256: `${environment}${operation}`, input_format: 'csv',
        mapping_path: '/m.yaml', mapping_sha256: 'm', environment, operation, base_url: 'http://127.0.0.1:1',
      }).id;
      const uat = job('uat', 'quote');
      expect(ledger.hasOtherJob(uat, 'uat', 'quote')).toBe(false);
      const rows: [number, string, string, string?][] = [
        [1, 'sent', 'succeeded'], [2, 'doubt', 'in_doubt'], [3, 'refused', 'rejected'], [4, 'waiting', 'pending'], [5, 'failed', 'failed'],
        [6, 'row-6', 'succeeded'], // a key made from the row number: says nothing about another file
        [7, 'out', 'in_flight'], // that job runs now, or was killed
        [8, 'found', 'duplicate', 'sent_by_other_job'], // that job found it sent by a job since pruned
        [9, 'repeat', 'duplicate', 'duplicate_row_key'],
      ];
      ledger.insertRows(uat, rows.map(([rowNumber, rowKey, state, errorCode]) => ({ rowNumber, rowKey, agentEmail: null, state: state as 'pending', errorCode: errorCode ?? null })));
      ledger.markInFlight(uat, 3, null, null, 'hash-3');
      ledger.recordOutcome(uat, 1, 3, { state: 'rejected', attempts: 1, httpStatus: 400, errorCode: 'state_not_supported', errorMessage: 'State HI is not supported.' }, []);
      const production = job('production', 'quote');
      const lead = job('uat', 'lead');
      const next = job('uat', 'quote');
      expect(ledger.hasOtherJob(next, 'uat', 'quote')).toBe(true);
      expect(ledger.hasOtherJob(production, 'production', 'quote')).toBe(false);
      const cases: [number, string, { job_id: number; row_number: number; state: string; origin?: { job_id: number; row_number: number } } | undefined][] = [
        [next, 'sent', { job_id: uat, row_number: 1, state: 'succeeded' }],
        [next, 'doubt', { job_id: uat, row_number: 2, state: 'in_doubt' }],
        [next, 'out', { job_id: uat, row_number: 7, state: 'in_flight' }],
        [next, 'found', { job_id: uat, row_number: 8, state: 'duplicate', origin: { job_id: uat, row_number: 8 } }],
        [next, 'repeat', undefined],
        [next, 'refused', undefined],
        [next, 'waiting', undefined],
        [next, 'failed', undefined],
        [next, 'row-6', undefined],
        [next, 'unknown', undefined],
        [uat, 'sent', undefined], // its own rows are the in-job duplicate check's business
        [production, 'sent', undefined],
        [lead, 'sent', undefined],
      ];
      for (const [jobId, key, expected] of cases) {
        const environment = jobId === production ? 'production' : 'uat';
        const operation = jobId === lead ? 'lead' : 'quote';
        expect(ledger.sentByOtherJob(jobId, environment, operation, key), `job ${jobId} key ${key}`).toEqual(expected);
      }
      // A rejection counts only for the very same request.
      expect(ledger.rejectedByOtherJob(next, 'uat', 'quote', 'refused', 'hash-3')).toEqual({
        job_id: uat, row_number: 3, http_status: 400, error_code: 'state_not_supported', error_message: 'State HI is not supported.',
      });
      expect(ledger.rejectedByOtherJob(next, 'uat', 'quote', 'refused', 'hash-of-a-fixed-request')).toBeUndefined();
      expect(ledger.rejectedByOtherJob(uat, 'uat', 'quote', 'refused', 'hash-3')).toBeUndefined();
      expect(ledger.rejectedByOtherJob(production, 'production', 'quote', 'refused', 'hash-3')).toBeUndefined();
      // The statements search the key's index and the jobs by id: no scan, however many rows and jobs.
      for (const [sql, params] of [[SQL.sentByOtherJob, ['k', 1, 'uat', 'quote']], [SQL.rejectedByOtherJob, ['k', 1, 'x', 'uat', 'quote']]] as const) {
        const plan = JSON.stringify(ledger.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params));
        expect(plan).toMatch(/SEARCH r USING INDEX rows_key_job \(row_key=\?\)/);
        expect(plan).toMatch(/SEARCH j USING INTEGER PRIMARY KEY \(rowid=\?\)/);
        expect(plan).not.toMatch(/SCAN/);
      }
    } finally {
      ledger.close();
    }
  });
});
