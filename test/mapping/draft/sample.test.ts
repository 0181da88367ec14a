/**
 * `init`'s sample holds per-field values, cut short, within a budget: never whole records, so its
 * memory does not grow with the records' size, their number or the file's width.
 */
import { writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { readSample } from '../../../src/mapping/draft/sample.js';
import { SampleCollector, type SourceScope } from '../../../src/mapping/draft/sources.js';
import { useTempDir } from '../../helpers/temp-dir.js';

/** Every sample value of a scope, its groups' included. */
function valuesOf(scope: SourceScope): string[] {
  return [...scope.fields.flatMap((f) => f.values), ...scope.groups.flatMap((g) => valuesOf(g.scope))];
}

describe('the sample init drafts from', () => {
  const tmp = useTempDir('quote-batch-sample-');
  const MiB = 1024 * 1024;

  it('CSV records of 1 MiB each: values cut to 200 characters, the short ones whole', async () => {
    const big = 'n'.repeat(MiB);
    const rows = Array.from({ length: 20 }, (_, i) => `c-${i},02/03/1980,${big}`);
    writeFileSync(tmp.path('big.csv'), `click_id,DOB,Notes\n${rows.join('\n')}\n`);
    const sample = await readSample(tmp.path('big.csv'), { rows: 200 });
    expect(sample.rows).toBe(20);
    const notes = sample.scope.fields.find((f) => f.name === 'Notes');
    expect(notes?.values).toEqual(Array.from({ length: 20 }, () => 'n'.repeat(200)));
    expect(sample.scope.fields.find((f) => f.name === 'DOB')?.values).toEqual(Array.from({ length: 20 }, () => '02/03/1980'));
    expect(valuesOf(sample.scope).join('').length).toBeLessThan(10_000);
  });

  it('NDJSON records of 1 MiB each, and their lists of objects, alike', async () => {
    const big = 'n'.repeat(MiB);
    const lines = Array.from({ length: 20 }, (_, i) => JSON.stringify({ id: `L-${i}`, note: big, drivers: [{ first_name: 'Ann', bio: big }] }));
    writeFileSync(tmp.path('big.ndjson'), `${lines.join('\n')}\n`);
    const sample = await readSample(tmp.path('big.ndjson'), { rows: 200 });
    expect(sample.rows).toBe(20);
    const drivers = sample.scope.groups.find((g) => g.stem === 'drivers');
    expect(drivers?.scope.fields.map((f) => [f.name, f.values.length, Math.max(...f.values.map((v) => v.length))])).toEqual([['first_name', 20, 3], ['bio', 20, 200]]);
    expect(Math.max(...valuesOf(sample.scope).map((v) => v.length))).toBe(200);
  });

  it('stops taking rows once its budget is spent, however wide the file', () => {
    const columns = Array.from({ length: 4000 }, (_, i) => `col_${i}`);
    const record = Object.fromEntries(columns.map((c) => [c, 'v'.repeat(300)]));
    const collector = new SampleCollector(columns);
    for (let row = 0; row < 1000 && !collector.full; row += 1) collector.add(record);
    expect(collector.full).toBe(true);
    // 4000 values of 200 characters (plus one each) a row, 8 million in all: 10 rows.
    expect(collector.rows).toBe(10);
    expect(valuesOf(collector.scope()).length).toBe(40_000);
  });

  it('keeps the first 1000 values of a field, and of a numbered group\'s fields in row order', () => {
    const columns = ['D1_FName', 'D1_DOB', 'D2_FName', 'D2_DOB'];
    const collector = new SampleCollector(columns);
    for (let row = 0; row < 1500; row += 1) collector.add({ D1_FName: `a${row}`, D1_DOB: '02/03/1980', D2_FName: `b${row}`, D2_DOB: '' });
    const group = collector.scope().groups[0];
    const names = group?.scope.fields.find((f) => f.name === 'FName')?.values ?? [];
    expect(names).toHaveLength(1000);
    expect(names.slice(0, 4)).toEqual(['a0', 'b0', 'a1', 'b1']);
    expect(names[999]).toBe('b499');
  });
});
