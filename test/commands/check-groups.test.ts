/**
 * `check` groups invalid rows as the run records them: the same kinds (src/error-groups.ts) with
 * the same counts as the ledger's invalid rows of a real run of the same file grouped by the
 * shared function, which is what the run summary and `report` show.
 */
import { writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { ErrorGroups } from '../../src/error-groups.js';
import { runCli } from '../helpers/cli.js';
import { useTempDir } from '../helpers/temp-dir.js';

interface Group { state: string; code: string | null; subject: string; columns: string[]; count: number; rows: number[] }

const pick = ({ state, code, subject, columns, count, rows }: Group): Group => ({ state, code, subject, columns, count, rows });

describe('check and run agree on the kinds of invalid rows', () => {
  const tmp = useTempDir('quote-batch-check-groups-');

  it.each([
    ['samples/leads.csv', 'mappings/example-csv.yaml'],
    ['samples/leads.ndjson', 'mappings/example-ndjson.yaml'],
  ])('%s', async (input, mapping) => {
    const ledger = tmp.path('ledger.db');
    const [check, run] = await Promise.all([
      runCli(['check', input, '--mapping', mapping, '--json']),
      runCli(['run', input, '--mapping', mapping, '--env', 'sandbox', '--ledger', ledger, '--quiet']),
    ]);
    expect(check.code).toBe(1);
    expect(run.code).toBe(1);
    const db = new Database(ledger, { readonly: true });
    const groups = new ErrorGroups({ samples: 5 });
    try {
      const rows = db.prepare(`SELECT row_number, state, error_code, error_message FROM rows WHERE state = 'invalid' ORDER BY row_number`)
        .all() as { row_number: number; state: string; error_code: string | null; error_message: string | null }[];
      for (const row of rows) groups.add({ state: row.state, errorCode: row.error_code, message: row.error_message }, row.row_number);
    } finally {
      db.close();
    }
    const fromCheck = (JSON.parse(check.stdout) as { errorGroups: Group[] }).errorGroups.map(pick);
    const fromRun = groups.top().map(pick);
    expect(fromCheck).toHaveLength(9);
    expect(fromCheck).toEqual(fromRun);
  });
});

describe('check lists every kind of problem the rows have', () => {
  const tmp = useTempDir('quote-batch-check-kinds-');

  it('a row with three problems counts in three groups; each group says how many rows it affects, and no group line shows a value', async () => {
    const input = tmp.path('leads.csv');
    writeFileSync(input, [
      'click,first,last,dob,vin,ip,sex',
      // Three problems: a date, a VIN, an IP address; and two warnings of one kind would be one row.
      'c1,Ann,Example,1980-02-03,SECRETVIN,10.0.0.999,Q',
      'c2,Bob,Sample,02/03/1981,1FAFP34N05W123456,PRIVATE-IP,M',
      'c3,Cy,Example,13/13/1990,1FAFP34N05W123457,10.0.0.1,F',
      'c4,Di,Sample,02/03/1982,SHORT,10.0.0.2,X',
    ].join('\n'));
    const mapping = tmp.path('m.yaml');
    writeFileSync(mapping, `version: 1
fields:
  channel.channel_id: { literal: acme }
  tracking.click_id: click
  tracking.consumer_source_ip: ip
  application.drivers[0].name.first_name: first
  application.drivers[0].name.last_name: last
  application.drivers[0].dob: { column: dob, type: date, format: MM/DD/YYYY }
  application.drivers[0].gender: { column: sex, map: { M: male, F: female }, on_miss: keep, case: lower }
  application.vehicles[0].vin: vin
  application.vehicles[0].make: { literal: Ford }
  application.vehicles[0].model: { literal: Focus }
  application.vehicles[0].year: { literal: 2015 }
`);
    const check = await runCli(['check', input, '--mapping', mapping]);
    expect(check.code).toBe(1);
    const start = check.stdout.indexOf('invalid rows by kind');
    const kinds = check.stdout.slice(start, check.stdout.indexOf('\n\n', start));
    expect(kinds.split('\n')).toEqual([
      'invalid rows by kind (rows affected; a row with several problems counts under each):',
      '       2 × invalid · mapping_error · application.drivers[].dob: expected a date as MM/DD/YYYY (column dob)',
      '           sample rows: 1, 3',
      '       2 × invalid · mapping_error · application.vehicles[].vin: expected a 17-character VIN (column vin)',
      '           sample rows: 1, 4',
      '       2 × invalid · mapping_error · tracking.consumer_source_ip: expected an IPv4 or IPv6 address (column ip)',
      '           sample rows: 1, 2',
    ]);
    const warnings = check.stdout.slice(check.stdout.indexOf('warnings by kind'), check.stdout.indexOf('\n\n', check.stdout.indexOf('warnings by kind')));
    expect(warnings).toContain('2 × warning · application.drivers[].gender: "…" is not in the value table (knows M, F); sent as is (column sex)\n           sample rows: 1, 4');
    for (const value of ['SECRETVIN', '10.0.0.999', 'PRIVATE-IP', '13/13/1990', 'SHORT', '1980-02-03', '"q"', '"x"']) {
      expect(kinds + warnings).not.toContain(value);
    }
    expect(check.stdout).toContain('4 of 4 rows are invalid');
  });

  it('says when a driver was left out because its key columns were empty while others had values', async () => {
    const input = tmp.path('drivers.csv');
    writeFileSync(input, [
      'click,vin,D1 First,D1 Last,D1 DOB,D2 First,D2 Last,D2 DOB',
      'c1,1FAFP34N05W123456,Ann,Example,05-Mar-1988,,,17-Nov-1979',
      'c2,1FAFP34N05W123457,Bo,Sample,17-Nov-1979,,,',
      'c3,1FAFP34N05W123458,Cy,Testwood,30-Sep-1990,,,01-Jan-2001',
    ].join('\n'));
    const mapping = tmp.path('drivers.yaml');
    writeFileSync(mapping, `version: 1
fields:
  channel.channel_id: { literal: acme }
  tracking.click_id: click
  application.vehicles[0].vin: vin
  application.vehicles[0].make: { literal: Ford }
  application.vehicles[0].model: { literal: Focus }
  application.vehicles[0].year: { literal: 2015 }
groups:
  - target: application.drivers
    index: n
    count: 2
    key: ["D{n} First", "D{n} Last"]
    fields:
      name.first_name: D{n} First
      name.last_name: D{n} Last
      dob: { column: "D{n} DOB", type: date, format: DD-MMM-YYYY }
`);
    const check = await runCli(['check', input, '--mapping', mapping]);
    expect(check.code).toBe(0);
    expect(check.stdout).toMatch(/warnings\s+2 in 2 rows/);
    expect(check.stdout).toContain('      2 × warning · application.drivers: left out: its key D{n} First, D{n} Last is empty while other columns of it have values (columns D2 First, D2 Last, D2 DOB)\n           sample rows: 1, 3');
    expect(check.stdout).not.toContain('17-Nov-1979');
  });
});

