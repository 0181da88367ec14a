/**
 * Bad-input suite (issue item 5), through the real CLI: `check` and `run` on files with a BOM,
 * CRLF, embedded newlines, stray quotes, invalid UTF-8, broken NDJSON lines, a 10 MB field,
 * 10,000 columns, no content, only a header, and a 1 GB line (a sparse file made at test time
 * and removed after). Nothing crashes or hangs; every bad record is reported with its line, and
 * the good records around it are sent.
 */
import { closeSync, ftruncateSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SandboxHandle } from '../../src/sandbox/index.js';
import { REPO_ROOT, runCli, type CliResult } from '../helpers/cli.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { readLedger } from '../pipeline/_setup.js';
import { CANARY_KEY, expectNoSecrets, expectPrivateLedger, startCanarySandbox } from './_shared.js';

const FIXTURES = join(REPO_ROOT, 'test', 'fixtures', 'robustness', 'bad-input');
const MAPPING = join(FIXTURES, 'mapping.yaml');
const HEADER = 'click_id,agent_email,first_name,last_name,dob,state,vin,make,model,year';
const row = (i: number, overrides: Partial<Record<'last_name' | 'model', string>> = {}): string =>
  `clk-gen-${i},dana.whitfield@example.com,Testy,${overrides.last_name ?? 'Roe'},1990-01-02,TX,1HGCM82633A00435${i % 10},Honda,${overrides.model ?? 'Accord'},2015`;

interface CheckJson {
  rows: number;
  valid: number;
  invalid: number;
  unreadable: number;
  invalidRows: { row: number; line: number; messages: string[] }[];
}

describe('bad input through check and run', () => {
  const tmp = useTempDir('quote-batch-bad-input-');
  let sandbox: SandboxHandle;

  beforeEach(async () => {
    sandbox = await startCanarySandbox();
  });
  afterEach(() => sandbox.close());

  const check = async (file: string): Promise<{ result: CliResult; json: CheckJson | undefined }> => {
    const result = await runCli(['check', file, '--mapping', MAPPING, '--json'], { cwd: tmp.dir, timeoutMs: 120_000 });
    let json: CheckJson | undefined;
    try {
      json = JSON.parse(result.stdout) as CheckJson;
    } catch {
      json = undefined;
    }
    return { result, json };
  };
  const run = (file: string, ledger = tmp.path('l.db')): Promise<CliResult> =>
    runCli(['run', file, '--mapping', MAPPING, '--base-url', sandbox.url, '--env', 'sandbox', '--ledger', ledger, '--quiet'], {
      cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: CANARY_KEY }, timeoutMs: 120_000,
    });

  /** check names each bad row's line; run records it `invalid` with that line and sends the rest. */
  async function expectBadRows(file: string, total: number, bad: Record<number, { line: number; text: RegExp }>): Promise<void> {
    const { result, json } = await check(file);
    expect(result.stderr).not.toMatch(/internal error/);
    const badRows = Object.keys(bad).map(Number);
    expect(result.code).toBe(badRows.length > 0 ? 1 : 0);
    expect(json?.rows).toBe(total);
    expect(json?.invalid).toBe(badRows.length);
    expect(json?.invalidRows.map((r) => r.row)).toEqual(badRows);
    for (const r of json?.invalidRows ?? []) {
      expect(r.line).toBe(bad[r.row]!.line);
      expect(r.messages.join(' ')).toMatch(new RegExp(`line ${bad[r.row]!.line}: ${bad[r.row]!.text.source}`));
    }

    const ran = await run(file);
    expect(ran.stderr).not.toMatch(/internal error/);
    expect(ran.code).toBe(badRows.length > 0 ? 1 : 0);
    const ledger = readLedger(tmp.path('l.db'));
    expect(ledger.rows.map((r) => r.row_number)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    for (const r of ledger.rows) expect(`${r.row_number}:${r.state}`).toBe(`${r.row_number}:${badRows.includes(r.row_number) ? 'invalid' : 'succeeded'}`);
    expect(sandbox.stats().operations.quote.received).toBe(total - badRows.length);
    expect(ledger.integrity).toBe('ok');
    const db = new Database(tmp.path('l.db'), { readonly: true });
    const messages = db.prepare("SELECT row_number, error_message FROM rows WHERE state = 'invalid' ORDER BY row_number").all() as { row_number: number; error_message: string }[];
    db.close();
    for (const m of messages) expect(m.error_message).toMatch(new RegExp(`^line ${bad[m.row_number]!.line}: ${bad[m.row_number]!.text.source}`));
    expectNoSecrets(file, [result, ran], tmp.path('l.db'));
    expectPrivateLedger(file, tmp.path('l.db'));
  }

  it('a BOM and CRLF line ends', async () => {
    await expectBadRows(join(FIXTURES, 'bom-crlf.csv'), 3, {});
  });

  it('a quoted field with an embedded newline, then a stray quote (reported at its line)', async () => {
    await expectBadRows(join(FIXTURES, 'embedded-newline.csv'), 3, { 2: { line: 4, text: /unexpected quote/ } });
  });

  it('invalid UTF-8 in one record', async () => {
    await expectBadRows(join(FIXTURES, 'invalid-utf8.csv'), 3, { 2: { line: 3, text: /invalid UTF-8/ } });
  });

  it('NDJSON: a cut line, a line that is not an object, invalid UTF-8, a CRLF line end', async () => {
    await expectBadRows(join(FIXTURES, 'bad-lines.ndjson'), 5, {
      2: { line: 2, text: /invalid JSON/ },
      3: { line: 3, text: /JSON line is not an object/ },
      4: { line: 4, text: /invalid UTF-8/ },
    });
  });

  it('a 10 MB field in a column the mapping does not read', async () => {
    const file = tmp.path('field-10mb.csv');
    writeFileSync(file, `${HEADER},notes\n${row(1)},short\n${row(2)},${'n'.repeat(10 * 1024 * 1024)}\n${row(3)},short\n`);
    await expectBadRows(file, 3, {});
  }, 60_000);

  it('a 10 MB value in a mapped column: the row ends in a final state, the others are sent', async () => {
    const file = tmp.path('value-10mb.csv');
    writeFileSync(file, `${HEADER}\n${row(1)}\n${row(2, { model: 'M'.repeat(10 * 1024 * 1024) })}\n${row(3)}\n`);
    const ran = await run(file);
    expect(ran.stderr).not.toMatch(/internal error/);
    const ledger = readLedger(tmp.path('l.db'));
    expect(ledger.rows.map((r) => r.state)).toEqual(['succeeded', ledger.rows[1]!.state, 'succeeded']);
    // Either refused by the schema (invalid) or by the partner (rejected: 413): never retried blindly.
    expect(['invalid', 'rejected']).toContain(ledger.rows[1]!.state);
    expect(ran.code).toBe(1);
    expect(sandbox.stats().duplicateLeads).toEqual([]);
  }, 60_000);

  it('10,000 columns', async () => {
    const extra = Array.from({ length: 10_000 - 10 }, (_, i) => `extra_${i}`);
    const filler = extra.map(() => 'x').join(',');
    const file = tmp.path('columns-10000.csv');
    writeFileSync(file, `${HEADER},${extra.join(',')}\n${row(1)},${filler}\n${row(2)},${filler},too-many\n${row(3)},${filler}\n`);
    await expectBadRows(file, 3, { 2: { line: 3, text: /wrong number of fields \(expected 10000, got 10001\)/ } });
  }, 60_000);

  it('an empty file: exit 2 naming the file, nothing sent', async () => {
    const file = tmp.path('empty.csv');
    writeFileSync(file, '');
    const { result } = await check(file);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/empty\.csv/);
    expect(result.stderr).not.toMatch(/internal error/);
    const ran = await run(file);
    expect(ran.code).toBe(2);
    expect(ran.stderr).toMatch(/empty\.csv/);
    expect(sandbox.stats().operations.quote.received + sandbox.stats().operations.validate.received).toBe(0);
  });

  it('a header-only file: zero rows, a completed job', async () => {
    const file = tmp.path('header-only.csv');
    writeFileSync(file, `${HEADER}\r\n`);
    const { result, json } = await check(file);
    expect(result.code).toBe(0);
    expect(json?.rows).toBe(0);
    const ran = await run(file);
    expect(ran.stderr).not.toMatch(/internal error/);
    expect(ran.code).toBe(0);
    const ledger = readLedger(tmp.path('l.db'));
    expect(ledger.rows).toEqual([]);
    expect(ledger.jobs).toEqual([{ id: 1, status: 'completed', total_rows: 0 }]);
    expect(sandbox.stats().operations.quote.received).toBe(0);
  });

  describe('a 1 GB line (sparse file, removed after)', () => {
    it('as a record between two good ones: that row is reported at its line, the next one is sent', async () => {
      const file = tmp.path('line-1gb.csv');
      const fd = openSync(file, 'w');
      try {
        writeSync(fd, `${HEADER}\n${row(1)}\n`);
        // Only the two ends hold data: the gigabyte of NUL bytes between them takes no disk space.
        const tail = Buffer.from(`\n${row(3)}\n`);
        writeSync(fd, tail, 0, tail.length, 1024 ** 3 + 200);
      } finally {
        closeSync(fd);
      }
      const started = Date.now();
      await expectBadRows(file, 3, { 2: { line: 3, text: /record longer than \d+ bytes/ } });
      console.log(`1 GB line: check + run took ${Date.now() - started} ms`);
    }, 240_000);

    it('as the only line: the header is too long, exit 2 before any row', async () => {
      const file = tmp.path('only-line-1gb.csv');
      const fd = openSync(file, 'w');
      try {
        ftruncateSync(fd, 1024 ** 3);
      } finally {
        closeSync(fd);
      }
      const { result } = await check(file);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/header .*line 1.* longer than/);
      const ran = await run(file);
      expect(ran.code).toBe(2);
      expect(ran.stderr).not.toMatch(/internal error/);
      expect(sandbox.stats().operations.quote.received + sandbox.stats().operations.validate.received).toBe(0);
    }, 120_000);
  });
});
