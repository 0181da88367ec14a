import { describe, expect, it } from 'vitest';
import { detectInput } from '../../src/input/index.js';

describe('detectInput', () => {
  it.each([
    ['leads.csv', 'csv', false],
    ['LEADS.CSV', 'csv', false],
    ['dir.v2/leads.tsv', 'tsv', false],
    ['leads.ndjson', 'ndjson', false],
    ['leads.jsonl', 'ndjson', false],
    ['leads.csv.gz', 'csv', true],
    ['leads.jsonl.GZ', 'ndjson', true],
  ])('%s is %s (gzip %s)', (path, format, gzip) => {
    expect(detectInput(path)).toEqual({ format, gzip });
  });

  it('lets a format hint override the extension', () => {
    expect(detectInput('export.txt', 'tsv')).toEqual({ format: 'tsv', gzip: false });
    expect(detectInput('export.dat.gz', 'ndjson')).toEqual({ format: 'ndjson', gzip: true });
  });

  it.each(['leads.txt', 'leads', 'leads.csv.zip', 'dir.csv/leads', 'leads.gz'])('rejects %s without a hint', (path) => {
    expect(() => detectInput(path)).toThrowError(expect.objectContaining({ code: 'E_INPUT', message: expect.stringContaining(path) }));
  });
});
