/**
 * A lead is not sent twice by a new job: a file fixed in place (or run again with --fresh) is a new
 * job, whose rows already sent by an earlier job of the same environment and operation are recorded
 * `duplicate` in uat and production, and sent (with one warning) in the sandbox. The real CLI, the
 * sandbox over loopback HTTP (standing in for uat), real ledger files.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SandboxHandle } from '../../src/sandbox/index.js';
import { Ledger } from '../../src/ledger/index.js';
import type { Environment, Operation } from '../../src/partner/types.js';
import { runCli } from '../helpers/cli.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { KEY, MAPPING_CSV, readLedger, SAMPLE_CSV, startTestSandbox } from './_setup.js';

describe('rows another job already sent', () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let sandbox: SandboxHandle;

  beforeEach(async () => {
    tmp = makeTempDir();
    sandbox = await startTestSandbox();
  });
  afterEach(async () => {
    await sandbox.close();
    tmp.cleanup();
  });

  const run = (input: string, env: string, args: string[] = []) =>
    runCli(['run', input, '--mapping', MAPPING_CSV, '--base-url', sandbox.url, '--env', env, '--ledger', tmp.path('l.db'), '--quiet', ...args], {
      cwd: tmp.dir,
      env: { QUOTE_BATCH_API_KEY: KEY },
    });

  /** The samples with row 17's impossible date of birth (13/45/1990) fixed in place, as a user would. */
  const fixedInPlace = (): string => {
    const fixed = readFileSync(SAMPLE_CSV, 'utf8').replace('13/45/1990', '03/15/1990');
    expect(fixed).not.toBe(readFileSync(SAMPLE_CSV, 'utf8'));
    const path = tmp.path('leads-fixed.csv');
    writeFileSync(path, fixed);
    return path;
  };

  it('uat: a file fixed in place sends only the rows no job sent; --fresh --resend-sent sends them all again', async () => {
    const first = await run(SAMPLE_CSV, 'uat');
    expect(first.code, first.stderr).toBe(1); // the samples hold rows to fix
    expect(readLedger(tmp.path('l.db')).states.succeeded).toBe(176);
    const quotesBefore = sandbox.stats().operations.quote.received;

    const second = await run(fixedInPlace(), 'uat');
    expect(second.code, second.stderr).toBe(1); // the rejected rows are still wrong
    const job2 = readLedger(tmp.path('l.db'), 2);
    // 176 leads job 1 sent, and the two repeats of them in the file: recorded, not sent.
    expect(job2.states.duplicate).toBe(178);
    expect(job2.rows.find((r) => r.row_number === 17)?.state).toBe('succeeded');
    // Row 17, and the 5 rejected rows go out again: the partner refused them, so no lead was made
    // (the sandbox still counts a key it answered twice, even with a 400 each time).
    expect(sandbox.stats().operations.quote.received - quotesBefore).toBe(6);
    const rejected = readLedger(tmp.path('l.db'), 1).rows.filter((r) => r.state === 'rejected').map((r) => r.row_key);
    expect(rejected).toHaveLength(5);
    expect(sandbox.stats().duplicateLeads).toEqual([...rejected].sort());
    expect(second.stderr).toContain('row 1: row key "clk_cf7b62f5b30f" was already sent to the partner by job 1 (its row 1, succeeded); not sent again (--resend-sent sends it)');
    expect(second.stderr.match(/already sent to the partner/g)).toHaveLength(1); // one warning, not one per row
    expect(second.stdout).toContain('178 duplicate row(s) were not sent: another job of this ledger had already sent their leads to uat');
    expect(second.stdout).toContain('To send them all the same, run again with --fresh --resend-sent.');

    // --fresh alone starts a new job of the same file: still nothing sent twice.
    const fresh = await run(SAMPLE_CSV, 'uat', ['--fresh']);
    expect(fresh.code, fresh.stderr).toBe(1);
    expect(readLedger(tmp.path('l.db'), 3).states).toMatchObject({ duplicate: 178, invalid: 9 }); // row 17 has its bad date again
    expect(sandbox.stats().duplicateLeads).toEqual([...rejected].sort());

    // Deliberately: every lead again.
    const again = await run(SAMPLE_CSV, 'uat', ['--fresh', '--resend-sent']);
    expect(again.code, again.stderr).toBe(1);
    expect(readLedger(tmp.path('l.db'), 4).states).toMatchObject({ succeeded: 176, duplicate: 2 });
    expect(sandbox.stats().duplicateLeads).toHaveLength(176 + 5);
    expect(again.stderr).not.toContain('already sent');
  });

  it('sandbox: the rows are sent again, with one warning that uat and production would not send them', async () => {
    const first = await run(SAMPLE_CSV, 'sandbox');
    expect(first.code, first.stderr).toBe(1);
    const second = await run(fixedInPlace(), 'sandbox');
    expect(second.code, second.stderr).toBe(1);
    expect(readLedger(tmp.path('l.db'), 2).states).toMatchObject({ succeeded: 177, duplicate: 2 });
    expect(second.stderr.match(/was already sent by job 1/g)).toHaveLength(1);
    expect(second.stderr).toContain('in the sandbox such rows are sent again; in uat and production they are recorded duplicate, not sent (unless --resend-sent)');
    expect(second.stdout).not.toContain('were not sent');
  });
});

describe('Ledger.sentByOtherJob', () => {
  let tmp: ReturnType<typeof makeTempDir>;
  beforeEach(() => {
    tmp = makeTempDir();
  });
  afterEach(() => tmp.cleanup());

  it('finds a key another job of the same environment and operation sent, or may have sent', () => {
    const ledger = Ledger.open(tmp.path('l.db'));
    try {
      const job = (environment: Environment, operation: Operation): number => ledger.createJob({
        input_path: `/in/${environment}-${operation}.csv`, input_sha256: `${environment}${operation}`, input_format: 'csv',
        mapping_path: '/m.yaml', mapping_sha256: 'm', environment, operation, base_url: 'http://127.0.0.1:1',
      }).id;
      const uat = job('uat', 'quote');
      const rows: [number, string, string][] = [
        [1, 'sent', 'succeeded'], [2, 'doubt', 'in_doubt'], [3, 'refused', 'rejected'], [4, 'waiting', 'pending'], [5, 'failed', 'failed'],
        [6, 'row-6', 'succeeded'], // a key made from the row number: says nothing about another file
      ];
      ledger.insertRows(uat, rows.map(([rowNumber, rowKey, state]) => ({ rowNumber, rowKey, agentEmail: null, state: state as 'pending' })));
      const production = job('production', 'quote');
      const lead = job('uat', 'lead');
      const next = job('uat', 'quote');
      const cases: [number, string, { job_id: number; row_number: number; state: string } | undefined][] = [
        [next, 'sent', { job_id: uat, row_number: 1, state: 'succeeded' }],
        [next, 'doubt', { job_id: uat, row_number: 2, state: 'in_doubt' }],
        [next, 'refused', undefined],
        [next, 'waiting', undefined],
        [next, 'failed', undefined],
        [next, 'row-6', undefined],
        [next, 'unknown', undefined],
        [uat, 'sent', undefined], // its own rows are the in-job duplicate check's business
        [production, 'sent', undefined],
        [lead, 'sent', undefined],
      ];
      for (const [jobId, key, expected] of cases) {
        const environment = jobId === production ? 'production' : 'uat';
        const operation = jobId === lead ? 'lead' : 'quote';
        expect(ledger.sentByOtherJob(jobId, environment, operation, key), `job ${jobId} key ${key}`).toEqual(expected);
      }
      // The lookup searches the index by key (not a scan of it, nor of the table).
      const plan = ledger.db.prepare(`EXPLAIN QUERY PLAN SELECT 1 FROM rows INDEXED BY rows_key_job WHERE row_key = 'x' AND job_id != 1`).all();
      expect(JSON.stringify(plan)).toMatch(/SEARCH rows USING (COVERING )?INDEX rows_key_job \(row_key=\?\)/);
    } finally {
      ledger.close();
    }
  });
});
