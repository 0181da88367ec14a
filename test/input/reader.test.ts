import { readFileSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { openInput } from '../../src/input/index.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { collect, fixture, readAll, summarize } from './_helpers.js';

describe('openInput', () => {
  const temp = useTempDir('quote-batch-input-');

  it('reads gzipped CSV and NDJSON like the plain files', async () => {
    const csv = temp.path('gzipped.csv.gz');
    writeFileSync(csv, gzipSync(readFileSync(fixture('embedded-newline.csv'))));
    const ndjson = temp.path('gzipped.ndjson.gz');
    writeFileSync(ndjson, gzipSync(readFileSync(fixture('broken-line.ndjson'))));
    expect(await readAll(csv)).toEqual(await readAll(fixture('embedded-newline.csv')));
    expect(await readAll(ndjson)).toEqual(await readAll(fixture('broken-line.ndjson')));
  });

  it('counts compressed bytes for progress', async () => {
    const path = temp.path('progress.csv.gz');
    const body = `id,v\n${Array.from({ length: 5000 }, (_, i) => `${i},value-${i}`).join('\n')}\n`;
    writeFileSync(path, gzipSync(body));
    const reader = await openInput(path);
    expect(reader.totalBytes).toBe(readFileSync(path).length);
    const items = await collect(reader);
    expect(items).toHaveLength(5000);
    expect(reader.bytesRead).toBe(reader.totalBytes);
  });

  it('reads only as far as it is iterated (backpressure), and break releases the file', async () => {
    const path = temp.path('big.csv');
    const row = `${'x'.repeat(100)}\n`;
    writeFileSync(path, `v\n${row.repeat(100_000)}`); // about 10 MB
    const reader = await openInput(path);
    let taken = 0;
    for await (const item of reader) {
      expect(item.kind).toBe('record');
      taken += 1;
      if (taken === 10) break;
    }
    expect(reader.bytesRead).toBeLessThan(1024 * 1024);
    expect(reader.bytesRead).toBeGreaterThan(0);
    expect(reader.totalBytes).toBeGreaterThan(10_000_000);
    // The iterator is done after a break, and close stays safe to call.
    expect(await collect(reader)).toEqual([]);
    await reader.close();
  });

  it('close() before iterating ends the reader', async () => {
    const reader = await openInput(fixture('basic.csv'));
    await reader.close();
    await reader.close();
    expect(await collect(reader)).toEqual([]);
  });

  it('throws E_INPUT while iterating a corrupt gzip file', async () => {
    const path = temp.path('corrupt.csv.gz');
    const good = gzipSync(`id,v\n${'1,2\n'.repeat(50_000)}`);
    writeFileSync(path, good.subarray(0, Math.floor(good.length / 2)));
    const reader = await openInput(path);
    await expect(collect(reader)).rejects.toMatchObject({
      code: 'E_INPUT',
      message: expect.stringMatching(/^cannot decompress input file .*corrupt\.csv\.gz: unexpected end of file/),
    });
  });

  it('throws E_INPUT when the gzip header itself is broken', async () => {
    const path = temp.path('not-gzip.csv.gz');
    writeFileSync(path, 'id,v\n1,2\n');
    await expect(openInput(path)).rejects.toMatchObject({ code: 'E_INPUT', message: expect.stringContaining('decompress') });
  });

  it('throws E_INPUT for a missing file', async () => {
    await expect(openInput(temp.path('missing.csv'))).rejects.toMatchObject({
      code: 'E_INPUT',
      message: expect.stringMatching(/^cannot open input file .*missing\.csv: no such file$/),
    });
  });

  it('takes a format hint over the extension', async () => {
    const path = temp.path('export.txt');
    writeFileSync(path, 'a\tb\n1\t2\n');
    const reader = await openInput(path, { format: 'tsv' });
    expect(summarize(await collect(reader))).toEqual([[1, 2, { a: '1', b: '2' }]]);
  });

  it.each([
    [{ maxRecordBytes: 0 }, /maxRecordBytes must be a positive integer/],
    [{ maxRecordBytes: 1.5 }, /maxRecordBytes must be a positive integer/],
    [{ delimiter: '' }, /invalid CSV delimiter ""/],
    [{ delimiter: '"' }, /invalid CSV delimiter/],
    [{ delimiter: '\n' }, /invalid CSV delimiter/],
  ])('refuses bad options %j with E_USAGE', async (options, message) => {
    await expect(openInput(fixture('basic.csv'), options)).rejects.toMatchObject({ code: 'E_USAGE', message: expect.stringMatching(message) });
  });
});
