import { readFileSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { openInput } from '../../src/input/index.js';
import type { InputItem, InputOptions } from '../../src/input/index.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { collect, fixture, readAll } from './_helpers.js';

/** Reads `path` from the position of `item`; also returns the reader's progress at the end. */
async function readFrom(
  path: string,
  item: InputItem,
  options: InputOptions = {},
): Promise<{ items: InputItem[]; columns: readonly string[] | null; bytesRead: number; totalBytes: number }> {
  const reader = await openInput(path, { ...options, start: { offset: item.offset, rowNumber: item.rowNumber, line: item.line } });
  const items = await collect(reader);
  return { items, columns: reader.columns, bytesRead: reader.bytesRead, totalBytes: reader.totalBytes };
}

/** Each fixture where resuming makes sense, with the options it is read with. */
const CASES: readonly [name: string, options: InputOptions][] = [
  ['basic.csv', {}],
  ['bom.csv', {}],
  ['crlf.csv', {}],
  ['cr-only.csv', {}],
  ['embedded-newline.csv', {}],
  ['blank-lines.csv', {}],
  ['bad-quote.csv', {}],
  ['unclosed-quote.csv', {}],
  ['quote-ran-on.csv', { delimiter: ';' }],
  ['quote-ran-on.csv', { delimiter: ';', rereadRunOnQuotes: false }],
  ['wrong-field-count.csv', {}],
  ['invalid-utf8.csv', {}],
  ['semicolon.csv', { delimiter: ';' }],
  ['tabs.tsv', {}],
  ['basic.ndjson', {}],
  ['blank-lines.ndjson', {}],
  ['bom-crlf.ndjson', {}],
  ['broken-line.ndjson', {}],
  ['invalid-utf8.ndjson', {}],
  ['not-object.jsonl', {}],
];

describe('openInput with start: resuming at a record', () => {
  const temp = useTempDir('quote-batch-input-start-', { per: 'file' });

  describe.each(CASES)('%s %j', (name, options) => {
    it.each([false, true])('gives items k..n of a full read from item k (gzip: %s)', async (gzip) => {
      let path = fixture(name);
      if (gzip) {
        path = temp.path(`${name}.gz`);
        writeFileSync(path, gzipSync(readFileSync(fixture(name))));
      }
      const full = await readAll(path, options);
      expect(full.items.length).toBeGreaterThan(0);
      for (const [k, item] of full.items.entries()) {
        const resumed = await readFrom(path, item, options);
        expect(resumed.items, `resumed at item ${k}`).toEqual(full.items.slice(k));
        expect(resumed.columns).toEqual(full.columns);
        expect(resumed.bytesRead).toBe(resumed.totalBytes);
      }
    });
  });

  it.each([
    // [fixture, offsets of its items]: the first byte of each record, after blank lines and BOM.
    ['blank-lines.csv', [9, 17]],
    ['crlf.csv', [9, 25]],
    ['bom.csv', [17]],
    ['cr-only.csv', [8, 14, 23]],
    ['bom-crlf.ndjson', [0, 13]],
  ] as const)('gives %s the byte offset where each record starts', async (name, offsets) => {
    const { items } = await readAll(fixture(name));
    expect(items.map((item) => item.offset)).toEqual(offsets);
  });

  it('gives the offset of the line itself for NDJSON after blank and whitespace-only lines', async () => {
    const content = readFileSync(fixture('blank-lines.ndjson'));
    const { items } = await readAll(fixture('blank-lines.ndjson'));
    expect(items.map((item) => item.offset)).toEqual([content.indexOf('{"id":1}'), content.indexOf('{"id":2}')]);
  });
});

describe('openInput with start: files of many chunks', () => {
  const temp = useTempDir('quote-batch-input-start-');

  /** Items whose byte before lies at, just before and just after a 64 KiB block boundary, and some others. */
  function pickAcrossBlocks(items: readonly InputItem[]): InputItem[] {
    const block = 64 * 1024;
    const picked = new Set<InputItem>([items[0] as InputItem, items.at(-1) as InputItem, items[Math.floor(items.length / 2)] as InputItem]);
    for (const boundary of [block, 2 * block, 3 * block]) {
      const index = items.findIndex((item) => item.offset >= boundary);
      for (const neighbour of [index - 1, index, index + 1]) {
        const item = items[neighbour];
        if (item !== undefined) picked.add(item);
      }
    }
    return [...picked];
  }

  it.each([false, true])('resumes a CSV file with CRLF, quoted line breaks and blank lines (gzip: %s)', async (gzip) => {
    const rows = Array.from({ length: 6000 }, (_, i) =>
      i % 7 === 0 ? `${i},"Quoted\r\nnote ${i}",TX\r\n\r\n` : `${i},plain note ${i},CA\r\n`,
    );
    const body = `\uFEFFid,note,state\r\n${rows.join('')}`;
    const path = temp.path(gzip ? 'many.csv.gz' : 'many.csv');
    writeFileSync(path, gzip ? gzipSync(body) : body);
    const full = await readAll(path);
    expect(full.items).toHaveLength(6000);
    expect(full.items.every((item) => item.kind === 'record')).toBe(true);
    for (const item of pickAcrossBlocks(full.items)) {
      const k = item.rowNumber - 1;
      expect((await readFrom(path, item)).items, `resumed at row ${item.rowNumber}`).toEqual(full.items.slice(k));
    }
  });

  it.each([false, true])('resumes an NDJSON file with blank lines (gzip: %s)', async (gzip) => {
    const lines = Array.from({ length: 6000 }, (_, i) => (i % 5 === 0 ? `{"id":${i},"note":"x"}\r\n  \n` : `{"id":${i}}\n`));
    const path = temp.path(gzip ? 'many.ndjson.gz' : 'many.ndjson');
    writeFileSync(path, gzip ? gzipSync(lines.join('')) : lines.join(''));
    const full = await readAll(path);
    expect(full.items).toHaveLength(6000);
    for (const item of pickAcrossBlocks(full.items)) {
      const k = item.rowNumber - 1;
      expect((await readFrom(path, item)).items, `resumed at row ${item.rowNumber}`).toEqual(full.items.slice(k));
    }
  });

  it.each([false, true])('resumes at a runaway quote cut by the size limit as a full read does (gzip: %s)', async (gzip) => {
    // The over-long record starts in the second 64 KiB block; where reading goes on after it
    // depends on where the chunks end, so a resumed read must see the same chunk ends.
    const before = Array.from({ length: 9000 }, (_, i) => `${i},ok`).join('\n');
    const swallowed = Array.from({ length: 20_000 }, (_, i) => `${i + 10},filler`).join('\n');
    const body = `id,name\n${before}\n1,"never closed\n${swallowed}\n`;
    const path = temp.path(gzip ? 'runaway.csv.gz' : 'runaway.csv');
    writeFileSync(path, gzip ? gzipSync(body) : body);
    const options = { maxRecordBytes: 1024 };
    const full = await readAll(path, options);
    const runaway = full.items[9000] as InputItem;
    expect(runaway).toMatchObject({ kind: 'error', rowNumber: 9001, line: 9002, message: 'line 9002: record longer than 1024 bytes' });
    expect(runaway.offset).toBeGreaterThan(64 * 1024);
    expect(full.items.length).toBeGreaterThan(9100);
    expect((await readFrom(path, runaway, options)).items).toEqual(full.items.slice(9000));
  });

  it.each([false, true])('reads the rows after a quote never closed, over many blocks, and resumes among them as a full read does (gzip: %s)', async (gzip) => {
    const before = Array.from({ length: 9000 }, (_, i) => `${i},ok`).join('\r\n');
    const after = Array.from({ length: 20_000 }, (_, i) => `${i + 9001},after`).join('\r\n');
    const body = `id,name\r\n${before}\r\n9000,"never closed\r\n${after}\r\n`;
    const path = temp.path(gzip ? 'unclosed-long.csv.gz' : 'unclosed-long.csv');
    writeFileSync(path, gzip ? gzipSync(body) : body);
    const full = await readAll(path, {});
    expect(full.items).toHaveLength(29_001);
    expect(full.items[9000]).toMatchObject({ kind: 'error', rowNumber: 9001, line: 9002 });
    expect(full.items[9001]).toMatchObject({ kind: 'record', rowNumber: 9002, line: 9003, record: { id: '9001', name: 'after' } });
    expect(full.items.at(-1)).toMatchObject({ kind: 'record', rowNumber: 29_001, line: 29_002, record: { id: '29000', name: 'after' } });
    for (const k of [8999, 9000, 9001, 20_000]) expect((await readFrom(path, full.items[k] as InputItem, {})).items, `from item ${k}`).toEqual(full.items.slice(k));
  });

  it.each([false, true])('a record over the size limit among lines read again is cut where a resumed read cuts it (gzip: %s)', async (gzip) => {
    // Row 2's quote runs on into row 3 (closed wrongly there); row 4's real quoted note is longer than the limit.
    const long = Array.from({ length: 12 }, (_, i) => `long line ${i} of a quoted note`).join('\n');
    const body = `id,name,note\n1,a,b\n2,"Bo,x\n3,x"y,z\n4,"${long}",z\n5,e,f\n`;
    const path = temp.path(gzip ? 'reread-long.csv.gz' : 'reread-long.csv');
    writeFileSync(path, gzip ? gzipSync(body) : body);
    const options = { maxRecordBytes: 200 };
    const full = await readAll(path, options);
    expect(full.items.some((item) => item.kind === 'error' && item.message.endsWith('record longer than 200 bytes'))).toBe(true);
    for (const [k, item] of full.items.entries()) expect((await readFrom(path, item, options)).items, `from item ${k}`).toEqual(full.items.slice(k));
  });

  it('counts the skipped prefix of a plain file as read, and reads little of it', async () => {
    const path = temp.path('progress.csv');
    writeFileSync(path, `id,v\n${Array.from({ length: 50_000 }, (_, i) => `${i},value-${i}`).join('\n')}\n`);
    const full = await readAll(path);
    const item = full.items[45_000] as InputItem;
    const reader = await openInput(path, { start: { offset: item.offset, rowNumber: item.rowNumber, line: item.line } });
    // Only the 64 KiB block holding the start has been read past the header.
    expect(reader.bytesRead).toBeGreaterThanOrEqual(item.offset - 64 * 1024);
    expect(reader.bytesRead).toBeLessThanOrEqual(item.offset + 64 * 1024);
    let first: InputItem | undefined;
    for await (const next of reader) {
      first = next;
      break;
    }
    expect(first).toEqual(item);
    expect(reader.bytesRead).toBeLessThanOrEqual(reader.totalBytes);
  });
});

describe('openInput with start: positions no record starts at', () => {
  const temp = useTempDir('quote-batch-input-start-');

  function gzipped(name: string): string {
    const path = temp.path(`${name}.gz`);
    writeFileSync(path, gzipSync(readFileSync(fixture(name))));
    return path;
  }

  it.each([
    // basic.csv is 69 bytes; its records start at 30 and 50.
    ['basic.csv', 69, /the file is only 69 bytes long( decompressed)?$/],
    ['basic.csv', 500, /the file is only 69 bytes long( decompressed)?$/],
    ['basic.csv', 0, /byte 0 is the start of the header$/],
    ['basic.csv', 12, /that is inside the header, which ends at byte 30$/],
    ['basic.csv', 31, /byte 30 before it does not end a line, so no record starts there$/],
    ['basic.csv', 49, /byte 48 before it does not end a line/],
    ['crlf.csv', 8, /inside the header, which ends at byte 9$/],
    ['crlf.csv', 24, /that is between the CR and the LF of a line end$/],
    ['cr-only.csv', 13, /byte 12 before it does not end a line/],
    ['basic.ndjson', 10, /byte 9 before it does not end a line/],
    ['basic.ndjson', 104, /the file is only 104 bytes long( decompressed)?$/],
    ['bom-crlf.ndjson', 12, /that is between the CR and the LF of a line end$/],
    ['bom-crlf.ndjson', 11, /byte 10 before it does not end a line/],
  ] as const)('refuses %s at byte %i with E_INPUT', async (name, offset, message) => {
    for (const path of [fixture(name), gzipped(name)]) {
      await expect(openInput(path, { start: { offset, rowNumber: 2, line: 3 } }), path).rejects.toMatchObject({
        code: 'E_INPUT',
        message: expect.stringMatching(message),
      });
    }
  });

  it('names the file and the position in the message', async () => {
    await expect(openInput(fixture('basic.csv'), { start: { offset: 31, rowNumber: 2, line: 3 } })).rejects.toMatchObject({
      message: expect.stringMatching(/^cannot resume reading .*basic\.csv at byte 31 \(row 2, line 3\): /),
      hint: 'read the file from the start',
    });
  });

  it('says how long a gzip file is decompressed when the start is past its end', async () => {
    await expect(openInput(gzipped('basic.csv'), { start: { offset: 70, rowNumber: 3, line: 4 } })).rejects.toMatchObject({
      code: 'E_INPUT',
      message: expect.stringMatching(/the file is only 69 bytes long decompressed$/),
    });
  });

  it('reads NDJSON from byte 0 as row 1, line 1, and refuses byte 0 as any other row', async () => {
    const full = await readAll(fixture('broken-line.ndjson'));
    const reader = await openInput(fixture('broken-line.ndjson'), { start: { offset: 0, rowNumber: 1, line: 1 } });
    expect(await collect(reader)).toEqual(full.items);
    await expect(openInput(fixture('broken-line.ndjson'), { start: { offset: 0, rowNumber: 2, line: 2 } })).rejects.toMatchObject({
      code: 'E_INPUT',
      message: expect.stringMatching(/only row 1, line 1 starts at byte 0$/),
    });
  });

  it('still refuses a bad header when resuming', async () => {
    await expect(openInput(fixture('duplicate-header.csv'), { start: { offset: 12, rowNumber: 1, line: 2 } })).rejects.toMatchObject({
      code: 'E_INPUT',
      message: expect.stringContaining('names column "id" twice'),
    });
    await expect(openInput(gzipped('duplicate-header.csv'), { start: { offset: 12, rowNumber: 1, line: 2 } })).rejects.toMatchObject({
      code: 'E_INPUT',
      message: expect.stringContaining('names column "id" twice'),
    });
  });

  it.each([
    { offset: -1, rowNumber: 1, line: 1 },
    { offset: 1.5, rowNumber: 1, line: 1 },
    { offset: 10, rowNumber: 0, line: 2 },
    { offset: 10, rowNumber: 1, line: 0 },
    { offset: Number.NaN, rowNumber: 1, line: 2 },
  ])('refuses a malformed start %j with E_USAGE', async (start) => {
    await expect(openInput(fixture('basic.csv'), { start })).rejects.toMatchObject({
      code: 'E_USAGE',
      message: expect.stringMatching(/^start must be/),
    });
  });
});
