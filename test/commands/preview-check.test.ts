import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { minimalRequestFields } from '../fixtures/mapping/minimal-request.js';
import { startCli } from '../helpers/cli.js';

const ROOT = join(import.meta.dirname, '..', '..');
const run = promisify(execFile);

interface Result { code: number; stdout: string; stderr: string }

async function cli(...args: string[]): Promise<Result> {
  try {
    const { stdout, stderr } = await run('node', ['bin/quote-batch.js', ...args], { cwd: ROOT, env: { ...process.env, NO_COLOR: '1' } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** The deliberately bad rows of the samples (samples/README.md) and the source each message must name. */
const BAD_ROWS: Record<number, { csv: string; ndjson: string }> = {
  17: { csv: 'column driver2_dob', ndjson: 'field drivers[1].dob' },
  31: { csv: 'column driver1_phone', ndjson: 'field drivers[0].phone' },
  48: { csv: 'column driver1_last_name', ndjson: 'field drivers[0].last_name' },
  64: { csv: 'column vehicle1_vin', ndjson: 'field vehicles[0].vin' },
  79: { csv: 'column driver1_gender', ndjson: 'field drivers[0].gender' },
  93: { csv: 'line 94', ndjson: 'line 93' },
  112: { csv: 'column vehicle2_year', ndjson: 'field vehicles[1].year' },
  127: { csv: 'column agent_email', ndjson: 'field agent.email' },
  140: { csv: 'column tcpa_consent', ndjson: 'field consent.tcpa' },
};

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'quote-batch-preview-check-'));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('quote-batch check', () => {
  it.each([
    ['csv', 'samples/leads.csv', 'mappings/example-csv.yaml'],
    ['ndjson', 'samples/leads.ndjson', 'mappings/example-ndjson.yaml'],
  ] as const)('%s sample: the invalid rows are exactly the deliberately bad ones, each naming its source', async (kind, input, mapping) => {
    const result = await cli('check', input, '--mapping', mapping, '--json');
    expect(result.code).toBe(1);
    const summary = JSON.parse(result.stdout) as { rows: number; valid: number; invalid: number; unreadable: number; invalidRows: { row: number; messages: string[] }[] };
    expect(summary).toMatchObject({ rows: 200, valid: 191, invalid: 9, unreadable: 1 });
    expect(summary.invalidRows.map((r) => r.row)).toEqual(Object.keys(BAD_ROWS).map(Number));
    for (const row of summary.invalidRows) {
      expect(row.messages).toHaveLength(1);
      expect(row.messages[0]).toContain(`row ${row.row}: `);
      expect(row.messages[0]).toContain(BAD_ROWS[row.row]?.[kind]);
    }
  });

  it('prints a readable summary: invalid rows by kind without row numbers, sample rows apart, repeated keys, the first invalid rows', async () => {
    const result = await cli('check', 'samples/leads.csv', '--mapping', 'mappings/example-csv.yaml');
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/valid\s+191/);
    expect(result.stdout).toMatch(/invalid\s+9 \(1 unreadable\)/);
    expect(result.stdout).toMatch(/repeated\s+2 valid rows repeat an earlier row's key/);
    const kinds = result.stdout.slice(result.stdout.indexOf('invalid rows by kind'), result.stdout.indexOf('\n\n', result.stdout.indexOf('invalid rows by kind')));
    const groupLines = kinds.split('\n').filter((line) => / × /.test(line));
    expect(groupLines).toHaveLength(9);
    for (const line of groupLines) expect(line).not.toMatch(/\brow \d+|\brows? \d/);
    expect(kinds).toContain('     1 × invalid · mapping_error · application.drivers[].dob: expected a date as MM/DD/YYYY (column driver2_dob)\n           sample rows: 17');
    expect(kinds).toContain('1 × invalid · unreadable_row · wrong number of fields');
    expect(result.stdout).toContain('row 160: key "clk_e1978cc7d76f" first seen in row 12');
    expect(result.stdout).toContain('row 17: application.drivers[1].dob: expected a date as MM/DD/YYYY, got "13/45/1990" (column driver2_dob)');
  });

  it('the example errors README quotes are what check and preview print for the samples', async () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const examples = [...readme.matchAll(/`(row \d+: [^`]+)`/g)].map((m) => m[1]!);
    expect(examples.length).toBeGreaterThan(0);
    const check = await cli('check', 'samples/leads.csv', '--mapping', 'mappings/example-csv.yaml');
    for (const example of examples) {
      expect(check.stdout.split('\n').map((line) => line.trim())).toContain(example);
      const row = /^row (\d+):/.exec(example)![1]!;
      const preview = await cli('preview', 'samples/leads.csv', '--mapping', 'mappings/example-csv.yaml', '--row', row);
      expect(preview.stdout).toContain(`error:   ${example}\n`);
    }
  });

  it('--coverage lists the columns never read and the request fields no row filled; --json carries groups and coverage', async () => {
    const mapping = join(dir, 'partial.yaml');
    // The example mapping without the user agent and the campaign: two columns the mapping no longer reads.
    const text = readFileSync(join(ROOT, 'mappings/example-csv.yaml'), 'utf8').replace('  tracking.user_agent: user_agent\n', '').replace('  tracking.campaign_id: campaign_id\n', '');
    writeFileSync(mapping, text);
    const plain = await cli('check', 'samples/leads.csv', '--mapping', mapping, '--coverage');
    expect(plain.code).toBe(1);
    expect(plain.stdout).toMatch(/columns the mapping never reads \(2\):\n {2}user_agent {2}\(a value in 199 rows\)\n {2}campaign_id {2}\(a value in 199 rows\)/); // row 93 cannot be read
    expect(plain.stdout).toMatch(/request fields no row filled \(\d+\):\n {2}not in the mapping:\n {4}channel\.channel_lead_id\n/);
    expect(plain.stdout).not.toMatch(/^\s+channel\.agent_id$/m);
    expect(plain.stdout).toMatch(/^\s+tracking\.user_agent$/m);

    const json = await cli('check', 'samples/leads.ndjson', '--mapping', 'mappings/example-ndjson.yaml', '--coverage', '--json');
    const summary = JSON.parse(json.stdout) as {
      errorGroups: { count: number; rows: number[]; description: string; key?: string }[];
      repeatedKeys: { row: number; firstRow: number }[];
      coverage: { unread: { source: string }[]; unfilled: { path: string; mapped: boolean }[] };
    };
    expect(summary.errorGroups).toHaveLength(9);
    expect(summary.errorGroups.every((g) => g.count === 1 && g.rows.length === 1 && g.key === undefined)).toBe(true);
    expect(summary.errorGroups.map((g) => g.description)).toContain('invalid · mapping_error · application.drivers[].dob: expected a date as MM/DD/YYYY (field drivers[1].dob)');
    expect(summary.repeatedKeys).toEqual([expect.objectContaining({ row: 160, firstRow: 12 }), expect.objectContaining({ row: 175, firstRow: 40 })]);
    expect(summary.coverage.unread).toEqual([]);
    expect(summary.coverage.unfilled).toContainEqual({ path: 'tracking.campaign_name', mapped: true, required: false });
  });

  it('exits 0 when every row is valid', async () => {
    const file = join(dir, 'good.csv');
    writeFileSync(file, 'click_id\nc-1\nc-2\n');
    const mapping = join(dir, 'good.yaml');
    writeFileSync(mapping, `version: 1
fields:
  channel.channel_id: { literal: acme }
  tracking.click_id: click_id
  application.drivers[0].name: { literal: { first_name: Ann, last_name: Example } }
  application.drivers[0].dob: { literal: "1980-01-02" }
  application.vehicles[0]: { literal: { vin: 1FAFP34N05W123456, make: Ford, model: Focus, year: 2015 } }
`);
    const result = await cli('check', file, '--mapping', mapping);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('all rows are valid');
  });

  it('exits 2 for a bad mapping, a missing column or an unreadable file, before any row', async () => {
    const bad = await cli('check', 'samples/leads.csv', '--mapping', 'test/fixtures/mapping/bad-unknown-key.yaml');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/bad-unknown-key\.yaml:3:\d+: .*unknown key "colum"/);
    expect(bad.stderr).toMatch(/hint: did you mean "column"\?/);

    const mapping = join(dir, 'missing-column.yaml');
    writeFileSync(mapping, 'version: 1\nfields:\n  tracking.click_id: clik_id\n');
    const missing = await cli('check', 'samples/leads.csv', '--mapping', mapping);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/the input has no column "clik_id" \(did you mean "click_id"\?\)/);
    expect(missing.stdout).toBe('');

    const bomb = join(dir, 'alias-bomb.yaml');
    const levels = ['a: &a [x, x, x, x, x, x, x, x, x]', ...'bcdefgh'.split('').map((name, i) => `${name}: &${name} [${Array(9).fill(`*${'abcdefgh'[i]}`).join(', ')}]`)];
    writeFileSync(bomb, `version: 1\nfields: {}\n${levels.join('\n')}\n`);
    const bombed = await cli('check', 'samples/leads.csv', '--mapping', bomb);
    expect(bombed.code).toBe(2);
    expect(bombed.stderr).toMatch(/^error: invalid mapping: .*alias-bomb\.yaml:4:\d+: YAML: too many alias references/);
    expect(bombed.stderr).not.toMatch(/internal error| {4}at /);

    const nested = await cli('check', 'samples/leads.csv', '--mapping', 'mappings/example-ndjson.yaml');
    expect(nested.code).toBe(2);
    expect(nested.stderr).toMatch(/^error: the mapping is written for NDJSON input \(its input\.format\), and \S*samples\/leads\.csv is CSV \(by its extension\)\n/);

    // A CSV mapping on an NDJSON file read every row as invalid (its columns are no NDJSON fields): refused before any row, by every command.
    for (const command of ['check', 'preview', 'run']) {
      const ledger = join(dir, `crossed-${command}.db`);
      const crossed = await cli(command, 'samples/leads.ndjson', '--mapping', 'mappings/example-csv.yaml', ...(command === 'run' ? ['--env', 'sandbox', '--ledger', ledger] : []));
      expect(crossed.code, `${command}: ${crossed.stderr}`).toBe(2);
      expect(crossed.stderr).toMatch(/^error: the mapping is written for CSV input \(its input\.format\), and \S*samples\/leads\.ndjson is NDJSON \(by its extension\)\nhint: use the mapping written for this file \(`quote-batch init \S*samples\/leads\.ndjson` drafts one\)/);
      expect(crossed.stdout).toBe('');
      expect(existsSync(ledger)).toBe(false);
    }

    const absent = await cli('check', join(dir, 'nope.csv'), '--mapping', 'mappings/example-csv.yaml');
    expect(absent.code).toBe(2);
    expect(absent.stderr).toMatch(/nope\.csv/);
  });
});

describe('quote-batch preview', () => {
  it('shows the first 3 rows as the JSON that would be sent, with the agent id placeholder explained', async () => {
    const result = await cli('preview', 'samples/leads.csv', '--mapping', 'mappings/example-csv.yaml');
    expect(result.code).toBe(0);
    expect(result.stdout.match(/^── row \d+/gm)).toEqual(['── row 1', '── row 2', '── row 3']);
    expect(result.stdout).toContain('"agent_id": "<agent id from validation, set at run time>"');
    expect(result.stdout).toMatch(/note: the agent id is a placeholder: it comes from validating \S+@example\.com when the job runs/);
  });

  it('a mapping without an agent shows the request as it is sent: no agent id placeholder', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'qb-preview-'));
    try {
      writeFileSync(join(dir, 'leads.csv'), 'click_id,first,last,dob,vin\nc1,Ann,Example,02/03/1980,1FAFP34N05W123456\n');
      writeFileSync(join(dir, 'no-agent.yaml'), `version: 1\nfields:\n  tracking.click_id: click_id\n${minimalRequestFields('trial')}`);
      const result = await cli('preview', join(dir, 'leads.csv'), '--mapping', join(dir, 'no-agent.yaml'));
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain('agent (none)');
      expect(result.stdout).not.toContain('agent_id');
      expect(result.stdout).toContain('note: the row has no agent e-mail: it is sent as shown, without an agent id');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('--row N shows one row with its errors naming the column; exit 1 when it is invalid', async () => {
    const result = await cli('preview', 'samples/leads.csv', '--mapping', 'mappings/example-csv.yaml', '--row', '17');
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/^── row 17 \(line \d+, key clk_[0-9a-f]+, agent \S+, INVALID: would not be sent\) ──/m);
    expect(result.stdout).toContain('error:   row 17: application.drivers[1].dob: expected a date as MM/DD/YYYY, got "13/45/1990" (column driver2_dob)');
  });

  it('--json gives the requests and issues; CSV and NDJSON twins map to the same request', async () => {
    const csv = await cli('preview', 'samples/leads.csv', '--mapping', 'mappings/example-csv.yaml', '--rows', '5', '--json');
    const ndjson = await cli('preview', 'samples/leads.ndjson', '--mapping', 'mappings/example-ndjson.yaml', '--rows', '5', '--json');
    expect([csv.code, ndjson.code]).toEqual([0, 0]);
    const a = JSON.parse(csv.stdout) as { row: number; valid: boolean; request: unknown; rowKey: string }[];
    const b = JSON.parse(ndjson.stdout) as typeof a;
    expect(a.map((r) => r.row)).toEqual([1, 2, 3, 4, 5]);
    expect(a.every((r) => r.valid)).toBe(true);
    const sortKeys = (v: unknown): unknown => Array.isArray(v) ? v.map(sortKeys)
      : v !== null && typeof v === 'object' ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortKeys((v as Record<string, unknown>)[k])])) : v;
    expect(a.map((r) => sortKeys(r.request))).toEqual(b.map((r) => sortKeys(r.request)));
    expect(a[0]?.rowKey).toMatch(/^clk_/);
  });

  it('--rows and --row together are a usage error', async () => {
    const result = await cli('preview', 'samples/leads.csv', '--mapping', 'mappings/example-csv.yaml', '--rows', '2', '--row', '3');
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/either --rows or --row/);
  });
});

describe('check and preview stop on SIGTERM', () => {
  // 60,000 rows: the samples' rows over and over (about 16 MB), far more than either gets through in a second.
  let big: string;
  beforeAll(() => {
    const text = readFileSync(join(ROOT, 'samples/leads.csv'), 'utf8');
    const headerEnd = text.indexOf('\n') + 1;
    big = join(dir, 'big.csv');
    writeFileSync(big, text.slice(0, headerEnd) + text.slice(headerEnd).repeat(300));
  });

  it.each([
    ['check', ['check', 'BIG', '--mapping', 'mappings/example-csv.yaml']],
    ['preview --row 59999', ['preview', 'BIG', '--mapping', 'mappings/example-csv.yaml', '--row', '59999']],
  ])('%s: exit 3 soon after the signal', async (_, args) => {
    const { child, done } = startCli(args.map((a) => (a === 'BIG' ? big : a)));
    // Once it has read its mapping and started on the rows.
    await new Promise((resolveWait) => setTimeout(resolveWait, 1500));
    const signalled = performance.now();
    child.kill('SIGTERM');
    const result = await done;
    const afterSignal = performance.now() - signalled;
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/SIGTERM/);
    // Within a second on an idle machine; loose here (shared CI machines).
    expect(afterSignal).toBeLessThan(5_000);
    if (args[0] === 'check') expect(result.stdout).toMatch(/interrupted: the counts cover the rows read so far/);
  });
});
