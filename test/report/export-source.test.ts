/**
 * `export --format source` round-trips: the exported rows, read back with the input's own options,
 * equal the input's rows of those states cell for cell, their bytes are the input's bytes with the
 * three cells appended, for CSV (`;`, BOM, quoted line breaks, gzip) and NDJSON. And it refuses,
 * exit 2 with a hint, when it cannot copy the rows faithfully.
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openInput, type InputItem, type InputOptions } from '../../src/input/index.js';
import type { RowState } from '../../src/ledger/index.js';
import { exportSourceRows, SOURCE_EXPORT_COLUMNS, type SourceInput } from '../../src/report/index.js';
import { buildMixedJob } from '../fixtures/report/mixed-job.js';
import { buildSourceJob, recordSourceJob, type SourceJob, type SourceLayout } from '../fixtures/report/source-job.js';
import { createTempLedger, type TempLedger } from './_ledger.js';

const BIN = join(resolve(fileURLToPath(new URL('.', import.meta.url)), '../..'), 'bin/quote-batch.js');

function cli(args: string[], cwd: string) {
  const result = spawnSync(process.execPath, [BIN, ...args], { cwd, encoding: 'utf8', timeout: 60_000, env: { ...process.env, NO_COLOR: '1' } });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

async function readAll(path: string, options: InputOptions): Promise<InputItem[]> {
  const items: InputItem[] = [];
  for await (const item of await openInput(path, options)) items.push(item);
  return items;
}

/** The bytes of each item's record, from its offset to the next one's, without line ends. */
function rawRecords(bytes: Buffer, items: readonly InputItem[]): Buffer[] {
  return items.map((item, i) => {
    let end = items[i + 1]?.offset ?? bytes.length;
    while (end > item.offset && (bytes[end - 1] === 0x0a || bytes[end - 1] === 0x0d)) end -= 1;
    return bytes.subarray(item.offset, end);
  });
}

/** Undoes the spreadsheet-formula guard of the appended cells. */
const unguard = (cell: unknown): unknown => (typeof cell === 'string' && /^'[=+\-@\t\r]/.test(cell) ? cell.slice(1) : cell);

function sourceInput(job: SourceJob, layout: SourceLayout): SourceInput {
  const ndjson = layout === 'ndjson';
  return { path: job.inputPath, format: ndjson ? 'ndjson' : 'csv', gzip: layout === 'csv.gz', delimiter: ndjson ? ',' : (job.options.delimiter ?? ',') };
}

async function exportToFile(t: TempLedger, job: SourceJob, layout: SourceLayout, states: RowState[], name: string) {
  const chunks: Buffer[] = [];
  const count = await exportSourceRows(t.sql, { jobId: job.jobId, states, input: sourceInput(job, layout) }, (chunk) => void chunks.push(Buffer.from(chunk)));
  const path = join(t.dir, name);
  writeFileSync(path, Buffer.concat(chunks));
  return { path, count, chunks };
}

const SELECTIONS: RowState[][] = [['rejected', 'invalid', 'failed'], ['succeeded'], [], ['in_doubt', 'agent_invalid', 'duplicate']];

describe('export --format source', () => {
  let t: TempLedger;
  const jobs = new Map<SourceLayout, SourceJob>();
  beforeAll(async () => {
    t = createTempLedger();
    for (const layout of ['csv', 'csv.gz', 'ndjson', 'big-csv'] as const) jobs.set(layout, await buildSourceJob(t.db, t.dir, layout));
  });
  afterAll(() => t.remove());

  const expectedRows = (job: SourceJob, states: readonly RowState[]) =>
    [...job.items.values()].filter((item) => states.length === 0 || states.includes(job.states.get(item.rowNumber) as RowState));
  const outcome = (t: TempLedger, job: SourceJob, row: number) =>
    t.db.prepare('SELECT state, error_code, error_message FROM rows WHERE job_id = ? AND row_number = ?').get(job.jobId, row) as {
      state: string; error_code: string | null; error_message: string | null;
    };

  for (const layout of ['csv', 'csv.gz', 'big-csv'] as const) {
    for (const states of SELECTIONS) {
      it(`${layout}, ${states.length === 0 ? 'every row' : states.join(',')}: the input's records, cell for cell and byte for byte`, async () => {
        const job = jobs.get(layout) as SourceJob;
        const expected = expectedRows(job, states);
        expect(expected.length, 'the fixture has rows in these states').toBeGreaterThan(0);
        const out = await exportToFile(t, job, layout, states, `out-${layout}-${states.join('-')}.csv`);
        expect(out.count).toBe(expected.length);
        const delimiter = job.options.delimiter ?? ',';

        // The header: the input's own bytes (BOM included), the three names appended.
        const input = layout === 'csv.gz' ? gunzipSync(readFileSync(job.inputPath)) : readFileSync(job.inputPath);
        const exported = readFileSync(out.path);
        const headerEnd = input.indexOf('\r\n') + 2;
        expect(exported.subarray(0, headerEnd - 2)).toEqual(input.subarray(0, headerEnd - 2));
        const appended = `${SOURCE_EXPORT_COLUMNS.map((c) => delimiter + c).join('')}\r\n`;
        expect(exported.subarray(headerEnd - 2, headerEnd - 2 + appended.length).toString()).toBe(appended);

        const back = await readAll(out.path, job.options);
        expect(back.map((item) => item.rowNumber)).toEqual(expected.map((_, i) => i + 1));
        const originals = rawRecords(input, [...job.items.values()]);
        const exportedRaw = rawRecords(exported, back);
        back.forEach((item, i) => {
          const source = expected[i] as InputItem;
          const ledger = outcome(t, job, source.rowNumber);
          // Byte for byte: the original record, then the cells.
          expect(exportedRaw[i]?.subarray(0, originals[source.rowNumber - 1]?.length).equals(originals[source.rowNumber - 1] as Buffer), `row ${source.rowNumber} bytes`).toBe(true);
          if (source.kind === 'error') {
            expect(item.kind, `row ${source.rowNumber} stays unreadable`).toBe('error');
            return;
          }
          expect(item.kind).toBe('record');
          const record = (item as Extract<InputItem, { kind: 'record' }>).record;
          const { qb_state: state, qb_error_code: code, qb_error_message: message, ...cells } = record;
          expect(cells, `row ${source.rowNumber} cells`).toEqual(source.record);
          expect(Object.keys(record)).toEqual([...Object.keys(source.record), ...SOURCE_EXPORT_COLUMNS]);
          expect([state, code === '' ? null : code, message === '' ? null : unguard(message)]).toEqual([ledger.state, ledger.error_code, ledger.error_message]);
        });
      });
    }
  }

  for (const states of SELECTIONS) {
    it(`ndjson, ${states.length === 0 ? 'every row' : states.join(',')}: the input's objects with three keys added, other lines kept as text`, async () => {
      const job = jobs.get('ndjson') as SourceJob;
      const expected = expectedRows(job, states);
      const out = await exportToFile(t, job, 'ndjson', states, `out-ndjson-${states.join('-')}.ndjson`);
      expect(out.count).toBe(expected.length);
      const input = readFileSync(job.inputPath);
      const exported = readFileSync(out.path);
      expect(exported.subarray(0, 3).equals(input.subarray(0, 3))).toBe(true); // the BOM
      const back = await readAll(out.path, {});
      expect(back.length).toBe(expected.length);
      const originals = rawRecords(input, [...job.items.values()]).map((b) => b.toString('utf8').replace(/^\uFEFF/, ''));
      back.forEach((item, i) => {
        const source = expected[i] as InputItem;
        const ledger = outcome(t, job, source.rowNumber);
        expect(item.kind, `row ${source.rowNumber}`).toBe('record');
        const { qb_state: state, qb_error_code: code, qb_error_message: message, qb_line: line, ...rest } = (item as Extract<InputItem, { kind: 'record' }>).record;
        expect([state, code, message]).toEqual([ledger.state, ledger.error_code, ledger.error_message]);
        const original = originals[source.rowNumber - 1] as string;
        if (source.kind === 'record') {
          expect(rest).toEqual(source.record);
          // The original text up to its closing brace, as it was.
          const text = exportedRaw(exported, back, i);
          expect(text.startsWith(original.slice(0, original.lastIndexOf('}')).trimEnd()), text).toBe(true);
        } else {
          expect(line).toBe(original);
        }
      });
    });
  }

  for (const layout of ['csv', 'big-csv', 'ndjson'] as const) {
    it(`${layout}: an export fed back as a job's input and exported again has the three columns once, with the new outcomes`, async () => {
      const first = jobs.get(layout) as SourceJob;
      const ndjson = layout === 'ndjson';
      const once = await exportToFile(t, first, layout, [], `once-${layout}.${ndjson ? 'ndjson' : 'csv'}`);
      // The fixed file runs as a job of its own, whose rows get other outcomes (rows shift by one).
      const second = await recordSourceJob(t.db, once.path, first.mappingPath, first.options, ndjson);
      t.db.prepare(`UPDATE rows SET state = 'succeeded', error_code = NULL, error_message = 'second round ' || row_number WHERE job_id = ?`).run(second.jobId);
      const twice = await exportToFile(t, second, layout, [], `twice-${layout}.${ndjson ? 'ndjson' : 'csv'}`);
      const back = await readAll(twice.path, first.options);
      const before = await readAll(first.inputPath, first.options);
      expect(back.length).toBe(before.length);
      back.forEach((item, i) => {
        const source = before[i] as InputItem;
        if (item.kind !== 'record' || source.kind !== 'record') return;
        const { qb_state: state, qb_error_code: code, qb_error_message: message, qb_line: _line, ...cells } = item.record;
        expect(cells, `row ${item.rowNumber}`).toEqual(source.record);
        expect(Object.keys(item.record).filter((key) => key.startsWith('qb_'))).toEqual([...SOURCE_EXPORT_COLUMNS]);
        expect([state, code === '' ? null : code, message]).toEqual(['succeeded', null, `second round ${item.rowNumber}`]);
      });
      if (ndjson) {
        // Each key once in the text too (JSON.parse keeps the last of a key written twice).
        for (const line of readFileSync(twice.path, 'utf8').split('\n').filter((l) => l !== '')) {
          for (const key of SOURCE_EXPORT_COLUMNS) expect(line.split(`"${key}"`).length, line).toBe(2);
        }
      } else {
        // Rows the reader could not read keep their bytes; the header names each column once.
        const header = readFileSync(twice.path, 'utf8').split(/\r?\n/, 1)[0] as string;
        expect(header.split(first.options.delimiter ?? ',').filter((c) => c.startsWith('qb_'))).toEqual([...SOURCE_EXPORT_COLUMNS]);
      }
    });
  }

  it('streams: bounded writes whatever the file', async () => {
    const job = jobs.get('big-csv') as SourceJob;
    const { chunks, count } = await exportToFile(t, job, 'big-csv', [], 'out-big-all.csv');
    expect(count).toBe(job.items.size);
    expect(chunks.length).toBeGreaterThan(20);
    expect(Math.max(...chunks.map((c) => c.length))).toBeLessThan(64 * 1024 + 8 * 1024);
  });

  it('the CLI writes the same bytes to --out (mode 0600) as to standard output', () => {
    const job = jobs.get('csv') as SourceJob;
    t.db.pragma('wal_checkpoint(TRUNCATE)');
    const args = ['export', '--ledger', t.path, '--job', String(job.jobId), '--format', 'source', '--status', 'rejected,invalid,agent_invalid'];
    const toFile = cli([...args, '--out', 'to-fix.csv'], t.dir);
    expect(toFile.stderr).toMatch(/^exported 3 rows of job \d+ to .*to-fix\.csv\n$/);
    expect(toFile.code).toBe(0);
    const file = join(t.dir, 'to-fix.csv');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const toStdout = cli(args, t.dir);
    expect(toStdout.code).toBe(0);
    expect(toStdout.stdout).toBe(readFileSync(file, 'utf8'));
    expect(toStdout.stdout.startsWith('\uFEFFclick_id;first_name;note;amount;qb_state;qb_error_code;qb_error_message\r\n')).toBe(true);
  });

  it('refuses, exit 2 with a hint, when it cannot copy the rows faithfully', () => {
    const csv = jobs.get('csv') as SourceJob;
    const ndjson = jobs.get('ndjson') as SourceJob;
    const mixed = buildMixedJob(t.db); // rows without recorded positions
    t.db.pragma('wal_checkpoint(TRUNCATE)');
    const run = (job: number) => cli(['export', '--ledger', t.path, '--job', String(job), '--format', 'source'], t.dir);

    const unpositioned = run(mixed.jobId);
    expect(unpositioned.code).toBe(2);
    expect(unpositioned.stderr).toMatch(/^error: \d+ of the rows to export from job \d+ have no recorded position in the input .*\nhint: .*--format csv/);

    renameSync(csv.mappingPath, `${csv.mappingPath}.away`);
    const noMapping = run(csv.jobId);
    renameSync(`${csv.mappingPath}.away`, csv.mappingPath);
    expect(noMapping.code).toBe(2);
    expect(noMapping.stderr).toMatch(/its mapping .*mapping-csv\.yaml, which gives the input's format and delimiter, cannot be read.*\nhint: /);

    renameSync(csv.inputPath, `${csv.inputPath}.away`);
    const gone = run(csv.jobId);
    renameSync(`${csv.inputPath}.away`, csv.inputPath);
    expect(gone.code).toBe(2);
    expect(gone.stderr).toMatch(/^error: cannot export the rows of job \d+ in their input's layout: its input file .*leads-csv\.csv is gone\nhint: put back the file the job read at .*, or export the outcomes alone with --format csv\n$/);

    appendFileSync(ndjson.inputPath, '\n');
    const changed = run(ndjson.jobId);
    expect(changed.code).toBe(2);
    expect(changed.stderr).toMatch(/leads-ndjson\.ndjson has changed since the job read it \(its SHA-256 differs\)\nhint: /);
    for (const r of [unpositioned, noMapping, gone, changed]) expect(r.stdout).toBe('');
  });
});

/** The exported text of item `i` (from its offset to the next item's), without line ends. */
function exportedRaw(bytes: Buffer, items: readonly InputItem[], i: number): string {
  return (rawRecords(bytes, items)[i] as Buffer).toString('utf8').replace(/^\uFEFF/, '');
}
