/**
 * The progress line and the duration format: pure functions, table tests; and the bar as a
 * terminal of 60 columns receives it (a stand-in terminal stream, since a test has no TTY).
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { Io } from '../../src/io.js';
import { ROW_STATES, type RowState } from '../../src/ledger/index.js';
import { createProgressReporter, formatProgressLine, progressView, type ProgressView } from '../../src/pipeline/progress.js';
import type { ProgressSnapshot } from '../../src/pipeline/run-job.js';
import { formatDuration } from '../../src/report/index.js';

describe('formatDuration', () => {
  it.each([
    [0, '0s'],
    [640, '0.6s'],
    [9_949, '9.9s'],
    [9_950, '10s'],
    [45_000, '45s'],
    [59_499, '59s'],
    [59_500, '1m00s'],
    [65_000, '1m05s'],
    [119_600, '2m00s'],
    [3_599_499, '59m59s'],
    [3_599_500, '1h00m'],
    [3_629_000, '1h00m'],
    [7_380_000, '2h03m'],
    [86_369_000, '23h59m'],
    [86_370_000, '1d00h'],
    [3 * 86_400_000 + 4 * 3_600_000, '3d04h'],
    [-1, '–'],
    [Number.NaN, '–'],
    [null, '–'],
  ])('%s ms → %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });

  it('never shows 60 in a field below the first', () => {
    for (let ms = 0; ms < 3 * 86_400_000; ms += 1_237_391) {
      for (const near of [ms, ms + 499, ms + 500, ms + 29_999, ms + 30_000]) {
        expect(formatDuration(near), String(near)).not.toMatch(/\D60[smh]/);
      }
    }
  });
});

const counts = (over: Partial<Record<RowState, number>>): Record<RowState, number> =>
  ({ ...Object.fromEntries(ROW_STATES.map((s) => [s, 0])), ...over }) as Record<RowState, number>;

const busy: ProgressView = {
  jobId: 12,
  done: 123_456,
  total: 1_000_000,
  estimated: true,
  rowsPerSecond: 321.4,
  elapsedMs: 384_000,
  counts: counts({ succeeded: 120_000, rejected: 1_234, agent_invalid: 456, invalid: 1_700, duplicate: 66, failed: 0 }),
};

describe('formatProgressLine', () => {
  it('shows everything on a wide terminal, the estimated total and ETA marked ~', () => {
    const line = formatProgressLine(busy, 200);
    expect(line).toMatch(/^job 12 ▕█+░+▏ 123,456\/~1,000,000 rows 12% · 321 rows\/s · ETA ~45m27s · 6m24s elapsed · succeeded 120,000, rejected 1,234, agent_invalid 456, invalid 1,700, duplicate 66$/);
  });

  it('marks nothing once the total is known', () => {
    const line = formatProgressLine({ ...busy, estimated: false }, 200);
    expect(line).toContain('123,456/1,000,000 rows');
    expect(line).toContain('ETA 45m27s');
    expect(line).not.toContain('~');
  });

  it.each([20, 32, 40, 60, 80, 100, 120, 160])('fits %i columns, dropping the least useful parts first', (width) => {
    const line = formatProgressLine(busy, width);
    expect(Array.from(line).length).toBeLessThanOrEqual(width);
    if (width >= 40) expect(line).toContain('123,456/~1,000,000 rows');
    if (width >= 60) expect(line).toContain('rows/s');
    if (width >= 80) expect(line).toMatch(/ETA ~/);
    // States go before the rate and the ETA do.
    if (line.includes('succeeded')) expect(line).toContain('ETA');
  });

  it('leaves the bar out of log lines and tells an unknown total', () => {
    const line = formatProgressLine({ ...busy, done: 0, total: 0, rowsPerSecond: 0, counts: counts({}) }, Number.POSITIVE_INFINITY, { bar: false });
    expect(line).toBe('job 12 0/? rows · 6m24s elapsed');
  });
});

describe('progressView', () => {
  const snapshot = (over: Partial<ProgressSnapshot>): ProgressSnapshot => ({
    jobId: 3, counts: counts({ succeeded: 90 }), rowsRead: 100, rowsDoneThisRun: 90, rowsSkipped: 10,
    bytesRead: 2000, lastOffset: 1000, totalBytes: 10_000, totalRows: null, elapsedMs: 3000, ...over,
  });

  it('estimates the total until the file is read to the end', () => {
    expect(progressView(snapshot({}))).toMatchObject({ done: 100, total: 1000, estimated: true, rowsPerSecond: 30 });
    expect(progressView(snapshot({ totalRows: 950 }))).toMatchObject({ done: 100, total: 950, estimated: false });
  });

  it('under --limit, counts to the limit (or to the end of a shorter file)', () => {
    // [limit, rows read, file total known, expected total, estimated]: the estimate from the bytes is 1000 rows.
    const cases: [number | null, number, number | null, number, boolean][] = [
      [null, 100, null, 1000, true],
      [300, 100, null, 300, true], // the file may yet end before row 300
      [300, 300, null, 300, false], // row 300 read: the run ends there
      [5000, 100, null, 1000, true], // the file looks shorter than the limit
      [5000, 950, 950, 950, false],
      [300, 0, null, 300, true], // nothing read yet: the limit is the best guess
    ];
    for (const [limit, rowsRead, totalRows, total, estimated] of cases) {
      const view = progressView(snapshot({ limit, rowsRead, totalRows, ...(rowsRead === 0 ? { bytesRead: 0, lastOffset: 0, rowsDoneThisRun: 0, rowsSkipped: 0 } : {}) }));
      expect({ total: view.total, estimated: view.estimated }, `limit ${limit}, ${rowsRead} read`).toEqual({ total, estimated });
    }
  });
});

describe('the progress bar on a terminal', () => {
  it('draws every frame within the terminal width', () => {
    let written = '';
    const terminal = Object.assign(new Writable({
      write(chunk: Buffer, _encoding, callback) {
        written += chunk.toString();
        callback();
      },
    }), { isTTY: true, columns: 60, cursorTo: () => true, clearLine: () => true, moveCursor: () => true });
    const io: Io = {
      out: () => {}, err: () => {}, stderrIsTTY: true, stdoutIsTTY: false, env: {}, cwd: '/',
      stderrTTYStream: terminal as unknown as NodeJS.WriteStream,
    };
    const logger = { info: () => {}, warn: () => {}, error: () => {} };
    const reporter = createProgressReporter(io, logger, 'bar');
    const snapshot: ProgressSnapshot = {
      jobId: 7, counts: counts({ succeeded: 50, invalid: 2 }), rowsRead: 52, rowsDoneThisRun: 52, rowsSkipped: 0,
      bytesRead: 5200, lastOffset: 5100, totalBytes: 100_000, totalRows: null, elapsedMs: 2000,
    };
    reporter.update(snapshot);
    reporter.update({ ...snapshot, rowsDoneThisRun: 99, rowsRead: 99, totalRows: 99, elapsedMs: 4000 });
    reporter.stop();
    // eslint-disable-next-line no-control-regex
    const frames = written.replace(/\u001b(?:\[[0-9;?]*[A-Za-z]|[78])/g, '\n').split(/[\r\n]+/).filter((f) => f.trim() !== '');
    expect(frames.length).toBeGreaterThanOrEqual(2);
    for (const frame of frames) expect(Array.from(frame).length, frame).toBeLessThan(60);
    expect(frames.some((f) => f.includes('52/~1,020 rows'))).toBe(true);
    expect(frames.at(-1)).toContain('99/99 rows 100%');
  });
});
