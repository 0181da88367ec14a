/**
 * The example queries of docs/ledger.md, read from the markdown itself (so the docs cannot drift),
 * run as-is against a ledger on a separate read-only connection, as an analyst would: on SQLite,
 * and on a PostgreSQL ledger holding the same rows, as the read-only role the docs create, where
 * each must give the same rows.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import Database from 'better-sqlite3';
import pg from 'pg';
import { buildReport, type Report } from '../../src/report/index.js';
import { ROW_STATES, STOPPED_IN_FLIGHT } from '../../src/ledger/index.js';
import { PgLedger } from '../../src/ledger/postgres/ledger.js';
import { buildMixedJob, type MixedJob } from '../fixtures/report/mixed-job.js';
import { copySqliteLedger, createTestDatabase } from '../helpers/postgres.js';
import { createTempLedger, insertAttempt, insertSample, type TempLedger } from './_ledger.js';

const DOC = new URL('../../docs/ledger.md', import.meta.url);

interface ExampleQuery {
  n: number;
  title: string;
  /** The SQL for both backends (or for SQLite, when a PostgreSQL variant follows). */
  sql: string;
  /** The SQL for PostgreSQL: its own ```sql postgresql block under the heading, else `sql`. */
  pgSql: string;
}

/** `### N. title` headings of the "Example queries" section, each with its ```sql block and its ```sql postgresql variant, if any. */
function readExampleQueries(markdown: string): ExampleQuery[] {
  const section = markdown.slice(markdown.indexOf('## Example queries'));
  const found: ExampleQuery[] = [];
  for (const part of section.split(/^(?=### \d+\. )/m).slice(1)) {
    const heading = /^### (\d+)\. (.+)$/m.exec(part);
    const sql = /^```sql\n([\s\S]*?)^```$/m.exec(part)?.[1];
    if (heading === null || sql === undefined) continue;
    const pgSql = /^```sql postgresql\n([\s\S]*?)^```$/m.exec(part)?.[1] ?? sql;
    found.push({ n: Number(heading[1]), title: heading[2] as string, sql, pgSql });
  }
  return found;
}

/** The first ```sql block of the `### title` subsection. */
function sqlUnder(markdown: string, title: string): string {
  const start = markdown.indexOf(`### ${title}`);
  expect(start, title).toBeGreaterThan(-1);
  const end = markdown.indexOf('\n##', start + 4);
  const block = /^```sql\n([\s\S]*?)^```$/m.exec(markdown.slice(start, end === -1 ? undefined : end))?.[1];
  expect(block, title).toBeDefined();
  return block as string;
}

const markdown = readFileSync(DOC, 'utf8');
const queries = readExampleQueries(markdown);

/** A connection as a BI tool's: counts (int8) and `numeric` figures as numbers, as SQLite gives them. */
const NUMBERS = {
  getTypeParser: (oid: number, format?: string): ((value: string) => unknown) =>
    (oid === 20 || oid === 1700 ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format as 'text')),
};

async function withClient<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, types: NUMBERS } as pg.ClientConfig);
  client.on('error', () => {});
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

describe('docs/ledger.md', () => {
  let t: TempLedger;
  let fixture: MixedJob;
  let analyst: Database.Database;
  let report: Report;
  beforeAll(async () => {
    t = createTempLedger();
    fixture = buildMixedJob(t.db);
    // A request a killed run left in flight (recorded at the restart): `report` leaves its time out
    // of the latencies, and so must the docs' queries.
    const runId = (t.db.prepare('SELECT MAX(id) AS id FROM runs WHERE job_id = ?').get(fixture.jobId) as { id: number }).id;
    insertAttempt(t.db, {
      job_id: fixture.jobId, row_number: 1, run_id: runId, kind: 'quote', started_at: '2026-01-01T00:00:00.000Z',
      duration_ms: 987_654, http_status: null, error_code: STOPPED_IN_FLIGHT, outcome: 'in_doubt',
    });
    // The run's last 40 seconds: an outage (every request a transient failure, the window cut to 1).
    // `report` leaves them out of the settled limit, and so must the docs' SQL.
    const last = t.db.prepare('SELECT MAX(elapsed_ms) AS ms, MAX(at) AS at FROM run_samples WHERE run_id = ?').get(runId) as { ms: number; at: string };
    for (let s = 1; s <= 40; s += 1) {
      insertSample(t.db, {
        run_id: runId, elapsed_ms: last.ms + s * 1000, at: new Date(Date.parse(last.at) + s * 1000).toISOString(), concurrency_limit: 1,
        in_flight: 1, attempts: s % 3 === 0 ? 0 : 1, throttled: 0, errors: s % 3 === 0 ? 0 : 1, rows_done: 0, latency_p50_ms: null,
      });
    }
    report = await buildReport(t.sql, fixture.jobId);
    analyst = new Database(t.path, { readonly: true, fileMustExist: true });
  });
  afterAll(() => {
    analyst.close();
    t.remove();
  });

  it('has at least ten example queries, numbered in order', () => {
    expect(queries.length).toBeGreaterThanOrEqual(10);
    expect(queries.map((q) => q.n)).toEqual(queries.map((_, i) => i + 1));
  });

  it('documents every table, column, view and state of the schema', () => {
    const tables = t.db.prepare(`SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%'`)
      .all() as { name: string; type: string }[];
    expect(tables.length).toBeGreaterThanOrEqual(7);
    for (const { name } of tables) {
      expect(markdown, `table/view ${name}`).toContain(`\`${name}\``);
      for (const { name: column } of t.db.prepare(`SELECT name FROM pragma_table_info(?)`).all(name) as { name: string }[]) {
        expect(markdown, `${name}.${column}`).toContain(column);
      }
    }
    for (const state of ROW_STATES) expect(markdown).toContain(`| \`${state}\` |`);
  });

  const byNumber = (n: number) => queries.find((q) => q.n === n) as { sql: string };
  const run = (n: number) => analyst.prepare(byNumber(n).sql).all() as Record<string, unknown>[];

  for (const q of queries) {
    it(`query ${q.n} (${q.title}) runs and returns rows`, () => {
      const rows = analyst.prepare(q.sql).all() as Record<string, unknown>[];
      expect(rows.length).toBeGreaterThan(0);
    });
  }

  it("computes the partner's settled limit as the report does (the SQL of \"Reports and exports\")", () => {
    const section = markdown.slice(markdown.indexOf('## Reports and exports'), markdown.indexOf('## Example queries'));
    const sql = /^ {2}```sql\n([\s\S]*?)^ {2}```$/m.exec(section)?.[1];
    expect(sql).toBeDefined();
    expect(report.partner.settled_limit).not.toBeNull();
    // Not the outage's window of 1: from before it.
    expect(report.partner.settled_limit).toBeGreaterThan(1);
    expect(analyst.prepare(sql as string).all()).toEqual([{ settled_limit: report.partner.settled_limit }]);
  });

  it('returns figures that agree with the report', () => {
    // 1. today's success rate by agent: the latest row was completed just now.
    const today = run(1);
    expect(today.every((r) => typeof r.success_pct === 'number' && r.success_pct >= 0 && r.success_pct <= 100)).toBe(true);
    // 2. rejected rows by error code
    expect(run(2).reduce((a, r) => a + (r.rows as number), 0)).toBe(report.rows.by_state.rejected);
    // 3. premium by US state
    const byState = run(3);
    expect(byState.reduce((a, r) => a + (r.quotes as number), 0)).toBe(report.premium.count);
    expect(byState.every((r) => typeof r.us_state === 'string')).toBe(true);
    // 4. rows in doubt (all jobs)
    expect(run(4).length).toBe(report.rows.by_state.in_doubt);
    // 5. job summary
    const summary = run(5);
    expect(summary.map((r) => r.job_id)).toEqual([fixture.jobId, fixture.oldJobId]);
    expect(summary[0]?.success_rate).toBe(report.rows.success_rate);
    // 6. invalid agents
    expect(run(6).map((r) => [r.agent_email, r.message, r.blocked_rows]))
      .toEqual(report.invalid_agents.map((a) => [a.email, a.message, a.blocked_rows]));
    // 7. latency percentiles
    expect(run(7)[0]).toEqual({
      calls: report.latency_ms.quote.count, p50_ms: report.latency_ms.quote.median, p90_ms: report.latency_ms.quote.p90,
      p99_ms: report.latency_ms.quote.p99, max_ms: report.latency_ms.quote.max,
    });
    // 8. failed attempts grouped
    expect(run(8).reduce((a, r) => a + (r.attempts as number), 0))
      .toBe(report.attempt_errors.reduce((a, e) => a + e.attempts, 0));
    // 9. completions per minute
    expect(run(9).reduce((a, r) => a + (r.rows_completed as number), 0)).toBe(report.timing.rows_completed);
    // 10. leads to hand back
    expect(run(10).length).toBe(report.rows.by_state.rejected + report.rows.by_state.invalid + report.rows.by_state.agent_invalid);
    // 11. runs
    expect(run(11).map((r) => r.status)).toEqual(report.runs.map((r) => r.status));
    // 12. median premium
    expect(run(12)[0]?.median_premium).toBe(report.premium.median);
  });

  describe('on PostgreSQL, as the read-only role of the docs', () => {
    let url: string;
    let admin: string;
    let analystUrl: string;
    let role: string;
    beforeAll(async () => {
      admin = inject('postgresUrl');
      url = await createTestDatabase(admin);
      await (await PgLedger.open(url)).close();
      await copySqliteLedger(t.db, url);
      // The docs' SQL, for this test's database and a role of its own (roles are the whole server's).
      role = `analyst_${randomBytes(4).toString('hex')}`;
      const owner = decodeURIComponent(new URL(admin).username);
      const database = new URL(url).pathname.slice(1);
      const sql = sqlUnder(markdown, 'A read-only role for analysts')
        .replace(/\banalyst\b/g, role).replace(/\bbatch\b/g, owner).replace(/\bleads\b/g, database);
      const password = randomBytes(12).toString('hex');
      await withClient(url, async (c) => {
        await c.query(sql);
        await c.query(`ALTER ROLE ${role} PASSWORD '${password}'`);
      });
      const as = new URL(url);
      as.username = role;
      as.password = password;
      analystUrl = as.href;
    });
    afterAll(async () => {
      if (role === undefined) return;
      await withClient(url, (c) => c.query(`DROP OWNED BY ${role}`)).catch(() => {});
      await withClient(admin, (c) => c.query(`DROP ROLE IF EXISTS ${role}`)).catch(() => {});
    });

    const onPg = async (sql: string): Promise<Record<string, unknown>[]> => withClient(analystUrl, async (c) => (await c.query(sql)).rows);

    it('the role reads with its time-out, in UTC, on the ledger\'s schema, and writes nothing', async () => {
      const settings = await withClient(analystUrl, async (c) => Object.fromEntries(await Promise.all(
        ['statement_timeout', 'idle_in_transaction_session_timeout', 'search_path', 'TimeZone', 'default_transaction_read_only']
          .map(async (name) => [name, Object.values((await c.query(`SHOW ${name}`)).rows[0] ?? {})[0]] as const),
      )));
      expect(settings).toEqual({
        statement_timeout: '1min', idle_in_transaction_session_timeout: '5min', search_path: 'quote_batch', TimeZone: 'UTC', default_transaction_read_only: 'on',
      });
      await expect(onPg('DELETE FROM rows')).rejects.toThrow(/read-only/);
      // Not only read-only by default: without the grant (a session may turn read-only off).
      await expect(withClient(analystUrl, async (c) => {
        await c.query('SET default_transaction_read_only = off');
        return c.query('DELETE FROM rows');
      })).rejects.toThrow(/permission denied/);
      // A table a later quote-batch adds (created by the ledger's own role) is readable without a new grant.
      await withClient(url, (c) => c.query('CREATE TABLE quote_batch.added_later (id integer); INSERT INTO quote_batch.added_later VALUES (7)'));
      expect(await onPg('SELECT id FROM added_later')).toEqual([{ id: 7 }]);
      await withClient(url, (c) => c.query('DROP TABLE quote_batch.added_later'));
    });

    it('documents every table and column the PostgreSQL ledger adds', async () => {
      const columns = await onPg(`SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'quote_batch' ORDER BY table_name, ordinal_position`);
      const tables = new Set(columns.map((c) => c.table_name as string));
      expect([...tables]).toEqual(expect.arrayContaining(['chunks', 'partner_limits', 'schema_version', 'jobs', 'rows', 'job_summary']));
      for (const table of tables) expect(markdown, `table/view ${table}`).toContain(`\`${table}\``);
      for (const { table_name: table, column_name: column } of columns) expect(markdown, `${String(table)}.${String(column)}`).toContain(column as string);
      for (const column of ['frontier_row', 'frontier_offset', 'frontier_line', 'paused_until', 'lease_until', 'claim_id']) {
        expect(markdown).toMatch(new RegExp(`\`(\\w+\\.)?${column}\``));
      }
    });

    for (const q of queries) {
      it(`query ${q.n} (${q.title}) gives the rows it gives on SQLite`, async () => {
        const expected = analyst.prepare(q.sql).all();
        expect(expected.length).toBeGreaterThan(0);
        expect(await onPg(q.pgSql)).toEqual(expected);
      });
    }

    it("computes the partner's settled limit as the report does", async () => {
      const section = markdown.slice(markdown.indexOf('## Reports and exports'), markdown.indexOf('## Example queries'));
      const sql = /^ {2}```sql\n([\s\S]*?)^ {2}```$/m.exec(section)?.[1] as string;
      expect(await onPg(sql)).toEqual([{ settled_limit: report.partner.settled_limit }]);
    });
  });
});
