/**
 * The PostgreSQL ledger against a real server (test/helpers/postgres.ts): its schema, the workers'
 * chunk claims under leases, and the fence on every row write.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import pg from 'pg';
import { PgLedger } from '../../src/ledger/postgres/ledger.js';
import { commitOneByOne, LEAD_LOCK_KEY, writtenByOneStatement, type FencedRowWrite } from '../../src/ledger/postgres/row-writes.js';
import type { NewRow, RowChange, SentRow } from '../../src/ledger/index.js';
import type { AttemptRecord } from '../../src/partner/types.js';
import { resolveChanges, STOPPED } from '../../src/pipeline/row-state.js';
import { resolveInDoubtPg } from '../../src/ledger/postgres/maintenance.js';
import { createTestDatabase, TEST_PG_PASSWORD } from '../helpers/postgres.js';

const job = {
  input_path: '/in/leads.csv', input_sha256: 'a'.repeat(64), input_format: 'csv', mapping_path: 'm.yaml',
  mapping_sha256: 'b'.repeat(64), environment: 'uat', operation: 'quote', base_url: 'https://partner.example',
} as const;

const rows = (from: number, n: number): NewRow[] => Array.from({ length: n }, (_, i) => ({ rowNumber: from + i, rowKey: `k${from + i}`, agentEmail: null, state: 'pending' }));

describe('the PostgreSQL ledger', () => {
  let url: string;
  beforeAll(async () => {
    url = await createTestDatabase(inject('postgresUrl'));
  });
  const opened: PgLedger[] = [];
  const open = async (): Promise<PgLedger> => {
    const ledger = await PgLedger.open(url);
    opened.push(ledger);
    return ledger;
  };
  afterAll(async () => {
    for (const l of opened) await l.close();
  });

  it('creates its schema once, whoever gets there first, and shows no password', async () => {
    const ledgers = await Promise.all([open(), open(), open()]);
    expect(ledgers[0]?.path).not.toContain(TEST_PG_PASSWORD);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const tables = (await client.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = 'quote_batch' ORDER BY 1`)).rows.map((r: { table_name: string }) => r.table_name);
    await client.end();
    expect(tables).toEqual(expect.arrayContaining(['jobs', 'runs', 'rows', 'attempts', 'agents', 'resolutions', 'run_samples', 'chunks', 'job_summary', 'row_outcomes', 'schema_version']));
  });

  it('two workers join one job, claim distinct chunks, and a write fenced by a lost claim changes nothing', async () => {
    const a = await open();
    const b = await open();
    const [ja, jb] = await Promise.all([a.joinOrCreateJob(job, 3, false), b.joinOrCreateJob(job, 3, false)]);
    expect(ja.job.id).toBe(jb.job.id);
    expect([ja.created, jb.created].sort()).toEqual([false, true]);
    const jobId = ja.job.id;
    const wa = await a.startWorker(jobId, '{}', 't', 60_000);
    const wb = await b.startWorker(jobId, '{}', 't', 60_000);
    expect(wb.workers).toBe(2);
    let read = 0;
    const reader = (size: number, eofAt: number) => async (start: { rowNumber: number; offset: number; line: number }) => {
      read += 1;
      const n = Math.min(size, eofAt - start.rowNumber + 1);
      return { rows: rows(start.rowNumber, n), end: { rowNumber: start.rowNumber + n, offset: start.offset + n * 10, line: start.line + n }, eof: start.rowNumber + n > eofAt };
    };
    const [ca, cb] = await Promise.all([
      a.claimChunk(jobId, wa.run.id, [], STOPPED, reader(5, 8)),
      b.claimChunk(jobId, wb.run.id, [], STOPPED, reader(5, 8)),
    ]);
    expect(read).toBe(2);
    const chunks = [ca, cb].map((c) => [c?.firstRow, c?.lastRow]).sort((x, y) => (x[0] ?? 0) - (y[0] ?? 0));
    expect(chunks).toEqual([[1, 5], [6, 8]]);
    expect(await a.claimChunk(jobId, wa.run.id, [(ca as NonNullable<typeof ca>).claimId, (cb as NonNullable<typeof cb>).claimId], STOPPED, reader(5, 8))).toBeNull();
    const mine = ca as NonNullable<typeof ca>;
    const marked = await a.commitRowWrites(jobId, wa.run.id, [{ kind: 'mark', rowNumber: mine.firstRow, agentId: null, requestJson: null, requestSha256: null, claimId: mine.claimId }]);
    expect(marked).toEqual([{}]);
    // b cannot write a's row: its claim is not b's.
    const fenced = await b.commitRowWrites(jobId, wb.run.id, [{ kind: 'outcome', rowNumber: mine.firstRow, change: { state: 'succeeded' }, attempts: [], claimId: (cb as NonNullable<typeof cb>).claimId }]);
    expect(fenced).toEqual([{ lost: true }]);
    expect((await a.countsByState(jobId)).in_flight).toBe(1);
  });
  it('keeps each worker\'s limiter state apart, stamped by the database, and drops a worker gone a minute', async () => {
    const a = await open();
    const { job: created } = await a.joinOrCreateJob({ ...job, input_sha256: 'c'.repeat(64) }, 3, false);
    await a.publishLimit(created.id, 1, JSON.stringify({ limit: 8, pace: 12 }));
    await a.publishLimit(created.id, 2, JSON.stringify({ limit: 6, pace: 14 }));
    await a.publishLimit(created.id, 1, JSON.stringify({ limit: 9, pace: 11 }));
    let shared = await a.sharedLimit(created.id);
    const entries = JSON.parse(shared.stateJson ?? '{}') as Record<string, { limit: number; pace: number; at: number }>;
    expect(Object.keys(entries).sort()).toEqual(['1', '2']);
    expect(entries['1']).toMatchObject({ limit: 9, pace: 11 });
    expect(entries['2']).toMatchObject({ limit: 6, pace: 14 });
    expect(Math.abs((entries['1']?.at ?? 0) - shared.nowMs)).toBeLessThan(5000);
    // A worker silent for over a minute is dropped by the next one to publish.
    const client = new pg.Client({ connectionString: url, options: '-c search_path=quote_batch' });
    await client.connect();
    await client.query(`UPDATE partner_limits SET state_json = jsonb_set(state_json::jsonb, '{2,at}', to_jsonb((EXTRACT(EPOCH FROM now()) * 1000 - 61000)::float8))::text WHERE job_id = $1`, [created.id]);
    await client.end();
    await a.publishLimit(created.id, 1, JSON.stringify({ limit: 9, pace: 10 }));
    shared = await a.sharedLimit(created.id);
    expect(Object.keys(JSON.parse(shared.stateJson ?? '{}') as object)).toEqual(['1']);
  });

  it('writes a mixed turn in bulk with the results and rows of one write after another: fenced, found applied when sent again', async () => {
    const ledger = await open();
    const reader = (eofAt: number, keys: string) => async (start: { rowNumber: number; offset: number; line: number }) => {
      const n = Math.min(5, eofAt - start.rowNumber + 1);
      return { rows: rows(start.rowNumber, n).map((r) => ({ ...r, rowKey: `${keys}${r.rowKey}` })), end: { rowNumber: start.rowNumber + n, offset: start.offset + n * 10, line: start.line + n }, eof: start.rowNumber + n > eofAt };
    };
    const attempt = (httpStatus: number, outcome: AttemptRecord['outcome']): AttemptRecord => ({ kind: 'quote', startedAt: '2026-01-01T00:00:00.000Z', durationMs: 12.5, httpStatus, errorCode: null, outcome });
    const sentBy = (s: SentRow): RowChange => ({ state: 'duplicate', errorCode: 'sent_by_other_job', errorMessage: `sent by job ${s.job_id}`, sentBy: { job_id: s.job_id, row_number: s.row_number } });

    // The same turn on two jobs alike (each with keys of its own, and a job before it that sent k2's lead): one way, then the other.
    const environment = 'uat';
    const scene = async (keys: string, shas: [string, string], write: (jobId: number, runId: number, writes: FencedRowWrite[]) => Promise<unknown[]>, looked = true) => {
      const identity = (sha: string) => ({ ...job, input_sha256: sha.repeat(64) });
      const before = (await ledger.joinOrCreateJob(identity(shas[0]), 3, false)).job.id;
      const beforeRun = (await ledger.startWorker(before, '{}', 't', 60_000)).run.id;
      const beforeChunk = await ledger.claimChunk(before, beforeRun, [], STOPPED, reader(5, keys));
      const sentClaim = (beforeChunk as NonNullable<typeof beforeChunk>).claimId;
      await ledger.commitRowWrites(before, beforeRun, [{ kind: 'mark', rowNumber: 2, from: 'pending', agentId: null, requestJson: '{}', requestSha256: null, claimId: sentClaim }]);
      await ledger.commitRowWrites(before, beforeRun, [{ kind: 'outcome', rowNumber: 2, from: 'in_flight', change: { state: 'succeeded' }, attempts: [], claimId: sentClaim }]);

      const jobId = (await ledger.joinOrCreateJob(identity(shas[1]), 3, false)).job.id;
      const mine = (await ledger.startWorker(jobId, '{}', 't', 60_000)).run.id;
      const other = (await ledger.startWorker(jobId, '{}', 't', 60_000)).run.id;
      const a = await ledger.claimChunk(jobId, mine, [], STOPPED, reader(8, keys));
      const b = await ledger.claimChunk(jobId, other, [], STOPPED, reader(8, keys));
      const claim = (a as NonNullable<typeof a>).claimId;
      const othersClaim = (b as NonNullable<typeof b>).claimId;
      expect([a?.firstRow, a?.lastRow, b?.firstRow]).toEqual([1, 5, 6]);
      const mark = (rowNumber: number): Extract<FencedRowWrite, { kind: 'mark' }> => ({ kind: 'mark', rowNumber, from: 'pending', agentId: 'AG1', requestJson: `{"row":${rowNumber}}`, requestSha256: 'f'.repeat(64), claimId: claim });
      await ledger.commitRowWrites(jobId, mine, [mark(3), mark(4), mark(5)]);
      const row5Done: FencedRowWrite = { kind: 'outcome', rowNumber: 5, from: 'in_flight', change: { state: 'succeeded', httpStatus: 200, quoteNumber: 'Q5', totalPremium: 99.5 }, attempts: [attempt(200, 'ok')], claimId: claim };
      await ledger.commitRowWrites(jobId, mine, [row5Done]);

      const results = await write(jobId, mine, [
        { ...mark(1), ...(looked ? { lookup: { environment, operation: 'quote', rowKey: `${keys}k1`, sentBy } } : {}) },
        { ...mark(2), ...(looked ? { lookup: { environment, operation: 'quote', rowKey: `${keys}k2`, sentBy } } : {}) },
        { kind: 'outcome', rowNumber: 3, from: 'in_flight', change: { state: 'succeeded', httpStatus: 200, transactionId: 'T3', quoteNumber: 'Q3', totalPremium: 120.25, responseJson: '{"ok":true}' }, attempts: [attempt(503, 'retryable'), attempt(200, 'ok')], claimId: claim },
        { kind: 'put_back', rowNumber: 4, from: 'in_flight', change: { state: 'pending' }, attempts: [attempt(429, 'retryable')], claimId: claim },
        // Committed already (a commit sent again after a cut connection): found, not applied twice.
        row5Done,
        // Another worker's row: this claim does not hold it.
        { kind: 'outcome', rowNumber: 6, from: 'pending', change: { state: 'succeeded' }, attempts: [attempt(200, 'ok')], claimId: claim },
      ]);
      const shown = await ledger.sql.all<Record<string, unknown>>(
        `SELECT row_number, state, attempts, agent_id, http_status, error_code, transaction_id, quote_number, total_premium, request_json, response_json,
                sent_by_job - $2 AS sent_by_job_after, sent_by_row, claim_id = $3 AS mine, claim_id = $4 AS others
           FROM rows WHERE job_id = $1 ORDER BY row_number`, [jobId, before, claim, othersClaim]);
      const tried = await ledger.sql.all<Record<string, unknown>>(
        'SELECT row_number, run_id = $2 AS mine, kind, http_status, outcome, duration_ms FROM attempts WHERE job_id = $1 ORDER BY row_number, id', [jobId, mine]);
      return { results: results.map((r) => JSON.parse(JSON.stringify(r).replaceAll(`"job_id":${before}`, '"job_id":"before"')) as unknown), shown, tried };
    };

    const oneByOne = await scene('one-', ['1', '2'], (jobId, runId, writes) => ledger.transaction((client) => commitOneByOne(client, jobId, runId, writes, new Date().toISOString())));
    const bulk = await scene('bulk-', ['3', '4'], (jobId, runId, writes) => ledger.commitRowWrites(jobId, runId, writes));
    expect(bulk.results).toEqual([{}, { sent: { job_id: 'before', row_number: 2, state: 'succeeded' } }, {}, {}, {}, { lost: true }]);
    expect(bulk.results).toEqual(oneByOne.results);
    expect(bulk.shown).toEqual(oneByOne.shown);
    expect(bulk.tried).toEqual(oneByOne.tried);
    expect(bulk.shown.map((r) => [r.row_number, r.state, r.attempts])).toEqual([
      [1, 'in_flight', 0], [2, 'duplicate', 0], [3, 'succeeded', 2], [4, 'pending', 1], [5, 'succeeded', 1], [6, 'pending', 0], [7, 'pending', 0], [8, 'pending', 0],
    ]);
    expect(bulk.shown[1]).toMatchObject({ sent_by_job_after: 0, sent_by_row: 2, error_code: 'sent_by_other_job' });
    expect(bulk.shown[2]).toMatchObject({ agent_id: 'AG1', http_status: 200, transaction_id: 'T3', quote_number: 'Q3', total_premium: 120.25, request_json: '{"row":3}', response_json: '{"ok":true}' });
    expect(bulk.shown[5]).toMatchObject({ mine: false, others: true });
    // Rows 3 (two attempts), 4 (one) and 5 (one, from its first commit): none for the lost write, none twice.
    expect(bulk.tried.map((t) => [t.row_number, t.http_status, t.mine])).toEqual([[3, 503, true], [3, 200, true], [4, 429, true], [5, 200, true]]);

    // With no lead to look up (no other job to check), the same turn is one statement, no transaction.
    const plainOneByOne = await scene('plain-one-', ['5', '6'], (jobId, runId, writes) => ledger.transaction((client) => commitOneByOne(client, jobId, runId, writes, new Date().toISOString())), false);
    const plainBulk = await scene('plain-bulk-', ['7', '8'], (jobId, runId, writes) => {
      expect(writtenByOneStatement(writes)).toBe(true);
      return ledger.commitRowWrites(jobId, runId, writes);
    }, false);
    expect(plainBulk.results).toEqual([{}, {}, {}, {}, {}, { lost: true }]);
    expect(plainBulk.results).toEqual(plainOneByOne.results);
    expect(plainBulk.shown).toEqual(plainOneByOne.shown);
    expect(plainBulk.tried).toEqual(plainOneByOne.tried);
    expect(plainBulk.shown.map((r) => [r.row_number, r.state, r.attempts])).toEqual([
      [1, 'in_flight', 0], [2, 'in_flight', 0], [3, 'succeeded', 2], [4, 'pending', 1], [5, 'succeeded', 1], [6, 'pending', 0], [7, 'pending', 0], [8, 'pending', 0],
    ]);
    expect(plainBulk.tried).toEqual(bulk.tried);

    // A turn one statement writes (outcomes alone), sent again: found applied, nothing twice.
    const jobId = (await ledger.joinOrCreateJob({ ...job, input_sha256: '9'.repeat(64) }, 3, false)).job.id;
    const run = (await ledger.startWorker(jobId, '{}', 't', 60_000)).run.id;
    const chunk = await ledger.claimChunk(jobId, run, [], STOPPED, reader(5, 'again-'));
    const claimId = (chunk as NonNullable<typeof chunk>).claimId;
    await ledger.commitRowWrites(jobId, run, [1, 2].map((rowNumber): FencedRowWrite => ({ kind: 'mark', rowNumber, from: 'pending', agentId: null, requestJson: null, requestSha256: null, claimId })));
    const outcomes = [1, 2].map((rowNumber): FencedRowWrite => ({ kind: 'outcome', rowNumber, from: 'in_flight', change: { state: 'rejected', httpStatus: 422 }, attempts: [attempt(422, 'rejected')], claimId }));
    expect(await ledger.commitRowWrites(jobId, run, outcomes)).toEqual([{}, {}]);
    expect(await ledger.commitRowWrites(jobId, run, outcomes)).toEqual([{}, {}]);
    expect(await ledger.commitRowWrites(jobId, run, outcomes.map((o) => ({ ...o, claimId: claimId + 1000 })))).toEqual([{ lost: true }, { lost: true }]);
    expect(await ledger.sql.value('SELECT COUNT(*) FROM attempts WHERE job_id = ?', [jobId])).toBe(2);
    expect((await ledger.countsByState(jobId)).rejected).toBe(2);
  });
  it('settles rows left in flight in doubt, each with an attempt of the run that sent it: a run ending, a dead claim taken over, resolve', async () => {
    const ledger = await open();
    const reader = async (start: { rowNumber: number; offset: number; line: number }) => {
      const n = Math.min(5, 10 - start.rowNumber + 1);
      return { rows: rows(start.rowNumber, n).map((r) => ({ ...r, rowKey: `settle-${r.rowKey}` })), end: { rowNumber: start.rowNumber + n, offset: start.offset + n * 10, line: start.line + n }, eof: start.rowNumber + n > 10 };
    };
    const leaseRunOut = (runId: number) => ledger.sql.run(`UPDATE runs SET lease_until = now() - interval '1 second' WHERE id = $1`, [runId]);
    const mark = (jobId: number, runId: number, claimId: number, rowNumbers: number[]) => ledger.commitRowWrites(jobId, runId, rowNumbers.map((rowNumber): FencedRowWrite => ({
      kind: 'mark', rowNumber, from: 'pending', agentId: null, requestJson: null, requestSha256: null, claimId,
    })));
    const claimed = async (jobId: number, runId: number, known: number[]) => {
      const chunk = await ledger.claimChunk(jobId, runId, known, STOPPED, reader);
      return chunk as NonNullable<typeof chunk>;
    };
    const stoppedAttempts = async (jobId: number) => ledger.sql.all<{ row_number: number; run_id: number; kind: string; duration_ms: number; http_status: number | null; outcome: string }>(
      `SELECT row_number, run_id, kind, duration_ms, http_status, outcome FROM attempts WHERE job_id = $1 AND error_code = 'process_stopped' ORDER BY row_number`, [jobId]);
    const settledRows = async (jobId: number) => ledger.sql.all<{ row_number: number; state: string; attempts: number; error_message: string | null }>(
      `SELECT row_number, state, attempts, error_message FROM rows WHERE job_id = $1 AND state <> 'pending' ORDER BY row_number`, [jobId]);
    const settled = (runId: number, ...rowNumbers: number[]) => rowNumbers.map((row_number) => ({ row_number, run_id: runId, kind: 'quote', duration_ms: 0, http_status: null, outcome: 'in_doubt' }));

    // Another job with a row in flight: none of the settles below is about it.
    const otherJob = (await ledger.joinOrCreateJob({ ...job, input_sha256: 'f0'.repeat(32) }, 3, false)).job.id;
    const otherRun = (await ledger.startWorker(otherJob, '{}', 't', 60_000)).run.id;
    await mark(otherJob, otherRun, (await claimed(otherJob, otherRun, [])).claimId, [1]);

    const jobId = (await ledger.joinOrCreateJob({ ...job, input_sha256: 'f1'.repeat(32) }, 3, false)).job.id;
    const worker = async () => (await ledger.startWorker(jobId, '{}', 't', 60_000)).run.id;
    // `last` claims nothing: the job's last run.
    const [a, b, c, last] = [await worker(), await worker(), await worker(), await worker()];
    const ca = await claimed(jobId, a, []);
    const cb = await claimed(jobId, b, []);
    expect([ca.firstRow, cb.firstRow]).toEqual([1, 6]);
    await mark(jobId, a, ca.claimId, [1, 2]);
    await mark(jobId, b, cb.claimId, [6, 7]);

    // A run ending with rows in flight: its own rows only, in its run; its chunk let go.
    await ledger.finishRun(a, 'failed', STOPPED, 'refused');
    expect(await stoppedAttempts(jobId)).toEqual(settled(a, 1, 2));
    expect(await settledRows(jobId)).toEqual([
      { row_number: 1, state: 'in_doubt', attempts: 1, error_message: STOPPED.errorMessage }, { row_number: 2, state: 'in_doubt', attempts: 1, error_message: STOPPED.errorMessage },
      { row_number: 6, state: 'in_flight', attempts: 0, error_message: null }, { row_number: 7, state: 'in_flight', attempts: 0, error_message: null },
    ]);

    // A dead worker's chunk taken over: its rows in flight, in the dead worker's run.
    await leaseRunOut(b);
    const letGo = await claimed(jobId, c, []);
    expect([letGo.firstRow, letGo.takenOver, letGo.newlyInDoubt]).toEqual([1, false, 0]);
    const takenOver = await claimed(jobId, c, [letGo.claimId]);
    expect([takenOver.firstRow, takenOver.takenOver, takenOver.newlyInDoubt]).toEqual([6, true, 2]);
    expect(await stoppedAttempts(jobId)).toEqual([...settled(a, 1, 2), ...settled(b, 6, 7)]);

    // resolve, nobody holding the job: the run of the chunk a row is under, else the job's last run.
    await mark(jobId, c, letGo.claimId, [3]);
    await ledger.sql.run(`UPDATE rows SET state = 'in_flight', claim_id = NULL WHERE job_id = $1 AND row_number = 9`, [jobId]);
    await leaseRunOut(c);
    await leaseRunOut(last);
    const resolved = await resolveInDoubtPg(ledger, { jobId, rows: [1], changes: resolveChanges('pending'), note: null });
    expect([resolved.crashedRuns, resolved.newlyInDoubt]).toEqual([2, 2]);
    expect(await stoppedAttempts(jobId)).toEqual([...settled(a, 1, 2), ...settled(c, 3), ...settled(b, 6, 7), ...settled(last, 9)]);
    expect((await settledRows(otherJob)).map((r) => r.state)).toEqual(['in_flight']);
    expect(await stoppedAttempts(otherJob)).toEqual([]);
  });

  it('two jobs marking the same lead at once take turns: the second finds the first\'s mark and sends nothing', async () => {
    const ledger = await open();
    const reader = async (start: { rowNumber: number; offset: number; line: number }) => ({
      rows: rows(start.rowNumber, 2).map((r) => ({ ...r, rowKey: `race-${r.rowKey}` })), end: { rowNumber: start.rowNumber + 2, offset: start.offset + 20, line: start.line + 2 }, eof: true,
    });
    const started = async (sha: string) => {
      const jobId = (await ledger.joinOrCreateJob({ ...job, input_sha256: sha.repeat(64) }, 3, false)).job.id;
      const runId = (await ledger.startWorker(jobId, '{}', 't', 60_000)).run.id;
      const chunk = await ledger.claimChunk(jobId, runId, [], STOPPED, reader);
      return { jobId, runId, claimId: (chunk as NonNullable<typeof chunk>).claimId };
    };
    const first = await started('d');
    const second = await started('e');
    // The first job's mark of race-k1, its transaction still open (as PgLedger's own takes the lead's lock first).
    const client = new pg.Client({ connectionString: url, options: '-c search_path=quote_batch' });
    await client.connect();
    try {
      await client.query('BEGIN');
      await client.query(`SELECT pg_advisory_xact_lock(${LEAD_LOCK_KEY}) FROM (VALUES ('uat', 'quote', 'race-k1')) AS l(environment, operation, row_key)`);
      await client.query(`UPDATE rows SET state = 'in_flight' WHERE job_id = $1 AND row_number = 1`, [first.jobId]);
      const sentBy = (s: SentRow): RowChange => ({ state: 'duplicate', errorCode: 'sent_by_other_job', errorMessage: `sent by job ${s.job_id}`, sentBy: { job_id: s.job_id, row_number: s.row_number } });
      let settled = false;
      const marking = ledger.commitRowWrites(second.jobId, second.runId, [{
        kind: 'mark', rowNumber: 1, from: 'pending', agentId: null, requestJson: null, requestSha256: null, claimId: second.claimId,
        lookup: { environment: 'uat', operation: 'quote', rowKey: 'race-k1', sentBy },
      }]).finally(() => {
        settled = true;
      });
      await new Promise((resolve) => setTimeout(resolve, 500));
      // Waiting for the first job's commit: marked now, it would send the lead the first is sending.
      expect(settled).toBe(false);
      await client.query('COMMIT');
      expect(await marking).toEqual([{ sent: { job_id: first.jobId, row_number: 1, state: 'in_flight' } }]);
    } finally {
      await client.end();
    }
    const [row] = await ledger.sql.all<{ state: string; error_code: string }>('SELECT state, error_code FROM rows WHERE job_id = $1 AND row_number = 1', [second.jobId]);
    expect(row).toEqual({ state: 'duplicate', error_code: 'sent_by_other_job' });
  });
});
