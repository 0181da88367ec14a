import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CsvDecoder } from '../../src/input/_csv-decoder.js';
import { openInput, type InputItem } from '../../src/input/index.js';
import { makeTempDir, useTempDir } from '../helpers/temp-dir.js';
import { collect, fixture, readAll, summarize } from './_helpers.js';

describe('CSV reader', () => {
  it('reads a plain file: header columns, one object per row, row and line numbers, byte offsets', async () => {
    const { columns, items } = await readAll(fixture('basic.csv'));
    expect(columns).toEqual(['id', 'first_name', 'last_name', 'state']);
    expect(items).toEqual([
      { kind: 'record', rowNumber: 1, line: 2, offset: 30, record: { id: '1', first_name: 'Ada', last_name: 'Testperson', state: 'TX' } },
      { kind: 'record', rowNumber: 2, line: 3, offset: 50, record: { id: '2', first_name: 'Bob', last_name: 'Sampleman', state: 'CA' } },
    ]);
  });

  it('drops a UTF-8 BOM from the first column name', async () => {
    const { columns, items } = await readAll(fixture('bom.csv'));
    expect(columns).toEqual(['id', 'first_name']);
    expect(summarize(items)).toEqual([[1, 2, { id: '1', first_name: 'Ada' }]]);
  });

  it('reads CRLF line ends, keeps a CRLF inside quotes and counts it as one line', async () => {
    const { items } = await readAll(fixture('crlf.csv'));
    expect(summarize(items)).toEqual([
      [1, 2, { id: '1', note: 'two\r\nlines' }],
      [2, 4, { id: '2', note: 'plain' }],
    ]);
  });

  it('reads CR CR LF line ends (a CRLF file converted again) as one line end each, whatever the chunks', async () => {
    const { columns, items } = await readAll(fixture('crcrlf.csv'));
    expect(columns).toEqual(['click_id', 'x']);
    // Line numbers count the lone CR too (a line break is LF, CRLF or a lone CR).
    expect(summarize(items)).toEqual([
      [1, 3, { click_id: 'A1', x: '2' }],
      [2, 5, { click_id: 'A2', x: 'two\r\r\nlines' }],
      [3, 9, { click_id: 'A3', x: '4' }],
    ]);
    const bytes = readFileSync(fixture('crcrlf.csv'));
    for (const cut of [10, 11, 12, 13]) {
      const decoder = new CsvDecoder({ label: 'crcrlf.csv', delimiter: ',', maxRecordBytes: 4096 });
      const pieces: InputItem[] = [];
      decoder.write(bytes.subarray(0, cut), pieces);
      decoder.write(bytes.subarray(cut), pieces);
      decoder.end(pieces);
      expect(pieces, `cut at ${cut}`).toEqual(items);
    }
  });

  it('reads a file mixing CR CR LF and CRLF (or LF) line ends as a person would: one row a line, no stray CR in a value, whatever the chunks', async () => {
    const dir = makeTempDir();
    try {
      const cases = [
        // The header's line end first, then the others.
        ['id,name\r\r\n1,Ann\r\n2,Bo\r\r\n3,Cy\r\n', [[1, 3, 10], [2, 4, 17], [3, 6, 24]]],
        ['id,name\r\n1,Ann\r\r\n2,Bo\r\n3,Cy\r\r\n', [[1, 2, 9], [2, 4, 17], [3, 5, 23]]],
        ['id,name\n1,Ann\r\r\n2,Bo\n\r\r\n3,Cy\r\n', [[1, 2, 8], [2, 4, 16], [3, 7, 24]]],
      ] as const;
      for (const [text, at] of cases) {
        writeFileSync(dir.path('mixed.csv'), text);
        const { items } = await readAll(dir.path('mixed.csv'));
        // Line numbers count a lone CR as a break too, as elsewhere (an editor shows CR CR LF as two).
        expect(items.map((i) => [i.rowNumber, i.line, i.offset]), JSON.stringify(text)).toEqual(at);
        expect(items.map((i) => (i.kind === 'record' ? i.record : i.message))).toEqual([{ id: '1', name: 'Ann' }, { id: '2', name: 'Bo' }, { id: '3', name: 'Cy' }]);
        const bytes = Buffer.from(text);
        for (let cut = 1; cut < bytes.length; cut += 1) {
          const decoder = new CsvDecoder({ label: 'mixed.csv', delimiter: ',', maxRecordBytes: 4096, anyLineEnd: true, crCrLf: true });
          const pieces: InputItem[] = [];
          decoder.write(bytes.subarray(0, cut), pieces);
          decoder.write(bytes.subarray(cut), pieces);
          decoder.end(pieces);
          expect(pieces, `${JSON.stringify(text)} cut at ${cut}`).toEqual(items);
        }
      }
      // A quote that ran on is told from a line end of two breaks, line by line.
      writeFileSync(dir.path('ran-on.csv'), 'id;name;city\r\n1;"Bo"x;Dallas\r\r\n2;"Cy;Houston\r\n3;Di;"El Paso"\r\r\n4;Ed;Waco\r\n');
      expect(summarize((await readAll(dir.path('ran-on.csv'), { delimiter: ';' })).items)).toEqual([
        [1, 2, 'line 2: invalid closing quote in field 2 ("name"): a closing quote must be followed by the delimiter or the line end'],
        [2, 4, 'line 4: invalid closing quote in field 2 ("name"): a closing quote must be followed by the delimiter or the line end; read as its first line alone, the lines after it as rows'],
        [3, 5, { id: '3', name: 'Di', city: 'El Paso' }],
        [4, 7, { id: '4', name: 'Ed', city: 'Waco' }],
      ]);
      // As a job begun before (input_reader 3) read it: it keeps its row numbers.
      writeFileSync(dir.path('mixed.csv'), cases[0][0]);
      expect(summarize((await readAll(dir.path('mixed.csv'), { crCrLf: false })).items)).toEqual([
        [1, 3, 'line 3: wrong number of fields (expected 2, got 3)'],
        [2, 6, { id: '3', name: 'Cy\r\n' }],
      ]);
    } finally {
      dir.cleanup();
    }
  });

  it('reads quoted fields with embedded newlines and doubled quotes; line is where the record starts', async () => {
    const { items } = await readAll(fixture('embedded-newline.csv'));
    expect(summarize(items)).toEqual([
      [1, 2, { id: '1', note: 'line one\nline two\nline three', state: 'TX' }],
      [2, 5, { id: '2', note: 'say "hi"', state: 'CA' }],
    ]);
  });

  it('takes the delimiter option', async () => {
    const { columns, items } = await readAll(fixture('semicolon.csv'), { delimiter: ';' });
    expect(columns).toEqual(['id', 'city', 'note']);
    expect(summarize(items)).toEqual([
      [1, 2, { id: '1', city: 'Springfield', note: 'a;b' }],
      [2, 3, { id: '2', city: 'Shelbyville', note: 'c' }],
    ]);
  });

  it('reads .tsv with a tab delimiter', async () => {
    const reader = await openInput(fixture('tabs.tsv'));
    expect(reader.format).toBe('tsv');
    expect(summarize(await collect(reader))).toEqual([
      [1, 2, { id: '1', city: 'Springfield' }],
      [2, 3, { id: '2', city: 'Shelbyville' }],
    ]);
  });

  it('makes each badly quoted record a row error and reads the next ones', async () => {
    const { items } = await readAll(fixture('bad-quote.csv'));
    expect(summarize(items)).toEqual([
      [1, 2, { id: '1', name: 'Ada', state: 'TX' }],
      [2, 3, expect.stringMatching(/^line 3: unexpected quote in field 2 \("name"\)/)],
      [3, 4, expect.stringMatching(/^line 4: invalid closing quote in field 2 \("name"\)/)],
      [4, 5, { id: '4', name: 'Dee', state: 'WA' }],
    ]);
  });

  it('reports a quote never closed as one error at its line, and reads the lines after it as rows', async () => {
    const { items } = await readAll(fixture('unclosed-quote.csv'));
    expect(summarize(items)).toEqual([
      [1, 2, { id: '1', name: 'Ada' }],
      [2, 3, 'line 3: quote not closed: read as its first line alone, the lines after it as rows'],
      [3, 4, { id: '3', name: 'Cy' }],
      [4, 5, { id: '4', name: 'Dee' }],
    ]);
  });

  it('reads the lines a stray quote took in as rows, when an invalid closing quote lines later ended it', async () => {
    const { items } = await readAll(fixture('quote-ran-on.csv'), { delimiter: ';' });
    expect(summarize(items)).toEqual([
      [1, 2, { id: '1', name: 'Ann', city: 'Austin' }],
      [2, 3, 'line 3: invalid closing quote in field 2 ("name"): a closing quote must be followed by the delimiter or the line end; read as its first line alone, the lines after it as rows'],
      [3, 4, { id: '3', name: 'Cy', city: 'Houston' }],
      [4, 5, { id: '4', name: 'Di', city: 'El Paso' }],
      [5, 6, { id: '5', name: 'Ed', city: 'Waco' }],
    ]);
    // The offsets are where each record starts: the bad row is its first line alone.
    expect(items.map((item) => item.offset)).toEqual([14, 28, 42, 56, 72]);
    // As quote-batch read it before (a job begun then): the lines it took in are part of the bad row.
    const before = await readAll(fixture('quote-ran-on.csv'), { delimiter: ';', rereadRunOnQuotes: false });
    expect(summarize(before.items)).toEqual([
      [1, 2, { id: '1', name: 'Ann', city: 'Austin' }],
      [2, 3, 'line 3: invalid closing quote in field 2 ("name"): a closing quote must be followed by the delimiter or the line end'],
      [3, 6, { id: '5', name: 'Ed', city: 'Waco' }],
    ]);
  });

  it('reads lines again only after a quote that ran on: not for a quote error on one line (CR CR LF too), nor in a real multi-line field', async () => {
    const dir = makeTempDir();
    try {
      const read = async (name: string, text: string, delimiter?: string) => {
        writeFileSync(dir.path(name), text);
        return summarize((await readAll(dir.path(name), delimiter === undefined ? {} : { delimiter })).items);
      };
      // CR CR LF (a CRLF file converted again) counts two line breaks a line, as the line numbers show.
      expect(await read('crcrlf.csv', 'id;name;city\r\r\n1;Ann;Austin\r\r\n2;"Bo"x;Dallas\r\r\n3;Cy;Houston\r\r\n', ';')).toEqual([
        [1, 3, { id: '1', name: 'Ann', city: 'Austin' }],
        [2, 5, 'line 5: invalid closing quote in field 2 ("name"): a closing quote must be followed by the delimiter or the line end'],
        [3, 7, { id: '3', name: 'Cy', city: 'Houston' }],
      ]);
      expect(await read('crcrlf-ran-on.csv', 'id;name;city\r\r\n2;"Bo;Dallas\r\r\n3;Cy;Houston\r\r\n4;Di;"El Paso"\r\r\n5;Ed;Waco\r\r\n', ';')).toEqual([
        [1, 3, 'line 3: invalid closing quote in field 2 ("name"): a closing quote must be followed by the delimiter or the line end; read as its first line alone, the lines after it as rows'],
        [2, 5, { id: '3', name: 'Cy', city: 'Houston' }],
        [3, 7, { id: '4', name: 'Di', city: 'El Paso' }],
        [4, 9, { id: '5', name: 'Ed', city: 'Waco' }],
      ]);
      // A spreadsheet's cell with a line break, then inch marks in an unquoted field: one bad row, not two.
      expect(await read('excel.csv', 'id,note,size\r\n1,"first\nsecond",17" rims\r\n2,ok,ok\r\n')).toEqual([
        [1, 2, expect.stringMatching(/^line 2: /)],
        [2, 4, { id: '2', note: 'ok', size: 'ok' }],
      ]);
    } finally {
      dir.cleanup();
    }
  });

  it('a file with a stray quote on every line reads each line as its own row', async () => {
    const dir = makeTempDir();
    try {
      const lines = Array.from({ length: 2000 }, (_, i) => `${i},"x`);
      writeFileSync(dir.path('many.csv'), `id,name\n${lines.join('\n')}\n`);
      const { items } = await readAll(dir.path('many.csv'));
      expect(items).toHaveLength(2000);
      expect(items.map((item) => [item.rowNumber, item.line, item.kind])).toEqual(lines.map((_, i) => [i + 1, i + 2, 'error']));
      expect(items.at(-1)).toMatchObject({ message: 'line 2001: quote not closed: the record runs to the end of the file' });
    } finally {
      dir.cleanup();
    }
  });

  it('makes a wrong field count a row error naming expected and actual counts', async () => {
    const { items } = await readAll(fixture('wrong-field-count.csv'));
    expect(summarize(items)).toEqual([
      [1, 2, { id: '1', name: 'Ada', state: 'TX' }],
      [2, 3, 'line 3: wrong number of fields (expected 3, got 2)'],
      [3, 4, 'line 4: wrong number of fields (expected 3, got 4)'],
      [4, 5, { id: '4', name: 'Dee', state: 'WA' }],
    ]);
  });

  it('reads LF and CRLF line ends alike, whichever the header has (a header typed on Windows before rows exported elsewhere)', async () => {
    const dir = makeTempDir('quote-batch-csv-');
    try {
      // Blank lines of both kinds between the rows: each record's offset is where its line starts.
      const text = 'id,name\r\n1,Ada\n\r\n\n2,Bo\r\n3,Cy\n\n';
      writeFileSync(dir.path('mixed.csv'), text);
      const { items } = await readAll(dir.path('mixed.csv'));
      expect(summarize(items)).toEqual([[1, 2, { id: '1', name: 'Ada' }], [2, 5, { id: '2', name: 'Bo' }], [3, 6, { id: '3', name: 'Cy' }]]);
      expect(items.map((item) => item.offset)).toEqual([text.indexOf('1,Ada'), text.indexOf('2,Bo'), text.indexOf('3,Cy')]);
      // An LF header and CRLF rows: no CR left at the end of the last field.
      writeFileSync(dir.path('lf-header.csv'), 'id,name\n1,Ada\r\n2,Bo\r\n');
      expect(summarize((await readAll(dir.path('lf-header.csv'))).items)).toEqual([[1, 2, { id: '1', name: 'Ada' }], [2, 3, { id: '2', name: 'Bo' }]]);
      // A CR alone is still no line end there (it ends lines only in a file whose header ends with it).
      writeFileSync(dir.path('cr.csv'), 'id,name\n1,A\rda\n');
      expect(summarize((await readAll(dir.path('cr.csv'))).items)).toEqual([[1, 2, { id: '1', name: 'A\rda' }]]);
    } finally {
      dir.cleanup();
    }
  });

  it('a job begun before reads the header\'s line end only (anyLineEnd false), and says why such a file reads as one record', async () => {
    const dir = makeTempDir('quote-batch-csv-');
    try {
      writeFileSync(dir.path('mixed.csv'), 'id,name\r\n1,Ada\n2,Bo\n3,Cy\n');
      const { items } = await readAll(dir.path('mixed.csv'), { anyLineEnd: false });
      expect(summarize(items)).toEqual([
        [1, 2, "line 2: wrong number of fields (expected 2, got 4); the header line ends with CRLF and the lines after it with LF alone, so they read as one record: give the file one kind of line end (e.g. `sed -i 's/\\r$//' file`)"],
      ]);
      // A record with too many fields and no bare LF in it is only that.
      writeFileSync(dir.path('crlf.csv'), 'id,name\r\n1,Ada,x\r\n');
      expect(summarize((await readAll(dir.path('crlf.csv'), { anyLineEnd: false })).items)).toEqual([[1, 2, 'line 2: wrong number of fields (expected 2, got 3)']]);
    } finally {
      dir.cleanup();
    }
  });

  it('makes a record with invalid UTF-8 a row error, and passes a real U+FFFD through', async () => {
    const { items } = await readAll(fixture('invalid-utf8.csv'));
    expect(summarize(items)).toEqual([
      [1, 2, { id: '1', name: 'Ada' }],
      [2, 3, 'line 3: invalid UTF-8'],
      [3, 4, { id: '3', name: 'Café' }],
      [4, 5, { id: '4', name: '\uFFFD' }],
    ]);
  });

  it('skips blank lines without numbering them', async () => {
    const { items } = await readAll(fixture('blank-lines.csv'));
    expect(summarize(items)).toEqual([
      [1, 3, { id: '1', name: 'Ada' }],
      [2, 6, { id: '2', name: 'Bob' }],
    ]);
  });

  it('reads old Mac CR-only line ends, numbering lines by CR', async () => {
    const { items } = await readAll(fixture('cr-only.csv'));
    expect(summarize(items)).toEqual([
      [1, 2, { id: '1', name: 'Ada' }],
      [2, 3, { id: '2', name: 'B\rob' }],
      [3, 5, { id: '3', name: 'Cy' }],
    ]);
  });

  it('reads a header-only file as zero rows', async () => {
    const { columns, items } = await readAll(fixture('header-only.csv'));
    expect(columns).toEqual(['id', 'first_name', 'last_name']);
    expect(items).toEqual([]);
  });

  it('refuses an empty file: there is no header', async () => {
    await expect(openInput(fixture('empty.csv'))).rejects.toMatchObject({
      code: 'E_INPUT',
      message: expect.stringMatching(/empty\.csv is empty: a CSV file needs a header line/),
    });
  });

  it('refuses a header naming a column twice, with a hint', async () => {
    await expect(openInput(fixture('duplicate-header.csv'))).rejects.toMatchObject({
      code: 'E_INPUT',
      message: expect.stringContaining('names column "id" twice (columns 1 and 3)'),
      hint: 'a mapping reads columns by name: rename one of them in the header line',
    });
  });

  it('reads a header with several columns without a name (a spreadsheet\'s trailing ;;)', async () => {
    const dir = makeTempDir();
    try {
      writeFileSync(dir.path('trailing.csv'), 'a;b;;\n1;2;;\n3;4;x;\n');
      const { columns, items } = await readAll(dir.path('trailing.csv'), { delimiter: ';' });
      expect(columns).toEqual(['a', 'b', '', '']);
      expect(items.map((item) => (item.kind === 'record' ? [item.record.a, item.record.b] : item.kind))).toEqual([['1', '2'], ['3', '4']]);
    } finally {
      dir.cleanup();
    }
  });

  it('keeps a column named __proto__ as an ordinary key', async () => {
    const { items } = await readAll(fixture('proto-column.csv'));
    const item = items[0];
    expect(item?.kind).toBe('record');
    const record = item?.kind === 'record' ? item.record : {};
    expect(Object.keys(record)).toEqual(['id', '__proto__', 'constructor']);
    expect(Object.getOwnPropertyDescriptor(record, '__proto__')?.value).toBe('x');
    expect(Object.getPrototypeOf(record)).toBe(Object.prototype);
  });
});

describe('CSV reader limits', () => {
  const temp = useTempDir('quote-batch-input-');

  it('makes an over-long record a row error and resumes at the next line without holding it', async () => {
    const path = temp.path('overlong.csv');
    // A 3 MiB line between good ones, read with a 64 KiB limit.
    writeFileSync(path, `id,name\n1,Ada\n2,${'x'.repeat(3 * 1024 * 1024)}\n3,Cy\n4,"short\nquoted"\n`);
    const { items } = await readAll(path, { maxRecordBytes: 64 * 1024 });
    expect(summarize(items)).toEqual([
      [1, 2, { id: '1', name: 'Ada' }],
      [2, 3, 'line 3: record longer than 65536 bytes'],
      [3, 4, { id: '3', name: 'Cy' }],
      [4, 5, { id: '4', name: 'short\nquoted' }],
    ]);
  });

  it('makes a record just over the limit an error, and one at the limit a record', async () => {
    const path = temp.path('at-limit.csv');
    // "1,abcdef\n" is 9 bytes; "2,abcdefg\n" is 10.
    writeFileSync(path, 'id,v\n1,abcdef\n2,abcdefg\n3,x\n');
    const { items } = await readAll(path, { maxRecordBytes: 9 });
    expect(summarize(items)).toEqual([
      [1, 2, { id: '1', v: 'abcdef' }],
      [2, 3, 'line 3: record longer than 9 bytes'],
      [3, 4, { id: '3', v: 'x' }],
    ]);
  });

  it('bounds a runaway quote by the size limit, reports it at its line, and keeps reading', async () => {
    const path = temp.path('runaway.csv');
    const swallowed = Array.from({ length: 40_000 }, (_, i) => `${i + 10},filler`).join('\n');
    writeFileSync(path, `id,name\n1,"never closed\n${swallowed}\n`);
    const reader = await openInput(path, { maxRecordBytes: 1024 });
    const items = await collect(reader);
    expect(items[0]).toMatchObject({ kind: 'error', rowNumber: 1, line: 2, message: 'line 2: record longer than 1024 bytes' });
    // Reading resumed on a later line: the remaining lines are rows again, numbered on.
    const rest = items.slice(1);
    expect(rest.length).toBeGreaterThan(1000);
    expect(rest.every((item) => item.kind === 'record')).toBe(true);
    expect(rest.map((item) => item.rowNumber)).toEqual(rest.map((_, i) => i + 2));
    const last = items.at(-1);
    expect(last).toMatchObject({ line: 40_002, record: { id: '40009', name: 'filler' } });
  });

  it('refuses a header longer than the limit', async () => {
    const path = temp.path('long-header.csv');
    writeFileSync(path, `${'h'.repeat(5000)},b\n1,2\n`);
    await expect(openInput(path, { maxRecordBytes: 1000 })).rejects.toMatchObject({
      code: 'E_INPUT',
      message: expect.stringContaining('longer than 1000 bytes'),
    });
  });

  it('reads a 10,000-column file', async () => {
    const path = temp.path('wide.csv');
    const header = Array.from({ length: 10_000 }, (_, i) => `c${i}`).join(',');
    const row = Array.from({ length: 10_000 }, (_, i) => String(i)).join(',');
    writeFileSync(path, `${header}\n${row}\n${row},extra\n`);
    const { columns, items } = await readAll(path);
    expect(columns).toHaveLength(10_000);
    expect(items).toHaveLength(2);
    expect(items[0]?.kind === 'record' && items[0].record['c9999']).toBe('9999');
    expect(items[1]).toMatchObject({ kind: 'error', message: 'line 3: wrong number of fields (expected 10000, got 10001)' });
  });

  it('reads a directory named like a CSV file as an error', async () => {
    const path = temp.path('folder.csv');
    mkdirSync(path);
    await expect(openInput(path)).rejects.toMatchObject({ code: 'E_INPUT', message: expect.stringContaining('it is a directory') });
  });
});
