/**
 * Every command on a PostgreSQL ledger, as users run them (the real CLI, a real server, the sandbox
 * over loopback): the same outcomes and the same report as on SQLite, resume, resolve, prune, and
 * the connection string's password in no output and no byte of the ledger.
 */
import { beforeAll, describe, expect, inject, it } from 'vitest';
import type { SandboxHandle } from '../../src/sandbox/index.js';
import { runCli, type CliResult } from '../helpers/cli.js';
import { createTestDatabase, ledgerText, queryLedger, TEST_PG_PASSWORD } from '../helpers/postgres.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { KEY, MAPPING_CSV, readLedger, SAMPLE_CSV, startTestSandbox } from '../pipeline/_setup.js';

/** The parts of a report that do not depend on when or where it ran. */
function comparable(report: Record<string, unknown>): unknown {
  const drop = /(_at|^generated_at$|seconds|latency_ms|^timeline$|^completions$|^runs$|^timing$|^input_path$|^base_url$|^mapping_path$|^id$|job_id|run_id|^samples$|^settled_samples$|^in_flight_max$)$/;
  const walk = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(walk);
    if (value === null || typeof value !== 'object') return value;
    return Object.fromEntries(Object.entries(value).filter(([k]) => !drop.test(k)).map(([k, v]) => [k, walk(v)]));
  };
  return walk(report);
}

describe('commands on a PostgreSQL ledger', () => {
  const tmp = useTempDir('quote-batch-pg-commands-');
  let sandbox: SandboxHandle;
  let server: string;
  beforeAll(async () => {
    server = inject('postgresUrl');
  });

  const cli = (args: string[]): Promise<CliResult> => runCli(args, { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: KEY }, timeoutMs: 60_000 });
  const run = (ledger: string, extra: string[] = []): Promise<CliResult> =>
    cli(['run', SAMPLE_CSV, '--mapping', MAPPING_CSV, '--env', 'sandbox', '--base-url', sandbox.url, '--ledger', ledger, ...extra]);

  it('runs the samples with the outcomes and the report of the SQLite ledger, and never shows its password', async () => {
    sandbox = await startTestSandbox();
    try {
      const url = await createTestDatabase(server);
      // A fixed window: the adaptive one's figures follow the machine's timing, not the ledger.
      const pg = await run(url, ['--json-log', '--no-adaptive']);
      const sqlite = await run(tmp.path('same.db'), ['--no-adaptive']);
      expect(pg.code, pg.stderr).toBe(1);
      expect(sqlite.code).toBe(1);
      const states = await queryLedger<{ state: string; n: number }>(url, 'SELECT state, COUNT(*)::int AS n FROM rows GROUP BY state ORDER BY state');
      expect(Object.fromEntries(states.map((s) => [s.state, s.n]))).toEqual(readLedger(tmp.path('same.db')).states);
      const [pgReport, sqliteReport] = await Promise.all([cli(['report', '--ledger', url, '--format', 'json']), cli(['report', '--ledger', tmp.path('same.db'), '--format', 'json'])]);
      expect(pgReport.code, pgReport.stderr).toBe(0);
      expect(comparable(JSON.parse(pgReport.stdout) as Record<string, unknown>)).toEqual(comparable(JSON.parse(sqliteReport.stdout) as Record<string, unknown>));
      // Every format and command reads it.
      const outputs = [pg];
      for (const args of [['report', '--format', 'table'], ['report', '--format', 'csv'], ['report', '--format', 'html'], ['jobs'], ['jobs', '--format', 'json'],
        ['export'], ['export', '--format', 'ndjson', '--status', 'rejected,invalid'], ['export', '--format', 'source', '--status', 'invalid']]) {
        const result = await cli([...args, '--ledger', url]);
        expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
        expect(result.stdout.length, args.join(' ')).toBeGreaterThan(0);
        outputs.push(result);
      }
      expect(outputs.find((o) => o.stdout.includes('qb_state'))?.stdout.split('\n').filter((l) => l !== '')).toHaveLength(10);
      for (const output of outputs) expect(`${output.stdout}${output.stderr}`).not.toContain(TEST_PG_PASSWORD);
      expect(pg.stdout).toContain(`ledger       ${url.replace(`:${TEST_PG_PASSWORD}`, '')}`);
      expect(await ledgerText(url)).not.toContain(TEST_PG_PASSWORD);
      // A finished job is not run again.
      const again = await run(url);
      expect(again.stderr).toMatch(/job 1 already completed/);
      expect(sandbox.stats().operations.quote.received).toBe(2 * 181);
    } finally {
      await sandbox.close();
    }
  });

  it('resumes a job, settles its rows in doubt with resolve, and prunes it; a bad password is one line without it', async () => {
    sandbox = await startTestSandbox({ faults: { resetAfterRate: 0.08 } });
    try {
      const url = `${await createTestDatabase(server)}?schema=nightly`;
      const first = await run(url);
      expect(first.code).toBe(3);
      const inDoubt = await queryLedger<{ row_number: number }>(url, `SELECT row_number FROM rows WHERE state = 'in_doubt' ORDER BY row_number`, [], 'nightly');
      expect(inDoubt.length).toBeGreaterThan(0);
      expect(first.stdout).toMatch(/quote-batch resolve --ledger 'postgres:\/\/postgres@127\.0\.0\.1:\d+\/qb_test_\w+\?schema=nightly'/);
      const resolved = await cli(['resolve', '--ledger', url, '--all-in-doubt', '--as', 'pending', '--note', 'not at the partner']);
      expect(resolved.code, resolved.stderr).toBe(0);
      expect(resolved.stdout).toContain(`${inDoubt.length} row(s) resolved from in_doubt to pending`);
      sandbox.setFaults({ resetAfterRate: 0 });
      const second = await run(url);
      expect(second.code, second.stderr).toBe(1);
      expect(second.stderr).toMatch(/resuming job 1/);
      const states = await queryLedger<{ state: string }>(url, `SELECT DISTINCT state FROM rows`, [], 'nightly');
      expect(states.map((s) => s.state).sort()).toEqual(['agent_invalid', 'duplicate', 'invalid', 'rejected', 'succeeded']);
      const pruned = await cli(['prune', '--ledger', url, '--older-than', '1', '--vacuum', '--include-unfinished']);
      expect(pruned.code, pruned.stderr).toBe(0);
      const wrong = await cli(['jobs', '--ledger', url.replace(TEST_PG_PASSWORD, 'not-the-password-9f2')]);
      expect(wrong.code).toBe(2);
      expect(wrong.stderr.trimEnd().split('\n')[0]).toMatch(/^error: ledger postgres:\/\/postgres@127\.0\.0\.1:\d+\/qb_test_\w+\?schema=nightly: .*password/);
      expect(wrong.stderr).not.toContain('not-the-password-9f2');
    } finally {
      await sandbox.close();
    }
  });
});
