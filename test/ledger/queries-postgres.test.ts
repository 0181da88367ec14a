/**
 * The ledger's queries (`src/ledger/queries/`) run on PostgreSQL as on SQLite: one ledger of many
 * cases (the report fixtures, rows another job dealt with, unreadable answers, resolutions, a run's
 * fractional samples, paces) is copied from a SQLite file into a PostgreSQL ledger on a real server
 * (test/helpers/postgres.ts), and every read `report`, `export`, `jobs` and the run make gives the
 * same figures, in the same order, on both: the report's JSON byte for byte.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { groupRowErrors } from '../../src/error-groups.js';
import {
  countRowsWithoutPosition, errorRowBatches, readJobFiles, readRowsByOtherJobs, sourceRowBatches, type RowState, type SqlDb,
} from '../../src/ledger/index.js';
import { PgLedger } from '../../src/ledger/postgres/ledger.js';
import { readStartingLimit } from '../../src/pipeline/run-job.js';
import { buildReport, exportRows, listJobs, readProblemRows, resolveJobId, type Report } from '../../src/report/index.js';
import { buildEmptyJob } from '../fixtures/report/empty-job.js';
import { buildHostileData } from '../fixtures/report/hostile-data.js';
import { buildMixedJob } from '../fixtures/report/mixed-job.js';
import { copySqliteLedger, createTestDatabase } from '../helpers/postgres.js';
import { createTempLedger, insertAttempt, insertJob, insertRow, insertRun, insertSample, iso, type TempLedger } from '../report/_ledger.js';

/** Cases the report fixtures lack: rows another job sent or had rejected, unreadable answers, a resolution, fractional samples. */
function addCases(db: TempLedger['db'], mixedJobId: number): number {
  const t0 = Date.now() - 120_000;
  const jobId = insertJob(db, { status: 'completed', total_rows: 10, created_at: iso(t0), finished_at: iso(t0 + 20_000), base_url: 'http://127.0.0.1:4010/' });
  const run = insertRun(db, {
    job_id: jobId, started_at: iso(t0), finished_at: iso(t0 + 20_000), status: 'completed',
    options_json: '{"concurrency":12,"adaptive":true,"limit":8}',
  });
  const inDoubtThere = db.prepare(`SELECT row_number FROM rows WHERE job_id = ? AND state = 'in_doubt' ORDER BY row_number LIMIT 2`).pluck().all(mixedJobId) as number[];
  const succeededThere = db.prepare(`SELECT row_number FROM rows WHERE job_id = ? AND state = 'succeeded' ORDER BY row_number LIMIT 1`).pluck().get(mixedJobId) as number;
  const sentBy = db.prepare('UPDATE rows SET sent_by_job = ?, sent_by_row = ? WHERE job_id = ? AND row_number = ?');
  [...inDoubtThere, succeededThere].forEach((there, i) => {
    insertRow(db, { job_id: jobId, row_number: i + 1, row_key: `k${i}`, state: 'duplicate', error_code: 'sent_by_other_job', error_message: `sent by job ${mixedJobId}`, updated_at: iso(t0 + 1000) });
    sentBy.run(mixedJobId, there, jobId, i + 1);
  });
  insertRow(db, { job_id: jobId, row_number: 4, row_key: 'k4', state: 'rejected', attempts: 0, http_status: 400, error_code: 'state_not_supported', error_message: 'State AK is not supported.', updated_at: iso(t0 + 2000) });
  const issues = db.prepare('UPDATE rows SET input_issues_json = ? WHERE job_id = ? AND row_number = ?');
  for (const [n, json] of [
    [5, JSON.stringify([{ severity: 'warning', type: 'unreadable_answer', message: 'the answer was not JSON' }])],
    [6, JSON.stringify([{ path: 'a', severity: 'info', type: 'normalized', message: 'said "type":"unreadable_answer" in text' }])],
    [7, JSON.stringify([{ path: 'b', severity: 'info', type: 'unreadableXanswer', message: 'm' }])],
  ] as const) {
    insertRow(db, { job_id: jobId, row_number: n, row_key: `k${n}`, state: 'succeeded', attempts: 1, http_status: 200, total_premium: 900 + n, updated_at: iso(t0 + 3000 + n) });
    issues.run(json, jobId, n);
    insertAttempt(db, { job_id: jobId, row_number: n, run_id: run, kind: 'quote', started_at: iso(t0 + 3000), duration_ms: 120.5 + n, http_status: 200, outcome: 'ok' });
  }
  insertRow(db, { job_id: jobId, row_number: 8, row_key: 'k8', state: 'succeeded', attempts: 1, updated_at: iso(t0 + 9000) });
  // Ties that only the order of nulls breaks: failed attempts as many with and without a status, an agent with and without an e-mail.
  for (const [status, code] of [[null, 'ECONNRESET'], [503, null], [null, 'ECONNRESET'], [503, null]] as const) {
    insertAttempt(db, { job_id: jobId, row_number: 5, run_id: run, kind: 'quote', started_at: iso(t0 + 2500), duration_ms: 80, http_status: status, error_code: code, outcome: 'retryable' });
  }
  insertRow(db, { job_id: jobId, row_number: 9, row_key: 'k9', agent_email: 'zed@example.test', state: 'agent_invalid', updated_at: iso(t0 + 9500) });
  insertRow(db, { job_id: jobId, row_number: 10, row_key: 'k10', agent_email: null, state: 'agent_invalid', updated_at: iso(t0 + 9600) });
  db.prepare(`INSERT INTO resolutions (job_id, row_number, from_state, to_state, note, resolved_at) VALUES (?, 8, 'in_doubt', 'succeeded', 'ticket 42', ?)`).run(jobId, iso(t0 + 9000));
  for (let s = 1; s <= 15; s += 1) {
    insertSample(db, {
      run_id: run, elapsed_ms: s * 1000 + 7, at: iso(t0 + s * 1000 + 7), concurrency_limit: 4 + s / 3, in_flight: 2.37 + s / 10,
      attempts: 3, throttled: s % 5 === 0 ? 1 : 0, errors: 0, rows_done: 1, latency_p50_ms: 101.5, submits_answered: 2,
    });
  }
  db.prepare('UPDATE run_samples SET pace_rate = 7.25 + (elapsed_ms / 1000) % 2 WHERE run_id = ? AND elapsed_ms > 5000').run(run);
  return jobId;
}

async function collect<T>(batches: AsyncIterable<readonly T[]>): Promise<T[]> {
  const all: T[] = [];
  for await (const batch of batches) all.push(...batch);
  return all;
}

async function exported(db: SqlDb, jobId: number, format: 'csv' | 'ndjson', states?: RowState[]): Promise<string> {
  let text = '';
  await exportRows(db, { jobId, format, states }, (chunk) => {
    text += chunk;
  });
  return text;
}

describe('the ledger\'s queries on PostgreSQL and on SQLite', () => {
  let t: TempLedger;
  let pgLedger: PgLedger;
  let jobs: number[];
  const now = new Date();
  beforeAll(async () => {
    t = createTempLedger();
    const mixed = buildMixedJob(t.db);
    buildHostileData(t.db, 'http://127.0.0.1:9/probe');
    buildEmptyJob(t.db);
    addCases(t.db, mixed.jobId);
    jobs = t.db.prepare('SELECT id FROM jobs ORDER BY id').pluck().all() as number[];
    const url = await createTestDatabase(inject('postgresUrl'));
    pgLedger = await PgLedger.open(url);
    await copySqliteLedger(t.db, url);
  });
  afterAll(async () => {
    await pgLedger?.close();
    t?.remove();
  });

  /** The same read on both ledgers, as JSON text (key order included). */
  const both = async (read: (db: SqlDb) => Promise<unknown>): Promise<[string, string]> =>
    [JSON.stringify(await read(t.sql)), JSON.stringify(await read(pgLedger.sql))];

  it('has every case to compare', async () => {
    expect(jobs.length).toBe(5);
    const [, byOthers] = await both((db) => readRowsByOtherJobs(db, jobs.at(-1) as number));
    expect(JSON.parse(byOthers)).toMatchObject({ sent: 3, rejected: 1, in_doubt_there: 2, in_doubt_jobs: [jobs[1]] });
  });

  it('gives the same report of every job, byte for byte', async () => {
    for (const jobId of jobs) {
      const [sqlite, postgres] = await both((db) => buildReport(db, jobId, { now: () => now }));
      expect(postgres, `job ${jobId}`).toBe(sqlite);
    }
    const report = JSON.parse((await both((db) => buildReport(db, jobs.at(-1) as number, { now: () => now })))[1]) as Report;
    expect(report.rows.unreadable_answers).toBe(1);
    expect(report.partner.settled_pace).not.toBeNull();
    expect(report.attempt_errors.map((e) => e.http_status)).toEqual([null, 503]);
    expect(report.invalid_agents.map((a) => a.email)).toEqual([null, 'zed@example.test']);
  });

  it('lists the same jobs, resolves the same ids, finds the same files', async () => {
    const [a, b] = await both((db) => listJobs(db, now.getTime()));
    expect(b).toBe(a);
    for (const id of [undefined, ...jobs]) {
      const [x, y] = await both((db) => resolveJobId(db, id, 'ledger'));
      expect(y).toBe(x);
    }
    await expect(resolveJobId(pgLedger.sql, 999, 'ledger')).rejects.toThrow(/job 999 is not in ledger/);
    const [f, g] = await both((db) => readJobFiles(db));
    expect(g).toBe(f);
  });

  it('exports the same rows, groups the same errors, finds the same problem rows and positions', async () => {
    for (const jobId of jobs) {
      for (const [format, states] of [['csv', undefined], ['ndjson', undefined], ['csv', ['failed', 'in_doubt', 'rejected']]] as const) {
        const [a, b] = await both((db) => exported(db, jobId, format, states === undefined ? undefined : [...states]));
        expect(b, `job ${jobId} ${format} ${String(states)}`).toBe(a);
      }
      for (const read of [
        (db: SqlDb) => readProblemRows(db, jobId, 25),
        (db: SqlDb) => groupRowErrors(errorRowBatches(db, jobId), { limit: 5, samples: 2 }),
        (db: SqlDb) => countRowsWithoutPosition(db, jobId, ['rejected', 'invalid']),
        (db: SqlDb) => collect(sourceRowBatches(db, jobId)),
      ]) {
        const [a, b] = await both(read);
        expect(b, `job ${jobId}`).toBe(a);
      }
    }
  });

  it('starts the next run from the same place', async () => {
    for (const baseUrl of ['http://127.0.0.1:4010', 'http://127.0.0.1:4010/', 'http://127.0.0.1:9']) {
      const [a, b] = await both((db) => readStartingLimit(db, { environment: 'sandbox', operation: 'quote', baseUrl }));
      expect(b, baseUrl).toBe(a);
    }
  });
});
