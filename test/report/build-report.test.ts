import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'csv-parse/sync';
import {
  buildReport, computeHistogram, computeStats, flattenFigures, percentileOf, renderCsv, renderTable, resolveJobId,
  DEFAULT_TABLE_WIDTH as TABLE_WIDTH, type Report,
} from '../../src/report/index.js';
import { QuoteBatchError } from '../../src/errors.js';
import { buildMixedJob, type MixedJob } from '../fixtures/report/mixed-job.js';
import { buildEmptyJob } from '../fixtures/report/empty-job.js';
import { buildHostileData } from '../fixtures/report/hostile-data.js';
import { createTempLedger, type TempLedger } from './_ledger.js';
import { completionTimesBySql, computeFiguresBySql, countBinsBySql } from './_sql-figures.js';

/** Holds a report against plain SQL: every figure, each histogram bin and completion bucket. */
function expectReportMatchesSql(t: TempLedger, jobId: number): Report {
  const report = JSON.parse(JSON.stringify(buildReport(t.db, jobId))) as Report;
  const bySql = computeFiguresBySql(t.db, jobId);
  const { generated_at: _g, report_version: version, completions, premium, latency_ms: latency, ...rest } = report;
  const strip = <T extends { histogram: unknown }>({ histogram: _h, ...stats }: T) => stats;
  expect(version).toBe(1);
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

  it('equals plain SQL, figure by figure, for the latest job', () => {
    const report = expectReportMatchesSql(t, fixture.jobId);
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

  it('equals plain SQL for an older job chosen by id', () => {
    const report = expectReportMatchesSql(t, fixture.oldJobId);
    expect(report.rows.by_state.succeeded).toBe(5);
    expect(report.rows.success_rate).toBe(1);
    expect(report.premium).toMatchObject({ count: 5, min: 1001, median: 1003, p90: 1005, max: 1005 });
  });

  it('resolves the latest job by default and refuses an unknown one', () => {
    expect(resolveJobId(t.db, undefined, t.path)).toBe(fixture.jobId);
    expect(resolveJobId(t.db, fixture.oldJobId, t.path)).toBe(fixture.oldJobId);
    expect(() => resolveJobId(t.db, 999, t.path)).toThrow(QuoteBatchError);
    expect(() => resolveJobId(t.db, 999, t.path)).toThrow(/job 999 is not in ledger/);
  });

  it('renders a table in which no line is wider than 80 columns', () => {
    const text = renderTable(buildReport(t.db, fixture.jobId));
    const lines = text.trimEnd().split('\n');
    expect(lines.length).toBeGreaterThan(30);
    for (const line of lines) expect(Array.from(line).length, line).toBeLessThanOrEqual(TABLE_WIDTH);
    expect(text).toContain('succeeded');
    expect(text).toContain('nobody@example.test');
    expect(text).toContain('state_not_supported');
  });

  it('renders CSV with one line per figure, each equal to the JSON figure', () => {
    const report = buildReport(t.db, fixture.jobId);
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

describe('buildReport on edge cases', () => {
  it('reports an empty job with zeros and nulls, every key present', () => {
    const t = createTempLedger();
    try {
      const { jobId } = buildEmptyJob(t.db);
      const report = expectReportMatchesSql(t, jobId);
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

  it('keeps hostile text out of the terminal: no control characters, 80 columns', () => {
    const t = createTempLedger();
    try {
      const { jobId } = buildHostileData(t.db, 'http://127.0.0.1:9');
      expectReportMatchesSql(t, jobId);
      const table = renderTable(buildReport(t.db, jobId));
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
