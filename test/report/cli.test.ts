/**
 * `quote-batch report | export | jobs` as users run them: the real binary, spawned with NO_COLOR=1,
 * on real ledger files in temp directories.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'csv-parse/sync';
import Database from 'better-sqlite3';
import { SqliteDb } from '../../src/ledger/index.js';
import { buildReport, EXPORT_COLUMNS, type JobListing, type Report } from '../../src/report/index.js';
import { buildMixedJob, type MixedJob } from '../fixtures/report/mixed-job.js';
import { createTempLedger, type TempLedger } from './_ledger.js';
import { computeFiguresBySql, partnerBySql } from './_sql-figures.js';
import { groupsFromCsv, groupsFromHtml, groupsFromText } from './_groups.js';

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
const BIN = join(ROOT, 'bin/quote-batch.js');

function cli(args: string[], cwd: string, env: Record<string, string> = {}) {
  const result = spawnSync(process.execPath, [BIN, ...args], {
    // COLUMNS as when no terminal says otherwise, unless a test sets it.
    cwd, encoding: 'utf8', timeout: 60_000, env: { ...process.env, NO_COLOR: '1', COLUMNS: '', ...env },
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

const withoutClock = ({ generated_at: _g, ...rest }: Report) => rest;


describe('quote-batch report / export / jobs', () => {
  let t: TempLedger;
  let fixture: MixedJob;
  beforeAll(() => {
    t = createTempLedger(); // named quote-batch.db: the default ledger of its directory
    fixture = buildMixedJob(t.db);
    t.close();
  });
  afterAll(() => t.remove());

  it('report --format json: the latest job by default, every figure as in the ledger', async () => {
    const r = cli(['report', '--format', 'json'], t.dir);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as Report;
    expect(report.job.id).toBe(fixture.jobId);
    const reader = createReader(t.path);
    try {
      expect(withoutClock(report)).toEqual(withoutClock(JSON.parse(JSON.stringify(await buildReport(new SqliteDb(reader), fixture.jobId))) as Report));
      expect(report.rows).toEqual(computeFiguresBySql(reader, fixture.jobId).rows);
    } finally {
      reader.close();
    }
  });

  it('report (table) is 100 columns wide off a terminal, as wide as COLUMNS says; --job picks another job', () => {
    const r = cli(['report', '--ledger', t.path, '--job', String(fixture.oldJobId)], '/');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`job ${fixture.oldJobId}`);
    for (const line of r.stdout.split('\n')) expect(Array.from(line).length).toBeLessThanOrEqual(100);
    const narrow = cli(['report'], t.dir);
    const wide = cli(['report'], t.dir, { COLUMNS: '200' });
    const widest = (text: string): number => Math.max(...text.split('\n').map((line) => Array.from(line).length));
    expect(widest(narrow.stdout)).toBeLessThanOrEqual(100);
    expect(widest(wide.stdout)).toBeLessThanOrEqual(200);
    expect(widest(wide.stdout)).toBeGreaterThan(100);
  });

  it('report --format csv and --format html --out write the figures', () => {
    const csv = cli(['report', '--format', 'csv'], t.dir);
    expect(csv.code).toBe(0);
    const figures = new Map((parse(csv.stdout, { columns: true }) as { figure: string; value: string }[]).map((f) => [f.figure, f.value]));
    expect(figures.get('job.id')).toBe(String(fixture.jobId));
    expect(figures.get('rows.total')).toBe(String(fixture.rowCount));

    const html = cli(['report', '--format', 'html', '--out', 'report.html'], t.dir);
    expect(html.code).toBe(0);
    expect(html.stdout).toBe('');
    expect(html.stderr).toContain('report.html');
    const file = join(t.dir, 'report.html');
    expect(readFileSync(file, 'utf8')).toMatch(/^<!doctype html>[\s\S]*data-chart="outcomes"[\s\S]*<\/html>\n$/);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it('export --status failed,in_doubt,rejected --out lists exactly those rows', () => {
    const r = cli(['export', '--status', 'failed,in_doubt,rejected', '--out', 'rerun.csv'], t.dir);
    expect(r.code).toBe(0);
    const records = parse(readFileSync(join(t.dir, 'rerun.csv'), 'utf8'), { columns: true }) as Record<string, string>[];
    const reader = createReader(t.path);
    try {
      const expected = reader.prepare(
        `SELECT row_number FROM rows WHERE job_id = ? AND state IN ('failed', 'in_doubt', 'rejected') ORDER BY row_number`,
      ).pluck().all(fixture.jobId) as number[];
      expect(expected.length).toBeGreaterThan(0);
      expect(records.map((rec) => Number(rec.row_number))).toEqual(expected);
      expect(Object.keys(records[0] ?? {})).toEqual([...EXPORT_COLUMNS]);
      expect(r.stderr).toContain(`exported ${expected.length} rows of job ${fixture.jobId}`);
    } finally {
      reader.close();
    }
  });

  it('export --format ndjson writes one JSON object per row to stdout', () => {
    const r = cli(['export', '--format', 'ndjson', '--job', String(fixture.oldJobId)], t.dir);
    expect(r.code).toBe(0);
    const rows = r.stdout.trimEnd().split('\n').map((l) => JSON.parse(l) as { row_number: number; state: string });
    expect(rows.map((row) => row.row_number)).toEqual([1, 2, 3, 4, 5]);
    expect(rows.every((row) => row.state === 'succeeded')).toBe(true);
  });

  it('jobs lists the jobs newest first; --format json for scripts', () => {
    const table = cli(['jobs'], t.dir);
    expect(table.code).toBe(0);
    expect(table.stdout).toContain('samples/leads-small.csv');
    for (const line of table.stdout.split('\n')) expect(Array.from(line).length).toBeLessThanOrEqual(80);
    const json = cli(['jobs', '--format', 'json'], t.dir);
    expect((JSON.parse(json.stdout) as { id: number }[]).map((j) => j.id)).toEqual([fixture.jobId, fixture.oldJobId]);
  });

  it('usage errors exit 2 with one line and a hint', () => {
    const cases: [string[], RegExp][] = [
      [['report', '--job', '999'], /error: job 999 is not in ledger .*\nhint: .*quote-batch jobs/],
      [['report', '--ledger', 'missing.db'], /error: ledger .*missing\.db does not exist\nhint: /],
      [['export', '--ledger', 'missing.db'], /does not exist/],
      [['jobs', '--ledger', 'missing.db'], /does not exist/],
      [['report', '--format', 'xml'], /xml/],
      [['export', '--status', 'failed,bogus'], /error: --status: unknown row state "bogus"\nhint: row states are/],
      [['export', '--job', 'abc'], /--job expects a non-negative integer/],
    ];
    for (const [args, message] of cases) {
      const r = cli(args, t.dir);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(message);
      expect(r.stdout, args.join(' ')).toBe('');
    }
  });
});

describe('--out never names a file the output would destroy', () => {
  let t: TempLedger;
  let fixture: MixedJob;
  beforeAll(() => {
    t = createTempLedger();
    fixture = buildMixedJob(t.db);
    writeFileSync(join(t.dir, 'leads.csv'), 'click_id\nc1\n');
    writeFileSync(join(t.dir, 'leads.yaml'), 'version: 1\n');
    t.db.prepare('UPDATE jobs SET input_path = ?, mapping_path = ? WHERE id = ?').run(join(t.dir, 'leads.csv'), join(t.dir, 'leads.yaml'), fixture.oldJobId);
    t.close();
  });
  afterAll(() => t.remove());

  it('export and report refuse the ledger, its -wal, and a job\'s input or mapping file (any spelling), and leave them as they were', () => {
    symlinkSync(join(t.dir, 'leads.csv'), join(t.dir, 'link.csv'));
    const ledgerBefore = readFileSync(t.path);
    const cases: [string[], RegExp][] = [
      [['export', '--out', 'quote-batch.db'], /^error: --out .*quote-batch\.db is the ledger .*quote-batch\.db: writing there would destroy the record of what was sent\nhint: name another file/],
      [['report', '--format', 'html', '--out', './sub/../quote-batch.db'], /is the ledger/],
      [['export', '--format', 'ndjson', '--out', 'leads.csv'], new RegExp(`^error: --out .*leads\\.csv is the input file of job ${fixture.oldJobId}: writing there would replace it\nhint: name another file`)],
      [['export', '--out', 'link.csv'], /is the input file of job/],
      [['report', '--out', 'leads.yaml'], /is the mapping file of job/],
    ];
    mkdirSync(join(t.dir, 'sub'));
    for (const [args, message] of cases) {
      const r = cli(args, t.dir);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(message);
    }
    expect(readFileSync(t.path).equals(ledgerBefore)).toBe(true);
    expect(readFileSync(join(t.dir, 'leads.csv'), 'utf8')).toBe('click_id\nc1\n');
    expect(readFileSync(join(t.dir, 'leads.yaml'), 'utf8')).toBe('version: 1\n');
    expect(cli(['jobs'], t.dir).code).toBe(0);
    // Another file, even one that exists, is written as before.
    writeFileSync(join(t.dir, 'old.csv'), 'x\n');
    expect(cli(['export', '--out', 'old.csv'], t.dir).code).toBe(0);
    expect(readFileSync(join(t.dir, 'old.csv'), 'utf8')).toMatch(/^row_number,/);
  });
});

describe('on the ledger of the sample job (`npm start`)', () => {
  const samples = join(ROOT, 'samples/leads.csv');
  const mapping = join(ROOT, 'mappings/example-csv.yaml');
  let dir: string;
  let ledgerPath: string;
  let summary: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'qb-report-sample-'));
    ledgerPath = join(dir, 'quote-batch.db');
    // What `npm start` runs, with the ledger in a temp directory.
    const run = cli(['run', samples, '--mapping', mapping, '--env', 'sandbox', '--ledger', ledgerPath, '--quiet'], ROOT);
    expect([0, 1], run.stderr).toContain(run.code);
    summary = run.stdout;
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('every figure of report --format json equals plain SQL', () => {
    const r = cli(['report', '--ledger', ledgerPath, '--format', 'json'], ROOT);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as Report;
    expect(report.rows.total).toBeGreaterThan(0);
    const reader = createReader(ledgerPath);
    try {
      const {
        generated_at: _g, report_version: _v, completions: _c, premium, latency_ms: latency, row_errors: _e,
        row_error_groups: _k, timeline: _t, partner, ...rest
      } = report;
      const strip = <T extends { histogram: unknown }>({ histogram: _h, ...stats }: T) => stats;
      expect({
        ...rest,
        premium: strip(premium),
        latency_ms: Object.fromEntries(Object.entries(latency).map(([k, v]) => [k, strip(v)])),
      }).toEqual(computeFiguresBySql(reader, report.job.id));
      expect(partner).toEqual(partnerBySql(reader, report.job.id));
    } finally {
      reader.close();
    }
  });

  it('the run summary and report table, json, csv and html give the same error kinds, none naming a row', () => {
    const json = JSON.parse(cli(['report', '--ledger', ledgerPath, '--format', 'json'], ROOT).stdout) as Report;
    const expected = json.row_errors.map((g) => ({ rows: g.rows, kind: g.kind, sampleRows: g.sample_rows }));
    // The samples' rows to fix (samples/README.md): 9 invalid rows, each its own mistake; the
    // rejections of three US states as one kind; two vehicle rejections; two agent messages.
    expect(json.row_error_groups).toBe(13);
    expect(expected.map((g) => [g.rows, g.kind]).slice(0, 4)).toEqual([
      [4, 'agent_invalid · The specified user_type does not match the account.'],
      [4, 'agent_invalid · User not found.'],
      [3, 'rejected · state_not_supported · State XX is not supported. (states AK, HI, MA)'],
      [2, 'rejected · eligible_vehicle_not_found · No eligible vehicle found: a vehicle must be model year N or later and not in commercial use.'],
    ]);
    for (const g of expected) expect(g.kind).not.toMatch(/\b(?:rows?|lines?) \d/);

    const table = cli(['report', '--ledger', ledgerPath], ROOT).stdout;
    expect(groupsFromText(table, 'Row errors by kind')).toEqual(expected);
    expect(groupsFromCsv(cli(['report', '--ledger', ledgerPath, '--format', 'csv'], ROOT).stdout)).toEqual(expected);
    expect(groupsFromHtml(cli(['report', '--ledger', ledgerPath, '--format', 'html'], ROOT).stdout)).toEqual(expected);
    // The run summary lists the five largest, with two sample rows each.
    expect(groupsFromText(summary, 'errors by kind')).toEqual(expected.slice(0, 5).map((g) => ({ ...g, sampleRows: g.sampleRows.slice(0, 2) })));
    expect(summary).toContain(`… ${json.row_error_groups - 5} more: quote-batch report`);
  });
});

/** A separate read-only connection, as an analyst's tool would open the file. */
function createReader(path: string): Database.Database {
  return new Database(path, { readonly: true, fileMustExist: true });
}

describe('a run stopped at --limit, as the summary, report and jobs call it', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'qb-limit-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('the run "stopped at --limit 20", the job interrupted because of it; once resumed to the end, completed', () => {
    const env = { QUOTE_BATCH_API_KEY: 'sandbox-key' };
    const args = ['run', join(ROOT, 'samples/leads.csv'), '--mapping', join(ROOT, 'mappings/example-csv.yaml'), '--env', 'sandbox', '--quiet'];
    const limited = cli([...args, '--limit', '20'], dir, env);
    expect(limited.code).toBe(3);
    expect(limited.stdout).toContain('\njob 1: run 1 stopped at --limit 20\n');
    expect(limited.stdout).toContain('exit 3: job not completed: this run was limited to the first 20 rows');

    const table = cli(['report'], dir);
    expect(table.stdout).toMatch(/^quote-batch report · job 1 · interrupted \(run 1 stopped at --limit 20\)\n/);
    expect(table.stdout).toMatch(/\n {7}1 {2}completed \(--limit 20\) +\d{4}-/);
    const json = JSON.parse(cli(['report', '--format', 'json'], dir).stdout) as Report;
    expect(json.job.status).toBe('interrupted');
    expect(json.runs.map((r) => [r.status, r.limit])).toEqual([['completed', 20]]);
    expect(cli(['report', '--format', 'html'], dir).stdout).toContain('<span class="status">interrupted (run 1 stopped at --limit 20)</span>');
    // jobs: none of the 20 is open, but the 180 rows not read yet are: `0+`.
    expect(cli(['jobs'], dir).stdout).toMatch(/\n {3}1 interrupted +sandbox +quote +20 +17 +3 +0\+ \d{4}-[^\n]*\n.*\nopen \+: the input is not read to its end yet/);

    const rest = cli(args, dir, env);
    expect(rest.stdout).toContain('\njob 1: run 2 completed\n');
    const after = cli(['report'], dir).stdout;
    expect(after).toMatch(/^quote-batch report · job 1 · completed\n/);
    expect(after).toMatch(/\n {7}1 {2}completed \(--limit 20\) +\d{4}-/);
    expect(after).toMatch(/\n {7}2 {2}completed +\d{4}-/);
  });
});

describe('a job whose run was killed, as jobs and report show it before the next run', () => {
  let dir: string;
  const env = { QUOTE_BATCH_API_KEY: 'sandbox-key' };
  const args = ['run', join(ROOT, 'samples/leads.csv'), '--mapping', join(ROOT, 'mappings/example-csv.yaml'), '--env', 'sandbox', '--quiet'];
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'qb-gone-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /**
   * Leaves the ledger as a run killed with its rows 20 and 21 in flight leaves it: run and job
   * `running`, signs of life as given (pid, host, heartbeat, a sample at `sampleAt`).
   */
  function leaveRunning(signs: { pid: number; hostname: string; heartbeatAt: string; sampleAt?: string }): void {
    const db = new Database(join(dir, 'quote-batch.db'));
    try {
      db.prepare(`UPDATE jobs SET status = 'running', finished_at = NULL WHERE id = 1`).run();
      db.prepare(`UPDATE runs SET status = 'running', finished_at = NULL, pid = ?, hostname = ?, heartbeat_at = ? WHERE id = 1`)
        .run(signs.pid, signs.hostname, signs.heartbeatAt);
      db.prepare(`UPDATE rows SET state = 'in_flight' WHERE job_id = 1 AND row_number IN (19, 20)`).run();
      db.prepare('DELETE FROM run_samples WHERE run_id = 1').run();
      if (signs.sampleAt !== undefined) {
        db.prepare(`INSERT INTO run_samples (run_id, elapsed_ms, at, in_flight, attempts, throttled, errors, rows_done) VALUES (1, 60000, ?, 2, 0, 0, 0, 0)`)
          .run(signs.sampleAt);
      }
    } finally {
      db.close();
    }
  }
  const jobsJson = (): JobListing[] => JSON.parse(cli(['jobs', '--format', 'json'], dir).stdout) as JobListing[];
  const reportJson = (): Report => JSON.parse(cli(['report', '--format', 'json'], dir).stdout) as Report;

  it('running while its process lives; crashed, with its last sign of life, once it is gone; recorded so by the next run', () => {
    expect(cli([...args, '--limit', '20'], dir, env).code).toBe(3);
    const host = hostname();
    const recent = new Date(Date.now() - 5_000).toISOString();

    // Alive: this very process, on this host.
    leaveRunning({ pid: process.pid, hostname: host, heartbeatAt: recent });
    expect(jobsJson().map((j) => [j.status, j.process_gone])).toEqual([['running', false]]);
    expect(cli(['jobs'], dir).stdout).toMatch(/\n {3}1 running +sandbox/);
    expect(cli(['jobs'], dir).stdout).not.toContain('crashed');
    expect(cli(['report'], dir).stdout).toMatch(/^quote-batch report · job 1 · running\n/);
    // From another host, alive while its heartbeat is fresh.
    leaveRunning({ pid: process.pid, hostname: 'another-host.example', heartbeatAt: recent });
    expect(jobsJson()[0]?.process_gone).toBe(false);

    // A pid this host does not see, with a fresh heartbeat: maybe a container that shares the host's name.
    const exited = spawnSync(process.execPath, ['-e', '']).pid as number;
    leaveRunning({ pid: exited, hostname: host, heartbeatAt: recent });
    expect(jobsJson()[0]?.process_gone).toBe(false);

    // Gone: a process that exited on this host, no heartbeat for a minute (its last sample, later, is its last sign of life).
    const sampleAt = new Date(Date.now() - 61_000).toISOString();
    leaveRunning({ pid: exited, hostname: host, heartbeatAt: new Date(Date.now() - 70_000).toISOString(), sampleAt });
    expect(jobsJson().map((j) => [j.status, j.process_gone])).toEqual([['running', true]]);
    const table = cli(['jobs'], dir).stdout;
    expect(table).toMatch(/\n {3}1 crashed +sandbox +quote +20 +15 +3 +2\+ \d{4}-/);
    expect(table).toContain("\ncrashed: the run was killed or crashed before it could record it (its process is gone);\n"
      + '         the next run (or resolve) records it and puts its rows in flight in doubt\n');
    const report = reportJson();
    expect(report.job).toMatchObject({ status: 'running', process_gone: true });
    expect(report.runs.map((r) => [r.status, r.process_gone, r.last_seen_at])).toEqual([['running', true, sampleAt]]);
    const text = cli(['report'], dir).stdout;
    expect(text).toMatch(/^quote-batch report · job 1 · crashed \(run 1's process is gone\)\n/);
    // The note wraps at the table's 100 columns, under its label.
    expect(text.replace(/\n {12}/g, ' ')).toContain(`\n  stopped   last sign of life ${sampleAt.replace('T', ' ').replace(/\.\d+Z$/, 'Z')}; the next run (or resolve) records it crashed and its 2 rows in flight in doubt\n\nRows: `);
    expect(text).toMatch(/\n {7}1 {2}crashed \(not yet recorded\) +\d{4}-/);
    const html = cli(['report', '--format', 'html'], dir).stdout;
    expect(html).toContain('<span class="status">crashed (run 1&#39;s process is gone)</span>');
    expect(html).toContain('<p class="meta">stopped: last sign of life ');
    // From another host: gone once its heartbeat is a minute old.
    leaveRunning({ pid: process.pid, hostname: 'another-host.example', heartbeatAt: new Date(Date.now() - 120_000).toISOString() });
    expect(jobsJson()[0]?.process_gone).toBe(true);

    // The next run records what jobs and report announced: run 1 crashed, its two rows in doubt.
    const next = cli(args, dir, env);
    expect(next.stdout).toContain('\njob 1: run 2 unfinished\n');
    expect(next.stdout).toContain('\n  in_doubt              2 ');
    expect(jobsJson().map((j) => [j.status, j.process_gone, j.in_doubt])).toEqual([['interrupted', false, 2]]);
    const after = reportJson();
    expect(after.job.process_gone).toBe(false);
    expect(after.runs.map((r) => [r.status, r.process_gone, r.last_seen_at])).toEqual([['crashed', false, null], ['completed', false, null]]);
    expect(cli(['jobs'], dir).stdout).not.toContain('crashed');
  });
});
