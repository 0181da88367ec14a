/**
 * The example queries of docs/ledger.md, read from the markdown itself (so the docs cannot drift),
 * run as-is against a ledger on a separate read-only connection, as an analyst would.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { buildReport, type Report } from '../../src/report/index.js';
import { ROW_STATES, STOPPED_IN_FLIGHT } from '../../src/ledger/index.js';
import { buildMixedJob, type MixedJob } from '../fixtures/report/mixed-job.js';
import { createTempLedger, insertAttempt, insertSample, type TempLedger } from './_ledger.js';

const DOC = new URL('../../docs/ledger.md', import.meta.url);

/** `### N. title` headings of the "Example queries" section, each with its ```sql block. */
function readExampleQueries(markdown: string): { n: number; title: string; sql: string }[] {
  const section = markdown.slice(markdown.indexOf('## Example queries'));
  const found: { n: number; title: string; sql: string }[] = [];
  const pattern = /^### (\d+)\. (.+)$[\s\S]*?^```sql\n([\s\S]*?)^```$/gm;
  for (const m of section.matchAll(pattern)) found.push({ n: Number(m[1]), title: m[2] as string, sql: m[3] as string });
  return found;
}

const markdown = readFileSync(DOC, 'utf8');
const queries = readExampleQueries(markdown);

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
});
