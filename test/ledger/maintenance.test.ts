import { existsSync } from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { isQuoteBatchError } from '../../src/errors.js';
import { jobLockPath, Ledger, pruneJobs, resolveInDoubt, vacuumLedger } from '../../src/ledger/index.js';
import type { RowState } from '../../src/ledger/index.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { startRunInChild } from './_child.js';
import { STOPPED, resolveChanges } from '../../src/pipeline/row-state.js';

const newJob = {
  input_path: '/tmp/in.csv', input_sha256: 'a'.repeat(64), input_format: 'csv', mapping_path: 'm.yaml',
  mapping_sha256: 'b'.repeat(64), environment: 'sandbox', operation: 'quote', base_url: null,
} as const;

/** A job of `states.length` rows (row n in states[n-1]) read to the end by one finished run. */
function makeJob(ledger: Ledger, states: readonly RowState[], inputSha = 'a'): number {
  const job = ledger.createJob({ ...newJob, input_sha256: inputSha.repeat(64) });
  const { run } = ledger.startRun(job.id, '{}', 'test', STOPPED);
  ledger.insertRows(job.id, states.map((state, i) => ({ rowNumber: i + 1, rowKey: `k${i + 1}`, agentEmail: null, state })));
  ledger.recordAttempts(job.id, run.id, 1, [{ kind: 'quote', startedAt: new Date().toISOString(), durationMs: 5, httpStatus: null, errorCode: 'ETIMEDOUT', outcome: 'in_doubt' }], null);
  ledger.setTotalRows(job.id, states.length);
  ledger.setJobStatus(job.id, states.every((s) => ['succeeded', 'rejected', 'invalid'].includes(s)) ? 'completed' : 'interrupted');
  ledger.finishRun(run.id, 'completed');
  return job.id;
}

function errorOf(fn: () => unknown): { code: string; message: string } | undefined {
  try {
    fn();
  } catch (error) {
    if (isQuoteBatchError(error)) return { code: error.code, message: error.message };
    throw error;
  }
  return undefined;
}

describe('resolve', () => {
  const tmp = useTempDir();

  it('resolved pending, a row reopens only the first of the rows of another job that share its key: the others repeat it (else the lead is sent twice)', () => {
    const ledger = Ledger.open(tmp.path('l.db'));
    const one = makeJob(ledger, ['in_doubt'], 'a');
    // Job 2's rows 1 and 3 carry job 1's lead (key k1), both recorded duplicate on job 1's word.
    const two = ledger.createJob({ ...newJob, input_sha256: 'e'.repeat(64) }).id;
    ledger.insertRows(two, [1, 2, 3].map((n) => ({ rowNumber: n, rowKey: n === 2 ? 'other' : 'k1', agentEmail: null, state: 'pending' as const })));
    ledger.unlockJob(two);
    const dup = { state: 'duplicate' as const, attempts: 0, errorCode: 'sent_by_other_job', errorMessage: 'sent before', sentBy: { job_id: one, row_number: 1 } };
    ledger.recordOutcome(two, 1, 1, dup, []);
    ledger.recordOutcome(two, 1, 3, dup, []);
    const result = resolveInDoubt(ledger, { jobId: one, rows: [1], changes: resolveChanges('pending'), note: null });
    expect(result).toMatchObject({ reopened: [{ jobId: two, rows: [1] }], notReopened: [] });
    expect(ledger.db.prepare('SELECT row_number, state, error_code, error_message, sent_by_job FROM rows WHERE job_id = ? ORDER BY row_number').all(two)).toEqual([
      { row_number: 1, state: 'pending', error_code: null, error_message: null, sent_by_job: null },
      { row_number: 2, state: 'pending', error_code: null, error_message: null, sent_by_job: null },
      { row_number: 3, state: 'duplicate', error_code: 'duplicate_row_key', error_message: 'row key "k1" already appeared earlier in this job', sent_by_job: null },
    ]);
    ledger.close();
  });

  it('resolved pending, a row reopens the rows other jobs recorded duplicate on its word (and on theirs), in jobs not running now', () => {
    const ledger = Ledger.open(tmp.path('l.db'));
    const one = makeJob(ledger, ['succeeded', 'in_doubt', 'in_doubt'], 'a');
    // Job 2 recorded rows 2 and 3 duplicate on job 1's word; job 3 its row 2 on job 2's (a chain).
    const dup = (job: number, row: number) => ({ state: 'duplicate' as const, attempts: 0, errorCode: 'sent_by_other_job', errorMessage: 'sent before', sentBy: { job_id: job, row_number: row } });
    const two = makeJob(ledger, ['succeeded', 'succeeded', 'succeeded'], 'b');
    ledger.recordOutcome(two, 1, 2, dup(one, 2), []);
    ledger.recordOutcome(two, 1, 3, dup(one, 3), []);
    ledger.db.prepare('UPDATE jobs SET resume_row = 4 WHERE id = ?').run(two);
    const three = makeJob(ledger, ['succeeded', 'succeeded'], 'c');
    ledger.recordOutcome(three, 1, 2, dup(two, 2), []);
    // A fourth job, running in another process now, recorded its row 1 on job 1's row 2 too.
    const four = makeJob(ledger, ['succeeded'], 'd');
    ledger.recordOutcome(four, 1, 1, dup(one, 2), []);
    const other = Ledger.open(tmp.path('l.db'));
    other.lockJob(four);
    try {
      const result = resolveInDoubt(ledger, { jobId: one, rows: [2], changes: resolveChanges('pending'), note: 'not received' });
      expect(result).toMatchObject({ resolved: [2], reopened: [{ jobId: two, rows: [2] }, { jobId: three, rows: [2] }], notReopened: [{ jobId: four, rows: [1] }] });
    } finally {
      other.close();
    }
    expect(ledger.countsByState(two)).toMatchObject({ pending: 1, duplicate: 1, succeeded: 1 });
    expect(ledger.countsByState(three)).toMatchObject({ pending: 1, succeeded: 1 });
    expect(ledger.countsByState(four)).toMatchObject({ duplicate: 1 });
    // Not completed any more, read from the start again; each reopening recorded.
    expect(ledger.getJob(two)).toMatchObject({ status: 'interrupted', resume_row: null });
    expect(ledger.getJob(three)?.status).toBe('interrupted');
    expect(ledger.db.prepare(`SELECT job_id, row_number, from_state, to_state FROM resolutions WHERE job_id != ? ORDER BY job_id`).all(one)).toEqual([
      { job_id: two, row_number: 2, from_state: 'duplicate', to_state: 'pending' },
      { job_id: three, row_number: 2, from_state: 'duplicate', to_state: 'pending' },
    ]);
    // The rows that refer to a row are found through their index, not by reading every row of the ledger.
    const plan = JSON.stringify(ledger.db.prepare(`EXPLAIN QUERY PLAN SELECT job_id, row_number FROM rows WHERE sent_by_job = ? AND sent_by_row = ? AND state = 'duplicate' AND error_code = 'sent_by_other_job'`).all(1, 2));
    expect(plan).toContain('USING INDEX rows_sent_by');
    // Resolved succeeded, a row reopens nothing: the lead was sent.
    expect(resolveInDoubt(ledger, { jobId: one, rows: [3], changes: resolveChanges('succeeded'), note: null })).toMatchObject({ reopened: [], notReopened: [] });
    expect(ledger.countsByState(two)).toMatchObject({ duplicate: 1 });
    ledger.close();
  });

  it('settles rows in doubt, records each with its note, and completes the job when every row is final', () => {
    const ledger = Ledger.open(tmp.path('l.db'));
    const jobId = makeJob(ledger, ['succeeded', 'in_doubt', 'in_doubt', 'rejected']);
    const result = resolveInDoubt(ledger, { jobId, rows: 'all-in-doubt', changes: resolveChanges('succeeded'), note: 'partner confirmed, ticket 42' });
    expect(result).toEqual({ resolved: [2, 3], refused: [], crashedRuns: 0, newlyInDoubt: 0, jobStatus: 'completed', unfinished: 0, inDoubt: 0, readToEnd: true, reopened: [], notReopened: [] });
    expect(ledger.countsByState(jobId)).toMatchObject({ succeeded: 3, in_doubt: 0, rejected: 1 });
    const resolutions = ledger.db.prepare('SELECT row_number, from_state, to_state, note FROM resolutions ORDER BY row_number').all();
    expect(resolutions).toEqual([
      { row_number: 2, from_state: 'in_doubt', to_state: 'succeeded', note: 'partner confirmed, ticket 42' },
      { row_number: 3, from_state: 'in_doubt', to_state: 'succeeded', note: 'partner confirmed, ticket 42' },
    ]);
    expect(ledger.getJob(jobId)?.finished_at).not.toBeNull();
    ledger.close();
  });

  it('changes nothing when a row named is not in doubt, and says which', () => {
    const ledger = Ledger.open(tmp.path('l.db'));
    const jobId = makeJob(ledger, ['succeeded', 'in_doubt', 'failed']);
    const result = resolveInDoubt(ledger, { jobId, rows: [2, 1, 3, 9], changes: resolveChanges('pending'), note: null });
    expect(result.resolved).toEqual([]);
    expect(result.refused).toEqual([{ row: 1, state: 'succeeded' }, { row: 3, state: 'failed' }, { row: 9, state: null }]);
    expect(ledger.countsByState(jobId)).toMatchObject({ in_doubt: 1, failed: 1, succeeded: 1 });
    expect(ledger.db.prepare('SELECT COUNT(*) FROM resolutions').pluck().get()).toBe(0);
    ledger.close();
  });

  it('a run a dead process left running is crashed, ended at its last sign of life (latest sample or heartbeat), its rows in flight in doubt with the request counted', () => {
    const ledger = Ledger.open(tmp.path('l.db'));
    const jobId = makeJob(ledger, ['succeeded', 'in_doubt', 'in_flight']);
    // What kill -9 leaves: the run `running` (no lock held now), a heartbeat and, later, samples.
    ledger.db.prepare(`UPDATE runs SET status = 'running', finished_at = NULL, heartbeat_at = '2026-11-26T01:00:00.000Z' WHERE job_id = ?`).run(jobId);
    const runId = ledger.db.prepare('SELECT id FROM runs WHERE job_id = ?').pluck().get(jobId) as number;
    for (const [elapsed, at] of [[1000, '2026-11-26T01:00:01.000Z'], [7000, '2026-11-26T01:00:07.250Z']] as const) {
      ledger.db.prepare(`INSERT INTO run_samples (run_id, elapsed_ms, at, in_flight, attempts, throttled, errors, rows_done) VALUES (?, ?, ?, 1, 1, 0, 0, 1)`).run(runId, elapsed, at);
    }
    ledger.db.prepare(`UPDATE rows SET updated_at = '2026-11-26T01:00:05.000Z' WHERE job_id = ? AND row_number = 3`).run(jobId);
    const result = resolveInDoubt(ledger, { jobId, rows: [2], changes: resolveChanges('succeeded'), note: null });
    expect(result).toMatchObject({ crashedRuns: 1, newlyInDoubt: 1, resolved: [2], inDoubt: 1 });
    expect(ledger.db.prepare('SELECT status, finished_at FROM runs WHERE id = ?').get(runId)).toEqual({ status: 'crashed', finished_at: '2026-11-26T01:00:07.250Z' });
    expect(ledger.db.prepare('SELECT state, attempts FROM rows WHERE job_id = ? AND row_number = 3').get(jobId)).toEqual({ state: 'in_doubt', attempts: 1 });
    // That request is in attempts too, as every attempt is: in doubt, from its mark to the run's end.
    expect(ledger.db.prepare(`SELECT run_id, kind, http_status, error_code, outcome, duration_ms FROM attempts WHERE job_id = ? AND row_number = 3`).all(jobId))
      .toEqual([{ run_id: runId, kind: 'quote', http_status: null, error_code: 'process_stopped', outcome: 'in_doubt', duration_ms: expect.closeTo(2250, 0) }]);

    ledger.close();
  });

  it('a row a failed run left in flight: its attempt is recorded in that run (not in an older crashed one), and counted', () => {
    const ledger = Ledger.open(tmp.path('l.db'));
    const jobId = makeJob(ledger, ['succeeded', 'in_flight']);
    const run = (id: number, status: string, started: string, finished: string | null): void => {
      ledger.db.prepare(`INSERT INTO runs (id, job_id, started_at, finished_at, status, options_json, tool_version) VALUES (?, ?, ?, ?, ?, '{}', 'test')`)
        .run(id, jobId, started, finished, status);
    };
    run(50, 'crashed', '2026-11-26T01:00:00.000Z', '2026-11-26T01:00:09.000Z');
    run(51, 'failed', '2026-11-26T02:00:00.000Z', '2026-11-26T02:00:04.000Z');
    ledger.db.prepare(`UPDATE rows SET updated_at = '2026-11-26T02:00:03.500Z' WHERE job_id = ? AND row_number = 2`).run(jobId);
    const result = resolveInDoubt(ledger, { jobId, rows: [1], changes: resolveChanges('succeeded'), note: null });
    expect(result).toMatchObject({ crashedRuns: 0, newlyInDoubt: 1, resolved: [] });
    expect(ledger.db.prepare(`SELECT run_id, error_code, duration_ms FROM attempts WHERE job_id = ? AND row_number = 2`).all(jobId))
      .toEqual([{ run_id: 51, error_code: 'process_stopped', duration_ms: expect.closeTo(500, 0) }]);
    expect(ledger.db.prepare('SELECT state, attempts FROM rows WHERE job_id = ? AND row_number = 2').get(jobId)).toEqual({ state: 'in_doubt', attempts: 1 });
    ledger.close();
  });

  it('sends a row back to pending and leaves the job unfinished', () => {
    const ledger = Ledger.open(tmp.path('l.db'));
    const jobId = makeJob(ledger, ['succeeded', 'in_doubt']);
    expect(resolveInDoubt(ledger, { jobId, rows: [2], changes: resolveChanges('pending'), note: 'not at the partner' })).toEqual({
      resolved: [2], refused: [], crashedRuns: 0, newlyInDoubt: 0, jobStatus: 'interrupted', unfinished: 1, inDoubt: 0, readToEnd: true, reopened: [], notReopened: [],
    });
    expect(ledger.countsByState(jobId).pending).toBe(1);
    ledger.close();
  });

  it('keeps the resume point unless it lies past a row sent back to pending', () => {
    const ledger = Ledger.open(tmp.path('l.db'));
    const jobId = makeJob(ledger, ['succeeded', 'in_doubt', 'in_doubt', 'succeeded']);
    ledger.setResumePoint(jobId, { rowNumber: 2, offset: 40, line: 3 });
    resolveInDoubt(ledger, { jobId, rows: [3], changes: resolveChanges('pending'), note: null });
    expect(ledger.getJob(jobId)?.resume_row).toBe(2);
    ledger.setResumePoint(jobId, { rowNumber: 4, offset: 90, line: 5 }); // past row 2, which is in doubt
    resolveInDoubt(ledger, { jobId, rows: [2], changes: resolveChanges('pending'), note: null });
    expect(ledger.getJob(jobId)).toMatchObject({ resume_row: null, resume_offset: null, resume_line: null });
    ledger.close();
  });

  it('does not complete a job whose file was never read to the end', () => {
    const ledger = Ledger.open(tmp.path('l.db'));
    const jobId = makeJob(ledger, ['succeeded', 'in_doubt']);
    ledger.db.prepare('UPDATE jobs SET total_rows = NULL WHERE id = ?').run(jobId); // e.g. a --limit run
    expect(resolveInDoubt(ledger, { jobId, rows: 'all-in-doubt', changes: resolveChanges('succeeded'), note: null }).jobStatus).toBe('interrupted');
    ledger.close();
  });

  it('after a run was killed (kill -9), settles its run as crashed and resolves the row it left in flight', async () => {
    const path = tmp.path('l.db');
    const ledger = Ledger.open(path);
    const jobId = makeJob(ledger, ['succeeded', 'pending', 'in_doubt']);
    // As a run does right before the request leaves: the row is in flight while the process lives.
    const child = await startRunInChild(path, jobId, `ledger.markInFlight(${jobId}, 2, null, null);`);
    try {
      expect(errorOf(() => resolveInDoubt(ledger, { jobId, rows: [2], changes: resolveChanges('succeeded'), note: null }))?.code).toBe('E_JOB_LOCKED');
    } finally {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    }
    expect(ledger.countsByState(jobId)).toMatchObject({ in_flight: 1, in_doubt: 1 });

    const result = resolveInDoubt(ledger, { jobId, rows: [2], changes: resolveChanges('succeeded'), note: 'in the partner portal' });
    expect(result).toMatchObject({ resolved: [2], refused: [], crashedRuns: 1, newlyInDoubt: 1, jobStatus: 'interrupted', unfinished: 1 });
    expect(ledger.runsOf(jobId).map((r) => r.status)).toEqual(['completed', 'crashed']);
    expect(ledger.countsByState(jobId)).toMatchObject({ succeeded: 2, in_flight: 0, in_doubt: 1 });
    expect(ledger.getJob(jobId)?.status).toBe('interrupted');
    // Nothing more to settle: a second resolve finds no crashed run.
    expect(resolveInDoubt(ledger, { jobId, rows: 'all-in-doubt', changes: resolveChanges('succeeded'), note: null })).toMatchObject({ resolved: [3], crashedRuns: 0, jobStatus: 'completed' });
    ledger.close();
  });

  it('refuses while another process holds the job', () => {
    const path = tmp.path('l.db');
    const holder = Ledger.open(path);
    const jobId = makeJob(holder, ['in_doubt']);
    holder.lockJob(jobId);
    const ledger = Ledger.open(path);
    expect(errorOf(() => resolveInDoubt(ledger, { jobId, rows: [1], changes: resolveChanges('succeeded'), note: null }))?.code).toBe('E_JOB_LOCKED');
    expect(ledger.countsByState(jobId).in_doubt).toBe(1);
    holder.close();
    ledger.close();
  });
});

describe('prune', () => {
  const tmp = useTempDir();
  const DAY = 86_400_000;
  const later = (days: number): Date => new Date(Date.now() + days * DAY);

  it('drops completed jobs older than the cut-off with everything of theirs, and their lock files', () => {
    const path = tmp.path('l.db');
    const ledger = Ledger.open(path);
    const done = makeJob(ledger, ['succeeded', 'rejected'], 'a');
    const open = makeJob(ledger, ['succeeded', 'in_doubt'], 'c');
    resolveInDoubt(ledger, { jobId: open, rows: [2], changes: resolveChanges('pending'), note: 'n' });
    ledger.db.prepare(`INSERT INTO run_samples (run_id, elapsed_ms, at, in_flight, attempts, throttled, errors, rows_done)
      SELECT id, 1000, started_at, 0, 1, 0, 0, 1 FROM runs`).run();
    ledger.upsertAgent({ environment: 'sandbox', email: 'a@example.com', is_valid: 1, agent_id: 'A', message: null, checked_at: 'x', job_id: done });

    expect(pruneJobs(ledger, { olderThanMs: 30 * DAY, includeUnfinished: false, dryRun: false, now: later(29) }).dropped).toEqual([]);
    const dry = pruneJobs(ledger, { olderThanMs: 30 * DAY, includeUnfinished: false, dryRun: true, now: later(31) });
    expect(dry.dropped.map((j) => j.id)).toEqual([done]);
    expect(ledger.getJob(done)).toBeDefined();

    const result = pruneJobs(ledger, { olderThanMs: 30 * DAY, includeUnfinished: false, dryRun: false, now: later(31) });
    expect(result.dropped.map((j) => [j.id, j.status, j.rows])).toEqual([[done, 'completed', 2]]);
    expect(ledger.getJob(done)).toBeUndefined();
    expect(ledger.getJob(open)).toBeDefined();
    for (const table of ['rows', 'attempts', 'runs', 'resolutions']) {
      expect(ledger.db.prepare(`SELECT COUNT(*) FROM ${table} WHERE job_id = ?`).pluck().get(done), table).toBe(0);
      expect(ledger.db.prepare(`SELECT COUNT(*) FROM ${table} WHERE job_id = ?`).pluck().get(open), table).toBeGreaterThan(0);
    }
    expect(ledger.db.prepare('SELECT COUNT(*) FROM run_samples').pluck().get()).toBe(1);
    expect(ledger.db.prepare('SELECT job_id FROM agents').pluck().get()).toBeNull();
    expect(existsSync(jobLockPath(path, done))).toBe(false);
    expect(existsSync(jobLockPath(path, open))).toBe(true);
    expect(ledger.db.pragma('foreign_key_check')).toEqual([]);

    const all = pruneJobs(ledger, { olderThanMs: 30 * DAY, includeUnfinished: true, dryRun: false, now: later(31) });
    expect(all.dropped.map((j) => j.id)).toEqual([open]);
    ledger.close();
  });

  it('keeps a completed job while an older unfinished job of the same identity stays (it would be resumed instead)', () => {
    const ledger = Ledger.open(tmp.path('fresh.db'));
    const older = makeJob(ledger, ['succeeded', 'in_doubt'], 'e'); // interrupted
    const fresh = makeJob(ledger, ['succeeded', 'succeeded'], 'e'); // the --fresh job, completed
    const other = makeJob(ledger, ['succeeded'], 'f');
    const kept = pruneJobs(ledger, { olderThanMs: 30 * DAY, includeUnfinished: false, dryRun: false, now: later(31) });
    expect(kept.dropped.map((j) => j.id)).toEqual([other]);
    expect(kept.keptForOlder.map((j) => j.id)).toEqual([fresh]);
    expect(ledger.getJob(fresh)?.status).toBe('completed');
    // With --include-unfinished both go.
    const both = pruneJobs(ledger, { olderThanMs: 30 * DAY, includeUnfinished: true, dryRun: false, now: later(31) });
    expect(both.dropped.map((j) => j.id)).toEqual([older, fresh]);
    expect(both.keptForOlder).toEqual([]);
    ledger.close();
  });

  it('deletes a big job in batches: another connection writes between them, none held waiting', () => {
    const path = tmp.path('l.db');
    const ledger = Ledger.open(path);
    const big = makeJob(ledger, Array.from({ length: 1000 }, () => 'succeeded' as const), 'a');
    // A writer that never waits: it fails at once (SQLITE_BUSY) while prune holds a write transaction.
    const writer = new Database(path, { timeout: 0 });
    const write = writer.prepare(`INSERT INTO agents (environment, email, is_valid, checked_at) VALUES ('sandbox', ?, 1, 'x')`);
    const batches: number[] = [];
    const result = pruneJobs(ledger, {
      olderThanMs: DAY, includeUnfinished: false, dryRun: false, now: later(2), batchRows: 100,
      onBatch: ({ jobId, deleted }) => {
        expect(jobId).toBe(big);
        write.run(`writer-${batches.length}@example.com`);
        batches.push(deleted);
      },
    });
    writer.close();
    expect(result.dropped.map((j) => j.id)).toEqual([big]);
    expect(batches.length).toBeGreaterThanOrEqual(10);
    expect(batches[batches.length - 1]).toBe(1001); // 1000 rows and the run's attempt
    expect(ledger.db.prepare('SELECT COUNT(*) FROM agents').pluck().get()).toBe(batches.length);
    expect(ledger.db.prepare('SELECT COUNT(*) FROM rows').pluck().get()).toBe(0);
    expect(ledger.getJob(big)).toBeUndefined();
    ledger.close();
  });

  it('reads each job again under its lock: one run again while the prune worked on another is kept', () => {
    const ledger = Ledger.open(tmp.path('stale.db'));
    const first = makeJob(ledger, Array.from({ length: 300 }, () => 'succeeded' as const), 'g');
    const second = makeJob(ledger, ['succeeded'], 'h');
    const now = later(31);
    let resumed = false;
    const result = pruneJobs(ledger, {
      olderThanMs: 30 * DAY, includeUnfinished: false, dryRun: false, now, batchRows: 100,
      onBatch: () => {
        if (resumed) return;
        resumed = true; // meanwhile, a run of the second job (at the prune's "now")
        ledger.db.prepare(`INSERT INTO runs (job_id, started_at, finished_at, status, options_json, tool_version)
          VALUES (?, ?, ?, 'completed', '{}', 'test')`).run(second, now.toISOString(), now.toISOString());
      },
    });
    expect(result.dropped.map((j) => j.id)).toEqual([first]);
    expect(ledger.getJob(second)).toBeDefined();
    ledger.close();
  });

  it('leaves a job another process holds, and vacuums only when no job is held elsewhere', () => {
    const path = tmp.path('l.db');
    const ledger = Ledger.open(path);
    const a = makeJob(ledger, ['succeeded'], 'a');
    const b = makeJob(ledger, ['in_doubt'], 'c');
    const other = Ledger.open(path);
    other.lockJob(a);
    other.lockJob(b);
    const result = pruneJobs(ledger, { olderThanMs: 1, includeUnfinished: false, dryRun: false, now: later(1) });
    expect(result.dropped).toEqual([]);
    expect(result.inUse.map((j) => j.id)).toEqual([a]);
    expect(vacuumLedger(ledger).skippedForJobs).toEqual([b]);
    other.close();

    ledger.db.prepare('UPDATE rows SET response_json = ?').run('x'.repeat(1 << 20));
    ledger.db.prepare('UPDATE rows SET response_json = NULL').run();
    const vacuum = vacuumLedger(ledger);
    expect(vacuum.skippedForJobs).toEqual([]);
    expect(vacuum.bytesAfter).toBeLessThan(vacuum.bytesBefore);
    ledger.close();
  });
});
