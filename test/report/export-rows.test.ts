import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'csv-parse/sync';
import { EXPORT_COLUMNS, exportRows, formatCsvCell, parseStates, listJobs, renderJobsTable } from '../../src/report/index.js';
import { QuoteBatchError } from '../../src/errors.js';
import { SqliteDb } from '../../src/ledger/index.js';
import { buildMixedJob, type MixedJob } from '../fixtures/report/mixed-job.js';
import { buildHostileData } from '../fixtures/report/hostile-data.js';
import { buildEmptyJob } from '../fixtures/report/empty-job.js';
import { createTempLedger, insertJob, insertRow, iso, type TempLedger } from './_ledger.js';

type Db = TempLedger['db'];

/** The rows of those states by plain SQL, every value as text (as a CSV reader sees them). */
function rowsBySql(db: Db, jobId: number, states: readonly string[]): Record<string, unknown>[] {
  const where = states.length === 0 ? '' : ` AND state IN (${states.map(() => '?').join(',')})`;
  return db.prepare(`SELECT ${EXPORT_COLUMNS.join(', ')} FROM rows WHERE job_id = ?${where} ORDER BY row_number`)
    .all(jobId, ...states) as Record<string, unknown>[];
}

const asText = (row: Record<string, unknown>): Record<string, string> =>
  Object.fromEntries(Object.entries(row).map(([k, v]) => [k, v === null ? '' : String(v)]));

/** Undoes the spreadsheet-formula guard, as someone re-importing the file would. */
const unguard = (cell: string): string => (/^'[=+\-@\t\r]/.test(cell) ? cell.slice(1) : cell);

async function exportToString(db: Db, jobId: number, states: readonly string[], format: 'csv' | 'ndjson'): Promise<{ text: string; count: number }> {
  let text = '';
  const count = await exportRows(new SqliteDb(db), { jobId, states: parseStatesOrAll(states), format }, (chunk) => {
    text += chunk;
  });
  return { text, count };
}

const parseStatesOrAll = (states: readonly string[]) => (states.length === 0 ? [] : parseStates(states.join(',')));

describe('export round-trips: the rows listed are exactly the rows of those states', () => {
  let t: TempLedger;
  let fixture: MixedJob;
  let hostileJob: number;
  beforeAll(() => {
    t = createTempLedger();
    fixture = buildMixedJob(t.db);
    hostileJob = buildHostileData(t.db, 'http://127.0.0.1:9').jobId;
  });
  afterAll(() => t.remove());

  const cases: [string, string[]][] = [
    ['failed, in_doubt and rejected (the base of a corrected re-run)', ['failed', 'in_doubt', 'rejected']],
    ['succeeded', ['succeeded']],
    ['agent_invalid', ['agent_invalid']],
    ['every row', []],
  ];

  for (const [name, states] of cases) {
    it(`CSV: ${name}`, async () => {
      for (const jobId of [fixture.jobId, hostileJob]) {
        const expected = rowsBySql(t.db, jobId, states).map(asText);
        const { text, count } = await exportToString(t.db, jobId, states, 'csv');
        const records = parse(text, { columns: true }) as Record<string, string>[];
        expect(count).toBe(expected.length);
        expect(records.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, unguard(v)])))).toEqual(expected);
        if (jobId === fixture.jobId && states.length > 0) {
          expect(expected.length, 'the fixture has rows in these states').toBeGreaterThan(0);
          expect(new Set(records.map((r) => r.state))).toEqual(new Set(states));
        }
      }
    });

    it(`NDJSON: ${name}`, async () => {
      for (const jobId of [fixture.jobId, hostileJob]) {
        const expected = rowsBySql(t.db, jobId, states);
        const { text, count } = await exportToString(t.db, jobId, states, 'ndjson');
        const lines = text.split('\n');
        expect(lines.pop()).toBe('');
        expect(count).toBe(expected.length);
        expect(lines.map((l) => JSON.parse(l) as unknown)).toEqual(expected);
      }
    });
  }

  it('writes a CSV header and guards formula cells against spreadsheet injection', async () => {
    const { text } = await exportToString(t.db, hostileJob, [], 'csv');
    expect(text.split('\r\n')[0]).toBe(EXPORT_COLUMNS.join(','));
    const records = parse(text, { columns: true }) as Record<string, string>[];
    for (const r of records) {
      for (const [column, cell] of Object.entries(r)) {
        expect(cell, `${column} of row ${r.row_number}`).not.toMatch(/^[=+\-@]/);
      }
    }
    expect(records.some((r) => r.error_message === 'line one\nline two\r\nline three')).toBe(true);
    expect(records.some((r) => r.error_message === '+1-555-0100, "quoted", and a comma'.replace(/^/, "'"))).toBe(true);
  });

  it('streams: a large export reaches `write` in bounded chunks, each waited for', async () => {
    const big = createTempLedger();
    try {
      const jobId = insertJob(big.db, { status: 'completed', created_at: iso(Date.now()) });
      big.db.transaction(() => {
        for (let n = 1; n <= 20_000; n++) {
          insertRow(big.db, { job_id: jobId, row_number: n, row_key: `k${n}`, state: n % 10 === 0 ? 'failed' : 'succeeded', error_message: n % 10 === 0 ? 'x'.repeat(50) : null, updated_at: iso(Date.now()) });
        }
      })();
      const sizes: number[] = [];
      let lines = 0;
      // A reader that takes each chunk a turn later: the next chunk is not made before.
      let waiting = false;
      const count = await exportRows(big.sql, { jobId, format: 'csv' }, async (chunk) => {
        expect(waiting).toBe(false);
        sizes.push(chunk.length);
        lines += chunk.split('\r\n').length - 1;
        waiting = true;
        await new Promise((resolve) => setImmediate(resolve));
        waiting = false;
      });
      expect(count).toBe(20_000);
      expect(lines).toBe(20_001);
      expect(sizes.length).toBeGreaterThan(5);
      expect(Math.max(...sizes)).toBeLessThan(64 * 1024 + 1024);
      expect(await exportRows(big.sql, { jobId, states: ['failed'], format: 'ndjson' }, () => undefined)).toBe(2_000);
    } finally {
      big.remove();
    }
  });
});

describe('CSV cells', () => {
  it('quotes separators, quotes and newlines, and guards formulas', () => {
    expect(formatCsvCell('plain')).toBe('plain');
    expect(formatCsvCell('a,b')).toBe('"a,b"');
    expect(formatCsvCell('say "hi"')).toBe('"say ""hi"""');
    expect(formatCsvCell('two\nlines')).toBe('"two\nlines"');
    expect(formatCsvCell('=1+2')).toBe("'=1+2");
    expect(formatCsvCell('@SUM(A1)')).toBe("'@SUM(A1)");
    expect(formatCsvCell('-2+3,x')).toBe(`"'-2+3,x"`);
    expect(formatCsvCell('+33 1')).toBe("'+33 1");
    expect(formatCsvCell('\tx')).toBe("'\tx");
    expect(formatCsvCell(-5)).toBe('-5');
    expect(formatCsvCell(1234.5)).toBe('1234.5');
    expect(formatCsvCell(null)).toBe('');
  });
});

describe('parseStates', () => {
  it('accepts known states and refuses unknown ones with a usage error', () => {
    expect(parseStates('failed, in_doubt,rejected,failed')).toEqual(['failed', 'in_doubt', 'rejected']);
    expect(() => parseStates('failed,done')).toThrow(QuoteBatchError);
    expect(() => parseStates('failed,done')).toThrow(/unknown row state "done"/);
    expect(() => parseStates(' , ')).toThrow(/one or more row states/);
  });
});

describe('listJobs', () => {
  it('lists every job newest first with its counts, in 80 columns', async () => {
    const t = createTempLedger();
    try {
      const mixed = buildMixedJob(t.db);
      const empty = buildEmptyJob(t.db);
      const jobs = await listJobs(t.sql);
      expect(jobs.map((j) => j.id)).toEqual([empty.jobId, mixed.jobId, mixed.oldJobId]);
      const byId = new Map(jobs.map((j) => [j.id, j]));
      for (const j of jobs) {
        const counts = t.db.prepare('SELECT state, COUNT(*) AS n FROM rows WHERE job_id = ? GROUP BY state').all(j.id) as { state: string; n: number }[];
        for (const { state, n } of counts) expect((byId.get(j.id) as unknown as Record<string, number>)[state]).toBe(n);
        expect(j.rows_recorded).toBe(counts.reduce((a, c) => a + c.n, 0));
      }
      expect(byId.get(mixed.oldJobId)).toMatchObject({ status: 'completed', succeeded: 5, input_path: 'samples/leads-small.csv', environment: 'sandbox', operation: 'quote' });
      const table = renderJobsTable(jobs);
      for (const line of table.trimEnd().split('\n')) expect(Array.from(line).length).toBeLessThanOrEqual(80);
      expect(table).toContain('samples/leads-small.csv');
      expect(renderJobsTable([])).toMatch(/no jobs/);
      // A job whose input no run read to the end: more rows are open than recorded, which it says.
      const halfRead = { ...(byId.get(mixed.oldJobId) as (typeof jobs)[number]), id: 9, status: 'interrupted' as const, total_rows: null, pending: 2 };
      const withHalfRead = renderJobsTable([halfRead]);
      expect(withHalfRead).toMatch(/^ {3}9 interrupted .* {4}2\+ \d{4}-/m);
      expect(withHalfRead).toContain('\nopen +: the input is not read to its end yet; the next run reads more rows\n');

    } finally {
      t.remove();
    }
  });
});
