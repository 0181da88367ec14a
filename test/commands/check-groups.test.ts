/**
 * `check` groups invalid rows as the run records them: the same kinds (src/error-groups.ts) with
 * the same counts as the ledger's invalid rows of a real run of the same file grouped by the
 * shared function, which is what the run summary and `report` show.
 */
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
