/**
 * `export --format source` for the rows most likely to need fixing, byte for byte: invalid UTF-8
 * (to standard output as to `--out`, CSV and NDJSON), lines that are not JSON objects, a CSV
 * record too long to copy, and a file whose line ends were converted to CR LF twice.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MAX_RECORD_BYTES, openInput, type InputItem } from '../../src/input/index.js';
import { exportSourceRows } from '../../src/report/index.js';
import { CLI, cliEnv } from '../helpers/cli.js';
import { createTempLedger, insertJob, insertRow, iso, type TempLedger } from './_ledger.js';

interface Job {
  jobId: number;
  path: string;
  format: 'csv' | 'ndjson';
  items: InputItem[];
}

/** Writes `bytes` as the input of a new job whose rows are what the reader gives: records `succeeded`, unreadable rows `invalid`. */
async function addJob(t: TempLedger, name: string, bytes: Buffer): Promise<Job> {
  const format = name.endsWith('.ndjson') ? 'ndjson' : 'csv';
  const path = join(t.dir, name);
  writeFileSync(path, bytes);
  const mappingPath = join(t.dir, `${name}.yaml`);
  writeFileSync(mappingPath, 'version: 1\nfields:\n  tracking.click_id: click_id\n');
  const items: InputItem[] = [];
  for await (const item of await openInput(path)) items.push(item);
  const created = Date.now() - 60_000;
  const jobId = insertJob(t.db, {
    input_path: path, input_format: format, mapping_path: mappingPath, status: 'completed', total_rows: items.length,
    created_at: iso(created), finished_at: iso(created + 1000), input_sha256: createHash('sha256').update(bytes).digest('hex'),
  });
  for (const item of items) {
    insertRow(t.db, {
      job_id: jobId, row_number: item.rowNumber, state: item.kind === 'record' ? 'succeeded' : 'invalid',
      error_code: item.kind === 'record' ? null : 'input_error', error_message: item.kind === 'record' ? null : item.message,
      updated_at: iso(created + item.rowNumber), source_offset: item.offset, source_line: item.line,
    });
  }
  return { jobId, path, format, items };
}

async function exportBytes(t: TempLedger, job: Job, states: ('succeeded' | 'invalid')[] = []): Promise<Buffer> {
  const chunks: Buffer[] = [];
  const input = { path: job.path, format: job.format, gzip: false, delimiter: ',' } as const;
  await exportSourceRows(t.sql, { jobId: job.jobId, states, input }, (chunk) => void chunks.push(Buffer.from(chunk)));
  return Buffer.concat(chunks);
}

function cli(args: readonly string[], cwd: string): { code: number | null; stdout: Buffer; stderr: string } {
  const result = spawnSync(process.execPath, [CLI, ...args], { cwd, env: cliEnv(), timeout: 60_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr.toString('utf8') };
}

const latin1 = (text: string): Buffer => Buffer.from(text, 'latin1');
const outcome = (state: string, code: string | null, message: string | null): string =>
  `"qb_state":${JSON.stringify(state)},"qb_error_code":${JSON.stringify(code)},"qb_error_message":${JSON.stringify(message)}}`;

describe('export --format source, byte for byte', () => {
  let t: TempLedger;
  let csv: Job;
  let ndjson: Job;

  beforeAll(async () => {
    t = createTempLedger();
    // Row 1 was written in Latin-1 (é is the single byte 0xE9): the reader refused it.
    csv = await addJob(t, 'latin1.csv', Buffer.concat([Buffer.from('click_id,name\r\n'), latin1('c-1,Ren\xe9e\r\n'), Buffer.from('c-2,Bo\r\n')]));
    ndjson = await addJob(t, 'mixed.ndjson', Buffer.concat([
      latin1('{"click_id":"n-1","name":"Ren\xe9e"}  \n'), // an object, invalid UTF-8 inside a string
      Buffer.from('{"click_id":"n-2"}\r\n'),
      Buffer.from('[1,"two"]\n'), // JSON, not an object
      latin1('not json \xe9\n'), // neither JSON nor UTF-8
      Buffer.from('{}\n'),
    ]));
    t.db.pragma('wal_checkpoint(TRUNCATE)');
  });
  afterAll(() => t.remove());

  it('NDJSON: an object keeps its bytes up to its closing brace, invalid UTF-8 included', async () => {
    const lines = (await exportBytes(t, ndjson)).toString('latin1').split(/\r?\n/);
    const [first, second] = ndjson.items as [InputItem, InputItem];
    expect(first.kind).toBe('error');
    expect(lines[0]).toBe(`{"click_id":"n-1","name":"Ren\xe9e",${outcome('invalid', 'input_error', (first as { message: string }).message)}`);
    expect(lines[1]).toBe(`{"click_id":"n-2",${outcome('succeeded', null, null)}`);
    expect(lines[4]).toBe(`{${outcome('succeeded', null, null)}`);
    expect(second.kind).toBe('record');
  });

  it('NDJSON: a line that is not an object is kept whole, as text when it is UTF-8, else as base64', async () => {
    const lines = (await exportBytes(t, ndjson, ['invalid'])).toString('utf8').trimEnd().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.map((line) => line.qb_state)).toEqual(['invalid', 'invalid', 'invalid']);
    expect(lines[1]).toMatchObject({ qb_line: '[1,"two"]', qb_error_code: 'input_error' });
    expect(lines[2]?.qb_line).toBeUndefined();
    expect(Buffer.from(lines[2]?.qb_line_base64 as string, 'base64').equals(latin1('not json \xe9'))).toBe(true);
  });

  it.each([
    ['CSV', () => csv, /^exported 1 rows of job \d+/],
    ['NDJSON', () => ndjson, /^exported 3 rows of job \d+/],
  ])('%s: the CLI writes the same bytes to standard output as to --out, the 0xE9 byte kept', (_name, job, said) => {
    const args = ['export', '--ledger', t.path, '--job', String(job().jobId), '--format', 'source', '--status', 'invalid'];
    const toFile = cli([...args, '--out', 'to-fix.out'], t.dir);
    expect(toFile.code, toFile.stderr).toBe(0);
    const file = readFileSync(join(t.dir, 'to-fix.out'));
    const toStdout = cli(args, t.dir);
    expect(toStdout.code, toStdout.stderr).toBe(0);
    expect(toStdout.stderr).toMatch(said);
    expect(toStdout.stdout.equals(file)).toBe(true);
    expect(toStdout.stdout.includes(latin1('Ren\xe9e'))).toBe(true);
    expect(toStdout.stdout.includes(Buffer.from('\uFFFD'))).toBe(false);
  });

  it('CSV: a record too long to copy gets empty cells, so its outcome lands in the outcome columns', async () => {
    const long = Buffer.alloc(DEFAULT_MAX_RECORD_BYTES + 1024, 'x');
    const job = await addJob(t, 'long.csv', Buffer.concat([Buffer.from('click_id,name,note\nc-1,Ann,ok\nc-2,Bo,'), long, Buffer.from('\nc-3,Cy,ok\n')]));
    expect(job.items.map((item) => item.kind)).toEqual(['record', 'error', 'record']);
    const out = join(t.dir, 'long-out.csv');
    writeFileSync(out, await exportBytes(t, job));
    const back: InputItem[] = [];
    for await (const item of await openInput(out)) back.push(item);
    expect(back.map((item) => (item.kind === 'record' ? item.record : item.message))).toEqual([
      { click_id: 'c-1', name: 'Ann', note: 'ok', qb_state: 'succeeded', qb_error_code: '', qb_error_message: '' },
      { click_id: '', name: '', note: '', qb_state: 'invalid', qb_error_code: 'input_error', qb_error_message: `line 3: record longer than ${DEFAULT_MAX_RECORD_BYTES} bytes` },
      { click_id: 'c-3', name: 'Cy', note: 'ok', qb_state: 'succeeded', qb_error_code: '', qb_error_message: '' },
    ]);
  });

  it('CSV with CR CR LF line ends: the rows come out whole, in the same layout', async () => {
    const bytes = Buffer.from('click_id,name\r\r\nc-1,Ann\r\r\nc-2,"Bo\r\r\nJr"\r\r\n');
    const job = await addJob(t, 'crcrlf.csv', bytes);
    expect(job.items.map((item) => (item.kind === 'record' ? item.record.click_id : item.message))).toEqual(['c-1', 'c-2']);
    const exported = await exportBytes(t, job);
    expect(exported.toString('utf8')).toBe(
      'click_id,name,qb_state,qb_error_code,qb_error_message\r\r\nc-1,Ann,succeeded,,\r\r\nc-2,"Bo\r\r\nJr",succeeded,,\r\r\n',
    );
  });
});
