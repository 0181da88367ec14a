import { readFileSync, statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { INPUT_READER, Ledger, SCHEMA_VERSION } from '../../src/ledger/index.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { STOPPED } from '../../src/pipeline/row-state.js';

const identity = { inputSha256: 'a'.repeat(64), mappingSha256: 'b'.repeat(64), environment: 'sandbox', operation: 'quote' } as const;
const newJob = {
  input_path: '/tmp/in.csv', input_sha256: identity.inputSha256, input_format: 'csv', mapping_path: 'm.yaml',
  mapping_sha256: identity.mappingSha256, environment: 'sandbox', operation: 'quote', base_url: 'http://127.0.0.1:1',
} as const;

describe('ledger', () => {
  const tmp = useTempDir();

  it('creates the file and its WAL companions with mode 0600, in WAL mode', () => {
    const path = tmp.path('l.db');
    const ledger = Ledger.open(path);
    const job = ledger.createJob(newJob);
    ledger.startRun(job.id, '{}', 'test', STOPPED);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(`${path}-wal`).mode & 0o777).toBe(0o600);
    expect(statSync(`${path}-shm`).mode & 0o777).toBe(0o600);
    expect(ledger.db.pragma('journal_mode', { simple: true })).toBe('wal');
    ledger.close();
  });

  it('refuses a ledger from a newer version and migrates nothing in it', () => {
    const path = tmp.path('newer.db');
    const db = new Database(path);
    db.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    db.close();
    expect(() => Ledger.open(path)).toThrow(/newer than this quote-batch understands/);
  });

  it('migrates a ledger of schema version 3, keeping its samples (their pace and peak unknown), recording them from then on, and indexing the keys its jobs sent', () => {
    const path = tmp.path('v3.db');
    const sample = { concurrencyLimit: 8, inFlight: 8, attempts: 40, throttled: 1, errors: 0, rowsDone: 39, latencyP50Ms: 200 };
    const first = Ledger.open(path);
    const job = first.createJob(newJob);
    const { run } = first.startRun(job.id, '{}', 'test', STOPPED);
    first.recordRunSample(run.id, { elapsedMs: 1000, ...sample });
    first.insertRows(job.id, [{ rowNumber: 1, rowKey: 'click-1', agentEmail: null, state: 'succeeded' }]);
    first.close();
    // The same file as version 3 wrote it: run_samples without pace_rate (4) nor in_flight_max, rows without request_sha256 nor rows_key_job (5), nor sent_by_job/row and runs.end_reason, retry_after_at (6), nor jobs.input_reader (7), nor run_samples.submits_answered (8), nor run_samples.announced_rate and runs.announced_json (9).
    const old = new Database(path);
    old.exec(`ALTER TABLE run_samples DROP COLUMN pace_rate; ALTER TABLE run_samples DROP COLUMN in_flight_max; ALTER TABLE rows DROP COLUMN request_sha256; DROP INDEX rows_key_job;
      DROP INDEX rows_sent_by; ALTER TABLE rows DROP COLUMN sent_by_job; ALTER TABLE rows DROP COLUMN sent_by_row; ALTER TABLE runs DROP COLUMN end_reason; ALTER TABLE runs DROP COLUMN retry_after_at;
      ALTER TABLE jobs DROP COLUMN input_reader; ALTER TABLE run_samples DROP COLUMN submits_answered;
      ALTER TABLE run_samples DROP COLUMN announced_rate; ALTER TABLE runs DROP COLUMN announced_json`);
    old.pragma('user_version = 3');
    old.close();

    const ledger = Ledger.open(path);
    expect(ledger.db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    // A job begun before version 7 keeps reading its input as it did; one begun now reads run-on quotes again.
    expect(ledger.getJob(job.id)?.input_reader).toBeNull();
    expect(ledger.createJob({ ...newJob, input_sha256: 'other' }).input_reader).toBe(INPUT_READER);
    // Rows written before the index existed are found by the next job's lookup.
    expect(ledger.sentByOtherJob(job.id + 1, newJob.environment, newJob.operation, 'click-1')).toEqual({ job_id: job.id, row_number: 1, state: 'succeeded' });
    ledger.recordRunSample(run.id, { elapsedMs: 2000, ...sample, paceRate: 38.5, inFlightMax: 9, submitsAnswered: 38, announcedRate: 39 });
    expect(ledger.db.prepare('SELECT elapsed_ms, attempts, pace_rate, in_flight_max, submits_answered, announced_rate FROM run_samples ORDER BY elapsed_ms').all()).toEqual([
      { elapsed_ms: 1000, attempts: 40, pace_rate: null, in_flight_max: null, submits_answered: null, announced_rate: null },
      { elapsed_ms: 2000, attempts: 40, pace_rate: 38.5, in_flight_max: 9, submits_answered: 38, announced_rate: 39 },
    ]);
    expect(ledger.runsOf(job.id)[0]).toMatchObject({ announced_json: null });
    ledger.close();
  });

  it('reads an older ledger through an upgraded copy (report, jobs, export), leaving the file to the older quote-batch that writes it', () => {
    const path = tmp.path('v6.db');
    const first = Ledger.open(path);
    const job = first.createJob(newJob);
    first.insertRows(job.id, [{ rowNumber: 1, rowKey: 'click-1', agentEmail: null, state: 'succeeded' }]);
    first.close();
    const old = new Database(path);
    old.exec('ALTER TABLE jobs DROP COLUMN input_reader; ALTER TABLE run_samples DROP COLUMN submits_answered; ALTER TABLE run_samples DROP COLUMN announced_rate; ALTER TABLE runs DROP COLUMN announced_json');
    old.pragma('user_version = 6');
    old.close();

    const before = readFileSync(path);
    const reader = Ledger.open(path, { readonly: true });
    try {
      expect(reader.db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
      expect(reader.getJob(job.id)?.input_reader).toBeNull();
      expect(reader.countsByState(job.id).succeeded).toBe(1);
      // A reader: it writes nothing, not even to its copy.
      expect(() => reader.db.exec('DELETE FROM rows')).toThrow(/readonly/);
    } finally {
      reader.close();
    }
    // The file is as the older version left it: it can go on writing it.
    expect(readFileSync(path).equals(before)).toBe(true);
    const check = new Database(path, { readonly: true });
    expect(check.pragma('user_version', { simple: true })).toBe(6);
    check.close();
    // A run (a writer) upgrades the file itself.
    Ledger.open(path).close();
    const upgraded = new Database(path, { readonly: true });
    expect(upgraded.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    upgraded.close();
  });

  it('finds the newest job of an identity, whatever its status', () => {
    const ledger = Ledger.open(tmp.path('l.db'));
    const older = ledger.createJob(newJob);
    expect(ledger.latestJobOf(identity)?.id).toBe(older.id);
    ledger.unlockJob(older.id);
    // --fresh: a newer job of the same identity while the older one is unfinished.
    const newer = ledger.createJob(newJob);
    ledger.setJobStatus(newer.id, 'completed');
    expect(ledger.latestJobOf(identity)?.id).toBe(newer.id);
    expect(ledger.latestJobOf(identity)?.status).toBe('completed');
    expect(ledger.latestJobOf({ ...identity, operation: 'lead' })).toBeUndefined();
    ledger.close();
  });

  it('refuses to start a run of a job another process completed, or set aside by a newer job, since it was chosen', () => {
    const path = tmp.path('race.db');
    const a = Ledger.open(path);
    const b = Ledger.open(path);
    try {
      const job = a.createJob(newJob);
      a.unlockJob(job.id);
      // b chose `job` to resume; meanwhile a completed it.
      a.setJobStatus(job.id, 'completed');
      expect(() => b.startRun(job.id, '{}', 'b', STOPPED)).toThrow(/another process completed job \d+ while this run was starting; nothing was sent/);
      expect(b.runsOf(job.id)).toEqual([]);
      // b chose an unfinished job; meanwhile a started a newer one of the same identity (--fresh).
      a.setJobStatus(job.id, 'interrupted');
      const fresh = a.createJob(newJob);
      let refusal: { code?: unknown; message?: unknown } = {};
      try {
        b.startRun(job.id, '{}', 'b', STOPPED);
      } catch (error) {
        refusal = error as typeof refusal;
      }
      expect(refusal.code).toBe('E_JOB_LOCKED');
      expect(refusal.message).toMatch(new RegExp(`another process started job ${fresh.id} for the same input \\(--fresh\\)`));
      expect(b.runsOf(job.id)).toEqual([]);
      expect(a.latestJobOf(identity)?.id).toBe(fresh.id);
      // The lock b took to look was given back: a can still run the older job's cleanup (resolve, prune).
      a.lockJob(job.id);
      // b found no job at all and creates one; meanwhile a created one, and no longer holds it.
      a.unlockJob(job.id);
      a.unlockJob(fresh.id);
      expect(() => b.createJob(newJob, { onlyIfFirst: true })).toThrow(/another process started job \d+ for the same input while this run was starting; nothing was sent/);
    } finally {
      b.close();
      a.close();
    }
  });

  it('marks a dead run crashed and turns its in_flight rows into in_doubt', () => {
    const path = tmp.path('l.db');
    const first = Ledger.open(path);
    const job = first.createJob(newJob);
    first.startRun(job.id, '{}', 'test', STOPPED);
    first.insertRows(job.id, [
      { rowNumber: 1, rowKey: 'k1', agentEmail: null, state: 'pending' },
      { rowNumber: 2, rowKey: 'k2', agentEmail: null, state: 'pending' },
    ]);
    first.markInFlight(job.id, 2, null, null);
    // The process dies without finishing its run: its connection (and lock) go away.
    first.close();
    const ledger = Ledger.open(path);
    const second = ledger.startRun(job.id, '{}', 'test', STOPPED);
    expect(second.crashedRuns).toBe(1);
    expect(second.newlyInDoubt).toBe(1);
    expect(ledger.countsByState(job.id)).toMatchObject({ pending: 1, in_doubt: 1, in_flight: 0 });
    expect(ledger.runsOf(job.id).map((r) => r.status)).toEqual(['crashed', 'running']);
    ledger.close();
  });

  it('puts a row refused on a resend back in doubt with the reason it was in doubt, and counts the refusal', () => {
    const ledger = Ledger.open(tmp.path('l.db'));
    const job = ledger.createJob(newJob);
    const { run } = ledger.startRun(job.id, '{}', 'test', STOPPED);
    ledger.insertRows(job.id, [{ rowNumber: 1, rowKey: 'k1', agentEmail: null, state: 'pending' }]);
    ledger.markInFlight(job.id, 1, null, null);
    ledger.recordOutcome(job.id, run.id, 1, { state: 'in_doubt', attempts: 1, errorCode: 'ETIMEDOUT', errorMessage: 'time-out after sending' }, []);
    // --resend-in-doubt: marked again, answered 429, to be sent again after its Retry-After.
    ledger.markInFlight(job.id, 1, null, null);
    const refusal = { kind: 'quote', startedAt: new Date().toISOString(), durationMs: 3, httpStatus: 429, errorCode: 'rate_limited', outcome: 'retryable' } as const;
    ledger.putBack(job.id, run.id, 1, 'in_doubt', [refusal]);
    const row = ledger.db.prepare('SELECT state, attempts, error_code, error_message FROM rows WHERE job_id = ? AND row_number = 1').get(job.id);
    expect(row).toEqual({ state: 'in_doubt', attempts: 2, error_code: 'ETIMEDOUT', error_message: 'time-out after sending' });
    const attempts = ledger.db.prepare('SELECT http_status FROM attempts WHERE job_id = ? AND row_number = 1').all(job.id);
    expect(attempts).toEqual([{ http_status: 429 }]);
    ledger.close();
  });

  it('keeps one byte per row for resume and reports states by number', () => {
    const ledger = Ledger.open(tmp.path('l.db'));
    const job = ledger.createJob(newJob);
    ledger.insertRows(job.id, [
      { rowNumber: 1, rowKey: 'a', agentEmail: null, state: 'invalid' },
      { rowNumber: 3, rowKey: 'b', agentEmail: null, state: 'pending' },
    ]);
    const states = ledger.rowStates(job.id);
    expect(states.length).toBe(4);
    expect([states[1], states[2], states[3]]).toEqual([6, 0, 1]); // invalid is ROW_STATES[5], pending [0]
    expect(ledger.hasRowKey(job.id, 'b')).toBe(true);
    expect(ledger.hasRowKey(job.id, 'a')).toBe(false); // an invalid row's key does not make later rows duplicates
    ledger.close();
  });
});
