import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { openInput } from '../../src/input/index.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { collect, fixture, readAll, summarize } from './_helpers.js';

describe('NDJSON reader', () => {
  it('reads one object per line, nested objects kept, no columns', async () => {
    const reader = await openInput(fixture('basic.ndjson'));
    expect(reader.format).toBe('ndjson');
    expect(reader.columns).toBeNull();
    expect(await collect(reader)).toEqual([
      { kind: 'record', rowNumber: 1, line: 1, offset: 0, record: { id: 1, driver: { first_name: 'Ada', state: 'TX' } } },
      { kind: 'record', rowNumber: 2, line: 2, offset: 52, record: { id: 2, driver: { first_name: 'Bob', state: 'CA' } } },
    ]);
  });

  it('makes a broken JSON line a row error and reads on', async () => {
    const { items } = await readAll(fixture('broken-line.ndjson'));
    expect(summarize(items)).toEqual([
      [1, 1, { id: 1 }],
      [2, 2, expect.stringMatching(/^line 2: invalid JSON: /)],
      [3, 3, { id: 3 }],
    ]);
  });

  it('makes a line that is not an object a row error (.jsonl)', async () => {
    const { items } = await readAll(fixture('not-object.jsonl'));
    expect(summarize(items)).toEqual([
      [1, 1, { id: 1 }],
      [2, 2, 'line 2: JSON line is not an object (got an array)'],
      [3, 3, 'line 3: JSON line is not an object (got a string)'],
      [4, 4, 'line 4: JSON line is not an object (got null)'],
      [5, 5, 'line 5: JSON line is not an object (got a number)'],
      [6, 6, { id: 6 }],
    ]);
  });

  it('skips blank and whitespace-only lines without numbering them', async () => {
    const { items } = await readAll(fixture('blank-lines.ndjson'));
    expect(summarize(items)).toEqual([
      [1, 2, { id: 1 }],
      [2, 5, { id: 2 }],
    ]);
  });

  it('drops a BOM and reads CRLF line ends', async () => {
    const { items } = await readAll(fixture('bom-crlf.ndjson'));
    expect(summarize(items)).toEqual([
      [1, 1, { id: 1 }],
      [2, 2, { id: 2 }],
    ]);
  });

  it('makes a line with invalid UTF-8 a row error, and passes a real U+FFFD through', async () => {
    const { items } = await readAll(fixture('invalid-utf8.ndjson'));
    expect(summarize(items)).toEqual([
      [1, 1, { id: 1, name: 'Ada' }],
      [2, 2, 'line 2: invalid UTF-8'],
      [3, 3, { id: 3, name: '\uFFFD' }],
    ]);
  });

  it('does not copy the line into the JSON error message', async () => {
    const { items } = await readAll(fixture('broken-line.ndjson'));
    const error = items[1];
    expect(error?.kind).toBe('error');
    expect(error?.kind === 'error' && error.message).not.toContain('{"id":2');
  });

  describe('limits', () => {
    const temp = useTempDir('quote-batch-input-');

    it('makes an over-long line a row error and resumes at the next line', async () => {
      const path = temp.path('overlong.ndjson');
      writeFileSync(path, `{"id":1}\n{"id":2,"blob":"${'x'.repeat(2 * 1024 * 1024)}"}\n{"id":3}\n{"id":4,"b":"${'y'.repeat(30)}"}\n`);
      const { items } = await readAll(path, { maxRecordBytes: 16 });
      expect(summarize(items)).toEqual([
        [1, 1, { id: 1 }],
        [2, 2, 'line 2: record longer than 16 bytes'],
        [3, 3, { id: 3 }],
        [4, 4, 'line 4: record longer than 16 bytes'],
      ]);
    });

    it('reads an empty file as zero rows', async () => {
      const path = temp.path('empty.ndjson');
      writeFileSync(path, '');
      expect(await readAll(path)).toEqual({ columns: null, items: [] });
    });

    it('reads a last line without a line end', async () => {
      const path = temp.path('no-final-newline.jsonl');
      writeFileSync(path, '{"id":1}\n{"id":2}');
      expect(summarize((await readAll(path)).items)).toEqual([
        [1, 1, { id: 1 }],
        [2, 2, { id: 2 }],
      ]);
    });
  });
});
