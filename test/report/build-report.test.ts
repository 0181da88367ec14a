import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'csv-parse/sync';
import {
  buildReport, computeHistogram, computeStats, flattenFigures, percentileOf, readProblemRows, renderCsv, renderHtml, renderTable,
  resolveJobId, DEFAULT_TABLE_WIDTH as TABLE_WIDTH, type Report,
} from '../../src/report/index.js';
import { jobStatusLabel, runStatusLabel, stoppedNote } from '../../src/report/_buckets.js';
import { readStartingLimit } from '../../src/pipeline/run-job.js';
import { QuoteBatchError } from '../../src/errors.js';
import { buildMixedJob, type MixedJob } from '../fixtures/report/mixed-job.js';
import { buildEmptyJob } from '../fixtures/report/empty-job.js';
import { buildHostileData } from '../fixtures/report/hostile-data.js';
import { createTempLedger, insertJob, insertRow, insertRun, insertSample, iso, type TempLedger } from './_ledger.js';
import { groupsFromText } from './_groups.js';
import { bucketPacesBySql, completionTimesBySql, computeFiguresBySql, countBinsBySql, errorRowsBySql, partnerBySql } from './_sql-figures.js';

/** Holds a report against plain SQL: every figure, each histogram bin and completion bucket. */
async function expectReportMatchesSql(t: TempLedger, jobId: number): Promise<Report> {
  const report = JSON.parse(JSON.stringify(await buildReport(t.sql, jobId))) as Report;
  const bySql = computeFiguresBySql(t.db, jobId);
  const {
    generated_at: _g, report_version: version, completions, premium, latency_ms: latency, row_errors: rowErrors,
    row_error_groups: kinds, timeline, partner, ...rest
  } = report;
  const strip = <T extends { histogram: unknown }>({ histogram: _h, ...stats }: T) => stats;
  expect(version).toBe(2);
  expect({
    ...rest,
    premium: strip(premium),
    latency_ms: Object.fromEntries(Object.entries(latency).map(([k, v]) => [k, strip(v)])),
  }).toEqual(bySql);

  // Histograms: each bin holds exactly the values SQL finds between its edges.
  const premiumFrom = `(SELECT total_premium AS v FROM rows WHERE job_id = ? AND state = 'succeeded' AND total_premium IS NOT NULL)`;
  expect(premium.histogram.map((b) => b.count)).toEqual(countBinsBySql(t.db, premiumFrom, [jobId], premium.histogram));
  for (const [kind, stats] of Object.entries(latency)) {
    const from = `(SELECT duration_ms AS v FROM attempts WHERE job_id = ? AND kind = '${kind}')`;
    expect(stats.histogram.map((b) => b.count), kind).toEqual(countBinsBySql(t.db, from, [jobId], stats.histogram));
  }

  // Completions: bucket i holds the rows finished in [start + i·w, start + (i+1)·w).
  const times = completionTimesBySql(t.db, jobId);
  if (times.length === 0) {
    expect(completions.buckets).toEqual([]);
  } else {
    const start = Math.min(...times);
    expect(completions.start).toBe(new Date(start).toISOString());
    const expected = new Array<number>(completions.buckets.length).fill(0);
    for (const at of times) {
      const i = Math.min(Math.floor((at - start) / (completions.bucket_seconds * 1000)), expected.length - 1);
      expected[i] = (expected[i] ?? 0) + 1;
    }
    expect(completions.buckets).toEqual(expected);
    expect(completions.buckets.length).toBeLessThanOrEqual(60);
  }

  // Error kinds: they add up to the rows of each state and code, their samples are rows of theirs
  // (in row order, the first one's message recorded), and no kind names a row.
  expect(kinds).toBe(rowErrors.length); // every fixture has fewer than 100 kinds
  const byStateCode: Record<string, number> = {};
  for (const g of rowErrors) {
    const key = `${g.state}|${g.error_code ?? ''}`;
    byStateCode[key] = (byStateCode[key] ?? 0) + g.rows;
    expect(g.kind, g.kind).not.toMatch(/\b(?:rows?|lines?) \d/);
    expect(g.sample_rows.length).toBe(Math.min(3, g.rows));
    expect([...g.sample_rows].sort((a, b) => a - b)).toEqual(g.sample_rows);
    const first = t.db.prepare('SELECT state, error_code, error_message FROM rows WHERE job_id = ? AND row_number = ?').get(jobId, g.sample_rows[0]);
    expect(first).toEqual({ state: g.state, error_code: g.error_code, error_message: g.error_message });
  }
  expect(byStateCode).toEqual(errorRowsBySql(t.db, jobId));

  // Timeline: one segment per run from its start; completions add up; samples and their attempts add up.
  const runs = t.db.prepare('SELECT id, started_at FROM runs WHERE job_id = ? ORDER BY started_at, id').all(jobId) as { id: number; started_at: string }[];
  expect(timeline.segments.map((s) => [s.run_id, s.start])).toEqual(runs.map((r) => [r.id, new Date(Date.parse(r.started_at)).toISOString()]));
  const buckets = timeline.segments.flatMap((s) => s.buckets);
  expect(buckets.reduce((n, b) => n + b.rows_completed, 0) + timeline.rows_outside_runs).toBe(report.timing.rows_completed);
  expect(buckets.reduce((n, b) => n + b.samples, 0)).toBe(partner.samples);
  const sampleAttempts = t.db.prepare('SELECT TOTAL(attempts) FROM run_samples WHERE run_id IN (SELECT id FROM runs WHERE job_id = ?)').pluck().get(jobId);
  expect(buckets.reduce((n, b) => n + b.attempts, 0)).toBe(sampleAttempts);
  expect(timeline.segments.map((s) => s.buckets.map((b) => b.pace_rate))).toEqual(bucketPacesBySql(t.db, timeline));
  for (const segment of timeline.segments) {
    expect(Date.parse(segment.end)).toBeGreaterThanOrEqual(Date.parse(segment.start));
    expect(segment.buckets.length).toBe(Math.floor((Date.parse(segment.end) - Date.parse(segment.start)) / (timeline.bucket_seconds * 1000)) + 1);
  }
  expect(partner).toEqual(partnerBySql(t.db, jobId));
  return report;
}

describe('buildReport on the mixed-job ledger', () => {
  let t: TempLedger;
  let fixture: MixedJob;
  beforeAll(() => {
    t = createTempLedger();
    fixture = buildMixedJob(t.db);
  });
  afterAll(() => t.remove());

  it('equals plain SQL, figure by figure, for the latest job', async () => {
    const report = await expectReportMatchesSql(t, fixture.jobId);
    // The fixture was built to exercise every section: guard against a fixture that tests nothing.
    expect(report.rows.total).toBe(fixture.rowCount);
    for (const state of ['succeeded', 'rejected', 'agent_invalid', 'invalid', 'duplicate', 'failed', 'in_doubt', 'pending'] as const) {
      expect(report.rows.by_state[state], state).toBeGreaterThan(0);
    }
    expect(report.attempts.retries).toBeGreaterThan(0);
    expect(report.attempts.rows_retried).toBeGreaterThan(0);
    expect(report.invalid_agents.map((a) => a.email).sort()).toEqual([...fixture.blockedAgents].sort());
    expect(report.invalid_agents.every((a) => a.message !== null && a.blocked_rows > 0)).toBe(true);
    expect(report.premium.count).toBe(report.rows.by_state.succeeded);
    expect(report.latency_ms.quote.count).toBeGreaterThan(report.rows.by_state.succeeded);
    expect(report.runs.map((r) => r.status)).toEqual(['crashed', 'interrupted']);
    expect(report.timing.rows_per_second).not.toBeNull();
    expect(report.completions.buckets.reduce((a, b) => a + b, 0)).toBe(report.timing.rows_completed);
  });

  it('equals plain SQL for an older job chosen by id', async () => {
    const report = await expectReportMatchesSql(t, fixture.oldJobId);
    expect(report.rows.by_state.succeeded).toBe(5);
    expect(report.rows.success_rate).toBe(1);
    expect(report.premium).toMatchObject({ count: 5, min: 1001, median: 1003, p90: 1005, max: 1005 });
  });

  it('resolves the latest job by default and refuses an unknown one', async () => {
    expect(await resolveJobId(t.sql, undefined, t.path)).toBe(fixture.jobId);
    expect(await resolveJobId(t.sql, fixture.oldJobId, t.path)).toBe(fixture.oldJobId);
    await expect(resolveJobId(t.sql, 999, t.path)).rejects.toThrow(QuoteBatchError);
    await expect(resolveJobId(t.sql, 999, t.path)).rejects.toThrow(/job 999 is not in ledger/);
  });

  it('renders a table as wide as asked (100 by default), the error kinds whole and as in the JSON', async () => {
    const report = await buildReport(t.sql, fixture.jobId);
    for (const width of [undefined, 80, 200]) {
      const text = renderTable(report, { width });
      const lines = text.trimEnd().split('\n');
      expect(lines.length).toBeGreaterThan(30);
      for (const line of lines) expect(Array.from(line).length, line).toBeLessThanOrEqual(width ?? TABLE_WIDTH);
      expect(text).toContain('nobody@example.test');
      expect(groupsFromText(text, 'Row errors by kind')).toEqual(
        report.row_errors.map((g) => ({ rows: g.rows, kind: g.kind, sampleRows: g.sample_rows })),
      );
    }
    // On a wide terminal a kind takes one line.
    const wide = renderTable(report, { width: 200 });
    for (const g of report.row_errors) expect(wide).toContain(`  ${g.kind}\n`);
    expect(renderTable(report, { width: 200 })).toMatch(/Partner's limit: settled at [\d.]+ requests in flight/);
  });

  it('groups the error rows by kind: one kind per mistake, whatever the row, value or US state', async () => {
    const report = await buildReport(t.sql, fixture.jobId);
    const kinds = (state: string) => report.row_errors.filter((g) => g.state === state);
    expect(kinds('invalid').map((g) => [g.kind, g.rows])).toEqual([
      ['invalid · E_VALIDATION · application.drivers[].dob: expected YYYY-MM-DD (column driver1_dob)', report.rows.by_state.invalid],
    ]);
    expect(kinds('rejected').map((g) => g.error_code).sort()).toEqual(['eligible_vehicle_not_found', 'missing_required_parameter', 'state_not_supported']);
    expect(report.row_error_groups).toBe(8);
  });

  it('puts each completion in the run it happened in, in its bucket', async () => {
    const report = await buildReport(t.sql, fixture.jobId);
    const { bucket_seconds: w, segments } = report.timeline;
    expect(segments.map((s) => s.status)).toEqual(['crashed', 'interrupted']);
    expect(report.timeline.rows_outside_runs).toBe(0);
    const times = completionTimesBySql(t.db, fixture.jobId);
    segments.forEach((segment, i) => {
      const start = Date.parse(segment.start);
      const next = segments[i + 1];
      const inRun = times.filter((at) => at >= start && (next === undefined || at < Date.parse(next.start)));
      const expected = new Array<number>(segment.buckets.length).fill(0);
      for (const at of inRun) {
        const i = Math.floor((at - start) / (w * 1000));
        expected[i] = (expected[i] ?? 0) + 1;
      }
      expect(segment.buckets.map((b) => b.rows_completed), `run ${segment.run_id}`).toEqual(expected);
      // A sample per second: every bucket of the run has w of them but a last, partial one.
      expect(segment.buckets.slice(0, -1).every((b) => b.samples === w)).toBe(true);
    });
  });

  it('says where the partner\'s limit settled: below the limit the samples ran into', async () => {
    const { partner } = await buildReport(t.sql, fixture.jobId);
    expect(partner.settled_run_id).toBe(fixture.jobId + 1); // the second run of the job (run ids: old job's, then 2, 3)
    expect(partner.settled_limit).toBeGreaterThan(fixture.partnerLimit / 2);
    expect(partner.settled_limit).toBeLessThanOrEqual(fixture.partnerLimit);
    expect(partner.limit_max).toBeGreaterThan(fixture.partnerLimit);
    expect(partner.throttled).toBeGreaterThan(0);
  });

  it('draws no pace for runs that were never paced', async () => {
    const report = await buildReport(t.sql, fixture.jobId);
    expect(report.timeline.segments.flatMap((s) => s.buckets).every((b) => b.pace_rate === null)).toBe(true);
    const html = renderHtml(report, await readProblemRows(t.sql, fixture.jobId));
    expect(html).toContain('class="mark rows-per-second"');
    expect(html).not.toContain('class="mark pace"');
    expect(html).not.toMatch(/pace, requests/);
    const table = renderTable(report, { width: 200 });
    expect(table).toMatch(/^ {2}rows \/ s /m);
    expect(table).not.toMatch(/pace/);
  });

  it('renders CSV with one line per figure, each equal to the JSON figure', async () => {
    const report = await buildReport(t.sql, fixture.jobId);
    const records = parse(renderCsv(report), { columns: true }) as { figure: string; value: string }[];
    const figures = flattenFigures(JSON.parse(JSON.stringify(report)));
    expect(records.length).toBe(figures.length);
    const byName = new Map(records.map((r) => [r.figure, r.value]));
    expect(byName.size).toBe(records.length);
    for (const [name, value] of figures) {
      expect(byName.get(name), name).toBe(value === null ? '' : String(value));
    }
    expect(byName.get('rows.by_state.succeeded')).toBe(String(report.rows.by_state.succeeded));
    expect(byName.get('latency_ms.quote.p90')).toBe(String(report.latency_ms.quote.p90));
  });
});

describe('buildReport on a run that paced (a partner with a rate cap)', () => {
  it.each<[string, (second: number) => number | null, number | null]>([
    // The settled run's paces swing about 20 requests/s: the median of its last samples.
    ['paced throughout', (second) => 19 + (second % 3), 20],
    // Paced in fewer than half of the samples the limit comes from: no pace is claimed.
    ['paced only now and then', (second) => (second % 3 === 0 ? 20 : null), null],
  ])('%s: settled_pace as by SQL, and the table and the HTML say it', async (_label, paceAt, expected) => {
    const t = createTempLedger();
    try {
      const fixture = buildMixedJob(t.db);
      const run = (await buildReport(t.sql, fixture.jobId)).partner.settled_run_id;
      const update = t.db.prepare('UPDATE run_samples SET pace_rate = ? WHERE run_id = ? AND elapsed_ms = ?');
      const seconds = t.db.prepare('SELECT elapsed_ms FROM run_samples WHERE run_id = ?').pluck().all(run) as number[];
      for (const ms of seconds) update.run(paceAt(ms / 1000), run, ms);
      const report = await expectReportMatchesSql(t, fixture.jobId);
      expect(report.partner.settled_pace).toBe(expected);
      const table = renderTable(report, { width: 200 });
      const html = renderHtml(report, await readProblemRows(t.sql, fixture.jobId));
      if (expected === null) {
        expect(table).not.toMatch(/paced at/);
        expect(html).not.toMatch(/paced at/);
      } else {
        expect(table).toMatch(/Partner's limit: settled at [\d.]+ requests in flight, paced at 20\.0 requests\/s/);
        expect(html).toContain('paced at 20.0 requests/s since the partner');
      }
      // Over time, the pace is drawn and sparked wherever the run paced, whether or not it settled at one.
      const segment = report.timeline.segments.find((s) => s.run_id === run);
      const paces = segment?.buckets.map((b) => b.pace_rate) ?? [];
      expect(paces.filter((p) => p !== null).length).toBeGreaterThan(paces.length / 3);
      for (const pace of paces.filter((p) => p !== null)) expect(pace >= 19 && pace <= 21, `pace ${pace}`).toBe(true);
      // The job's other run was not paced.
      expect(report.timeline.segments.filter((s) => s.run_id !== run).flatMap((s) => s.buckets).every((b) => b.pace_rate === null)).toBe(true);
      expect(html.match(/<path class="mark pace"/g)).toHaveLength(1);
      expect(html).toContain('pace, requests / s (left)</span>');
      expect(html).toContain('rows / s · pace, requests / s</text>');
      expect(table).toMatch(/^ {2}pace, requests \/ s +[▁-█ ]+│[▁-█ ]+ max 2[01]$/m);
    } finally {
      t.remove();
    }
  });
});

describe('buildReport on a run the partner announced its limit to', () => {
  const announced = (over: Record<string, unknown>): string => JSON.stringify({
    style: 'kong', headers: 'X-RateLimit-Limit-Second (Kong)', windows: [{ name: 'second', limit: 40, window_s: 1 }], rate: 39,
    distrusted_after_ms: null, throttled_under: 0, answers_under: 900, spent_until: null, ...over,
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    ['paced by it', {}, /Announced: 40 requests per second \(X-RateLimit-Limit-Second \(Kong\)\) in run \d+: it paced the sends in \d+ of the \d+ s it was in force/],
    ['not kept to', { distrusted_after_ms: 1200, throttled_under: 4, answers_under: 7 },
      /Announced: 40 requests per second \(X-RateLimit-Limit-Second \(Kong\)\) in run \d+, but it was not kept to: 4 of the 7 requests sent within it were answered 429, so the run ignored it after 1\.2s and learned the pace from the 429s/],
    ['a quota spent', { windows: [{ name: 'hour', limit: 500, window_s: 3600 }], rate: null, spent_until: '2024-01-01T01:00:00.000Z' },
      /Announced: 500 requests per 1h \(X-RateLimit-Limit-Second \(Kong\)\) in run \d+: its quota was spent, until 2024-01-01T01:00:00\.000Z/],
  ])('%s: as by SQL, and the table and the HTML say it', async (_label, over, sentence) => {
    const t = createTempLedger();
    try {
      const fixture = buildMixedJob(t.db);
      const run = (await buildReport(t.sql, fixture.jobId)).partner.settled_run_id as number;
      t.db.prepare('UPDATE runs SET announced_json = ? WHERE id = ?').run(announced(over), run);
      // An announced rate in force in two seconds of three; paced at it in one of those.
      const seconds = t.db.prepare('SELECT elapsed_ms FROM run_samples WHERE run_id = ? ORDER BY elapsed_ms').pluck().all(run) as number[];
      const update = t.db.prepare('UPDATE run_samples SET announced_rate = ?, pace_rate = ? WHERE run_id = ? AND elapsed_ms = ?');
      seconds.forEach((ms, i) => update.run(i % 3 === 2 ? null : 39, i % 3 === 0 ? 39 : 20, run, ms));
      const report = await expectReportMatchesSql(t, fixture.jobId);
      expect(report.partner.announced).toMatchObject({ run_id: run, announced_seconds: expect.any(Number), paced_seconds: expect.any(Number) });
      expect(report.partner.announced!.paced_seconds).toBeGreaterThan(0);
      expect(report.partner.announced!.paced_seconds).toBeLessThan(report.partner.announced!.announced_seconds);
      const table = renderTable(report, { width: 400 });
      expect(table.replace(/\n {4}/g, ' ')).toMatch(sentence);
      const html = renderHtml(report, await readProblemRows(t.sql, fixture.jobId));
      expect(html).toMatch(new RegExp(`The partner announced ${sentence.source.replace(/^Announced: /, '')}`));
    } finally {
      t.remove();
    }
  });

  it('an unreadable record is no announcement', async () => {
    const t = createTempLedger();
    try {
      const fixture = buildMixedJob(t.db);
      t.db.prepare('UPDATE runs SET announced_json = ? WHERE job_id = ?').run('{not json', fixture.jobId);
      expect((await buildReport(t.sql, fixture.jobId)).partner.announced).toBeNull();
    } finally {
      t.remove();
    }
  });
});

describe('buildReport on edge cases', () => {
  it('reports an empty job with zeros and nulls, every key present', async () => {
    const t = createTempLedger();
    try {
      const { jobId } = buildEmptyJob(t.db);
      const report = await expectReportMatchesSql(t, jobId);
      expect(report.rows.total).toBe(0);
      expect(report.rows.success_rate).toBeNull();
      expect(report.premium).toEqual({ count: 0, min: null, median: null, p90: null, p95: null, p99: null, max: null, mean: null, histogram: [] });
      expect(report.completions).toEqual({ start: null, bucket_seconds: 1, buckets: [] });
      expect(report.timing.rows_per_second).toBeNull();
      const table = renderTable(report);
      for (const line of table.split('\n')) expect(Array.from(line).length).toBeLessThanOrEqual(TABLE_WIDTH);
    } finally {
      t.remove();
    }
  });

  it('draws a run shorter than a sample as dots, not as lines of one point (which draw nothing), and says its limit was the ceiling', async () => {
    const t = createTempLedger();
    try {
      const started = Date.now() - 5000;
      const jobId = insertJob(t.db, { status: 'completed', created_at: iso(started) });
      const runId = insertRun(t.db, { job_id: jobId, started_at: iso(started), finished_at: iso(started + 800), status: 'completed', options_json: '{"concurrency":8,"adaptive":true}' });
      for (let n = 1; n <= 20; n += 1) insertRow(t.db, { job_id: jobId, row_number: n, state: 'succeeded', attempts: 1, updated_at: iso(started + 40 * n) });
      insertSample(t.db, { run_id: runId, elapsed_ms: 800, at: iso(started + 800), concurrency_limit: 8, in_flight: 0, attempts: 20, throttled: 0, errors: 0, rows_done: 20, latency_p50_ms: 60 });
      const report = await buildReport(t.sql, jobId);
      const html = renderHtml(report, await readProblemRows(t.sql, jobId));
      // It never left its --concurrency: a limit of the user's, which the report says.
      expect(report.partner).toMatchObject({ settled_limit: 8, settled_ceiling: 8 });
      expect(renderTable(report)).toContain("Partner's limit: settled at 8 requests in flight (the --concurrency ceiling: no lower limit shown)\n");
      expect(html).toContain('settled at 8 requests in flight (the median limit of its last 1 seconds), its --concurrency ceiling: the partner showed no lower limit;');
      expect(html).toContain('>the --concurrency ceiling, 8</text>');
      expect(html).not.toContain('>settled at 8</text>');
      for (const series of ['limit', 'in-flight', 'rows-per-second']) {
        expect(html, series).toMatch(new RegExp(`<circle class="mark ${series}" cx="[\\d.]+" cy="[\\d.]+" r="3.5"`));
        expect(html, series).not.toContain(`<path class="mark ${series}"`);
      }
    } finally {
      t.remove();
    }
  });

  it('writes a fractional settled limit as the run summary does ("4.5"), not rounded to another figure', async () => {
    const t = createTempLedger();
    try {
      const started = Date.now() - 60_000;
      const jobId = insertJob(t.db, { status: 'completed', created_at: iso(started) });
      const runId = insertRun(t.db, { job_id: jobId, started_at: iso(started), finished_at: iso(started + 20_000), status: 'completed', options_json: '{"concurrency":16,"adaptive":true}' });
      // Cut by 429s from 16 to 9, then halved once to 4.5, where it stays.
      for (let s = 1; s <= 20; s += 1) {
        const limit = s <= 2 ? 16 : s <= 4 ? 9 : 4.5;
        insertSample(t.db, { run_id: runId, elapsed_ms: s * 1000, at: iso(started + s * 1000), concurrency_limit: limit, in_flight: limit, attempts: 40, throttled: s <= 4 ? 3 : 0, errors: 0, rows_done: 37, latency_p50_ms: 100 });
      }
      const report = await expectReportMatchesSql(t, jobId);
      expect(report.partner).toMatchObject({ settled_limit: 4.5, settled_ceiling: 16, limit_max: 16 });
      expect(renderTable(report)).toContain("Partner's limit: settled at 4.5 requests in flight\n");
      const html = renderHtml(report, await readProblemRows(t.sql, jobId));
      expect(html).toContain('Run 1 settled at 4.5 requests in flight (the median limit of its last 10 seconds)');
      expect(html).toContain('>settled at 4.5</text>');
      expect(html).toContain('<div class="kpi"><b>4.5</b><span>settled limit</span></div>');
    } finally {
      t.remove();
    }
  });

  it('takes the settled limit from before an outage that halted a run, not from the back-off after it', async () => {
    const t = createTempLedger();
    try {
      const t0 = Date.now() - 600_000;
      const jobId = insertJob(t.db, { status: 'completed', created_at: iso(t0) });
      const options = '{"concurrency":8,"adaptive":true}';
      // Run 1: 20 s at its ceiling of 8 with every request answered, then 25 s of a partner down
      // (every request a failure; the window cut to 1), then halted. Run 2: 3 s at 8, completed.
      const run1 = insertRun(t.db, { job_id: jobId, started_at: iso(t0), finished_at: iso(t0 + 45_000), status: 'halted', options_json: options });
      for (let s = 1; s <= 45; s += 1) {
        const down = s > 20;
        insertSample(t.db, {
          run_id: run1, elapsed_ms: s * 1000, at: iso(t0 + s * 1000), concurrency_limit: down ? Math.max(1, 8 * 0.8 ** (s - 20)) : 8,
          in_flight: down ? 1 : 8, attempts: down ? (s % 2) : 80, throttled: 0, errors: down ? (s % 2) : 0, rows_done: down ? 0 : 80, latency_p50_ms: down ? null : 100,
        });
      }
      const t1 = t0 + 100_000;
      const run2 = insertRun(t.db, { job_id: jobId, started_at: iso(t1), finished_at: iso(t1 + 3000), status: 'completed', options_json: options });
      for (let s = 1; s <= 3; s += 1) {
        insertSample(t.db, { run_id: run2, elapsed_ms: s * 1000, at: iso(t1 + s * 1000), concurrency_limit: 8, in_flight: 8, attempts: 80, throttled: 0, errors: 0, rows_done: 80, latency_p50_ms: 100 });
      }
      const report = await expectReportMatchesSql(t, jobId);
      // Run 1 has the most samples the partner answered (20 against 3): its last 10 of them.
      expect(report.partner).toMatchObject({ settled_run_id: run1, settled_limit: 8, settled_samples: 10, settled_ceiling: 8 });
      expect(renderTable(report)).toContain("Partner's limit: settled at 8 requests in flight (the --concurrency ceiling: no lower limit shown)\n");
      // Where a run starts the next night: halted runs are not remembered at all; run 2 is.
      expect((await readStartingLimit(t.sql, { environment: 'sandbox', operation: 'quote', baseUrl: 'http://127.0.0.1:4010' }))?.runId).toBe(run2);
    } finally {
      t.remove();
    }
  });

  it('a breaker left open until Ctrl-C, its probes answered and its trial quotes failing: the limit from before, here and for the next run', async () => {
    const t = createTempLedger();
    try {
      const t0 = Date.now() - 600_000;
      const jobId = insertJob(t.db, { status: 'interrupted', created_at: iso(t0) });
      const runId = insertRun(t.db, { job_id: jobId, started_at: iso(t0), finished_at: iso(t0 + 50_000), status: 'interrupted', options_json: '{"concurrency":32,"adaptive":true}' });
      // 30 s at a limit of 12 the partner set (its window in use), then 20 s of the breaker open: each
      // second a probe answered and a trial quote answered 503, the window cut down to 1.
      for (let s = 1; s <= 50; s += 1) {
        const down = s > 30;
        insertSample(t.db, {
          run_id: runId, elapsed_ms: s * 1000, at: iso(t0 + s * 1000), concurrency_limit: down ? Math.max(1, 12 * 0.8 ** (s - 30)) : 12,
          in_flight: down ? 1 : 11, attempts: down ? 2 : 100, throttled: 0, errors: down ? 1 : 0, rows_done: down ? 0 : 100,
          latency_p50_ms: 100, submits_answered: down ? 0 : 100,
        });
      }
      const report = await expectReportMatchesSql(t, jobId);
      expect(report.partner).toMatchObject({ settled_run_id: runId, settled_limit: 12, settled_samples: 10, settled_held_by_run: false });
      // An interrupted run is remembered: the next run starts from 12, not from the outage's 1.
      expect(await readStartingLimit(t.sql, { environment: 'sandbox', operation: 'quote', baseUrl: 'http://127.0.0.1:4010' })).toMatchObject({ runId, limit: 12, used: true });
    } finally {
      t.remove();
    }
  });

  it('counts rows settled by resolve after a run outside it, and ends the run where it ended', async () => {
    const t = createTempLedger();
    try {
      const t0 = Date.now() - 600_000;
      const jobId = insertJob(t.db, { status: 'completed', created_at: iso(t0) });
      const runId = insertRun(t.db, { job_id: jobId, started_at: iso(t0), finished_at: iso(t0 + 4000), status: 'completed' });
      for (let n = 1; n <= 10; n += 1) insertRow(t.db, { job_id: jobId, row_number: n, state: 'succeeded', attempts: 1, updated_at: iso(t0 + 300 * n) });
      for (let s = 1; s <= 4; s += 1) {
        insertSample(t.db, { run_id: runId, elapsed_ms: s * 1000, at: iso(t0 + s * 1000), concurrency_limit: 4, in_flight: 2, attempts: 3, throttled: 0, errors: 0, rows_done: 3, latency_p50_ms: 60 });
      }
      // Rows 11 and 12 were left in doubt; 8 s after the run ended, ops settled them as succeeded.
      const resolvedAt = iso(t0 + 12_000);
      for (const n of [11, 12]) {
        insertRow(t.db, { job_id: jobId, row_number: n, state: 'succeeded', attempts: 1, updated_at: resolvedAt });
        t.db.prepare(`INSERT INTO resolutions (job_id, row_number, from_state, to_state, note, resolved_at) VALUES (?, ?, 'in_doubt', 'succeeded', 'checked', ?)`)
          .run(jobId, n, resolvedAt);
      }
      const report = await expectReportMatchesSql(t, jobId);
      expect(report.timeline.rows_outside_runs).toBe(2);
      const [segment] = report.timeline.segments;
      expect(segment?.end).toBe(iso(t0 + 4000));
      expect(segment?.buckets.reduce((n, b) => n + b.rows_completed, 0)).toBe(10);
    } finally {
      t.remove();
    }
  });

  it('keeps hostile text out of the terminal: no control characters, 80 columns', async () => {
    const t = createTempLedger();
    try {
      const { jobId } = buildHostileData(t.db, 'http://127.0.0.1:9');
      await expectReportMatchesSql(t, jobId);
      const table = renderTable(await buildReport(t.sql, jobId));
      // eslint-disable-next-line no-control-regex
      expect(table.replaceAll('\n', '')).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
      for (const line of table.split('\n')) expect(Array.from(line).length).toBeLessThanOrEqual(TABLE_WIDTH);
    } finally {
      t.remove();
    }
  });
});

describe('statistics', () => {
  it('uses nearest-rank percentiles', () => {
    const values = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
    expect(percentileOf(values, 50)).toBe(5);
    expect(percentileOf(values, 90)).toBe(9);
    expect(percentileOf(values, 99)).toBe(10);
    expect(percentileOf([7], 50)).toBe(7);
    expect(computeStats([2, 4, 9])).toEqual({ count: 3, min: 2, median: 4, p90: 9, p95: 9, p99: 9, max: 9, mean: 5 });
  });

  it('bins every value exactly once, edges included', () => {
    const values = [0.1, 0.2, 0.3, 0.3, 0.7, 1.9, 2];
    const bins = computeHistogram(values, 20);
    expect(bins.reduce((a, b) => a + b.count, 0)).toBe(values.length);
    for (const v of values) {
      const holders = bins.filter((b, i) => v >= b.from && (i === bins.length - 1 ? v <= b.to : v < b.to));
      expect(holders.length, String(v)).toBe(1);
    }
    expect(computeHistogram([5, 5, 5])).toEqual([{ from: 5, to: 5, count: 3 }]);
  });

  it('gives far outliers one overflow bin so the bulk stays readable', () => {
    const values = [...Array.from({ length: 200 }, (_, i) => 50 + i), 30_000];
    const bins = computeHistogram(values, 20);
    const last = bins[bins.length - 1];
    expect(last).toEqual({ from: expect.any(Number), to: 30_000, count: 1 + values.filter((v) => v < 30_000 && v >= (last?.from ?? 0)).length });
    expect(bins.slice(0, -1).every((b) => b.to - b.from === 10)).toBe(true);
    expect(bins.reduce((a, b) => a + b.count, 0)).toBe(values.length);
    expect(computeHistogram([])).toEqual([]);
  });
});

describe('the status of a job whose newest run had a --limit', () => {
  const reportOf = (total: number | null): Report => ({
    job: { status: 'interrupted', total_rows: total },
    runs: [{ id: 1, status: 'completed', limit: 1000, started_at: '', finished_at: null, tool_version: '', seconds: null, end_reason: null }],
  }) as unknown as Report;
  it('says the run stopped at its --limit only when no run read the input to its end', () => {
    expect(jobStatusLabel(reportOf(null))).toBe('interrupted (run 1 stopped at --limit 1000)');
    // 200 rows read to the end under --limit 1000, some left failed: interrupted for that, not for the limit.
    expect(jobStatusLabel(reportOf(200))).toBe('interrupted');
  });
});

describe('the status of a job whose run process is gone (killed, not yet recorded), and why a run stopped', () => {
  const run = (id: number, gone: boolean, seen: string | null = null) => ({
    id, status: 'running', limit: null, started_at: '', finished_at: null, tool_version: '', seconds: null, process_gone: gone, last_seen_at: seen, end_reason: null,
  });
  const reportOf = (processGone: boolean, runs: ReturnType<typeof run>[], inFlight = 2): Report => ({
    job: { status: 'running', total_rows: null, process_gone: processGone },
    rows: { by_state: { in_flight: inFlight } },
    runs,
  }) as unknown as Report;

  it.each([
    ['one run gone', reportOf(true, [run(1, true, '2026-11-26T12:50:30.123Z')]), "crashed (run 1's process is gone)",
      'last sign of life 2026-11-26 12:50:30Z; the next run (or resolve) records it crashed and its 2 rows in flight in doubt'],
    ['two runs gone, none seen, one row in flight', reportOf(true, [run(2, true), run(3, true)], 1), 'crashed (the processes of runs 2, 3 are gone)',
      'the run stopped without recording it; the next run (or resolve) records it crashed and its 1 row in flight in doubt'],
    ['alive', reportOf(false, [run(1, false)]), 'running', undefined],
  ] as const)('%s', (_name, report, label, note) => {
    expect(jobStatusLabel(report)).toBe(label);
    expect(stoppedNote(report)).toBe(note);
  });

  it('says why the last run of a job not completed stopped, as it recorded', () => {
    const stopped = (jobStatus: string, reason: string | null): Report => ({
      job: { status: jobStatus, total_rows: 200, process_gone: false },
      rows: { by_state: { in_flight: 0 } },
      runs: [{ ...run(1, false), status: 'completed', end_reason: null }, { ...run(2, false), status: 'halted', end_reason: reason }],
    }) as unknown as Report;
    expect(stoppedNote(stopped('interrupted', 'the partner did not recover within --max-outage (10m)'))).toBe('run 2 halted: the partner did not recover within --max-outage (10m)');
    expect(stoppedNote(stopped('interrupted', null))).toBeUndefined();
    expect(stoppedNote(stopped('completed', 'stopped after --max-runtime 20s'))).toBeUndefined();
  });

  it('calls the run crashed, not yet recorded, only while its process is gone', () => {
    expect(runStatusLabel(run(1, true) as unknown as Report['runs'][number])).toBe('crashed (not yet recorded)');
    expect(runStatusLabel(run(1, false) as unknown as Report['runs'][number])).toBe('running');
  });
});
