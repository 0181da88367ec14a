/**
 * Hostile input (issue 9 item 6): records nested deep enough to crash recursive code, and files
 * of blank lines that give no row to stop at.
 */
import { createWriteStream, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { createGzip } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { nestsDeeperThan } from '../../src/input/_ndjson-decoder.js';
import { DEFAULT_MAX_DEPTH, openInput } from '../../src/input/index.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { collect, readAll, summarize } from './_helpers.js';

const nested = (depth: number): string => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

describe('NDJSON nesting limit', () => {
  const tmp = useTempDir();

  it.each([
    ['flat object', '{"a":1,"b":[1,2],"c":{"d":2}}', 2, false],
    ['exactly the limit', nested(3), 3, false],
    ['one level deeper', nested(4), 3, true],
    ['arrays count too', '{"a":[[[1]]]}', 3, true],
    ['brackets inside strings do not count', '{"a":"[[[[{{{{","b":"\\"[[[["}', 1, false],
    ['many siblings are not depth', `{"a":[${'{"b":1},'.repeat(200)}{}]}`, 3, false],
  ])('nestsDeeperThan: %s', (_name, json, max, expected) => {
    expect(nestsDeeperThan(Buffer.from(json), max)).toBe(expected);
  });

  it('makes a record nested 100,000 levels deep a row error naming its line, and reads on', async () => {
    const path = tmp.path('deep.ndjson');
    writeFileSync(path, `{"id":1}\n${nested(100_000)}\n${'['.repeat(200_000)}\n${nested(DEFAULT_MAX_DEPTH)}\n{"id":5}\n`);
    const { items } = await readAll(path);
    expect(summarize(items).map(([row, line, value]) => [row, line, typeof value === 'string' ? value : 'record'])).toEqual([
      [1, 1, 'record'],
      [2, 2, `line 2: nested deeper than ${DEFAULT_MAX_DEPTH} levels`],
      [3, 3, `line 3: nested deeper than ${DEFAULT_MAX_DEPTH} levels`],
      [4, 4, 'record'],
      [5, 5, 'record'],
    ]);
  });

  it('takes its limit from the options', async () => {
    const path = tmp.path('d.jsonl');
    writeFileSync(path, `${nested(5)}\n`);
    expect(summarize((await readAll(path, { maxDepth: 4 })).items)).toEqual([[1, 1, 'line 1: nested deeper than 4 levels']]);
    await expect(openInput(path, { maxDepth: 0 })).rejects.toThrow(/maxDepth must be a positive integer/);
  });
});

describe('stopping a read that yields no rows', () => {
  const tmp = useTempDir();

  it('ends the iteration soon after the signal, in a long run of gzipped blank lines', async () => {
    const path = tmp.path('blank.ndjson.gz');
    const gzip = createGzip({ level: 1 });
    const done = once(gzip.pipe(createWriteStream(path)), 'finish');
    const block = Buffer.alloc(1 << 20, 0x0a);
    for (let i = 0; i < 256; i += 1) if (!gzip.write(block)) await once(gzip, 'drain'); // 256 MB of newlines
    gzip.end();
    await done;

    const controller = new AbortController();
    const reader = await openInput(path, { signal: controller.signal });
    const started = Date.now();
    setTimeout(() => controller.abort(), 200);
    const items = await collect(reader);
    expect(items).toEqual([]);
    expect(controller.signal.aborted).toBe(true);
    // Reading it all takes far longer; loose bound for a loaded machine.
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
