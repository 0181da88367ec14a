/**
 * The PostgreSQL ledger against a real server (test/helpers/postgres.ts): its schema, the workers'
 * chunk claims under leases, and the fence on every row write.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import pg from 'pg';
import { PgLedger } from '../../src/ledger/postgres/ledger.js';
import type { NewRow } from '../../src/ledger/index.js';
import { STOPPED } from '../../src/pipeline/row-state.js';
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
      a.claimChunk(jobId, wa.run.id, [], 'quote', STOPPED, reader(5, 8)),
      b.claimChunk(jobId, wb.run.id, [], 'quote', STOPPED, reader(5, 8)),
    ]);
    expect(read).toBe(2);
    const chunks = [ca, cb].map((c) => [c?.firstRow, c?.lastRow]).sort((x, y) => (x[0] ?? 0) - (y[0] ?? 0));
    expect(chunks).toEqual([[1, 5], [6, 8]]);
    expect(await a.claimChunk(jobId, wa.run.id, [(ca as NonNullable<typeof ca>).claimId, (cb as NonNullable<typeof cb>).claimId], 'quote', STOPPED, reader(5, 8))).toBeNull();
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
});
