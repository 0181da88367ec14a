/**
 * Faults of the PostgreSQL ledger, each against a real server, with the real CLI and the sandbox:
 * connections killed mid-transaction (pg_terminate_backend), a connection cut right after its COMMIT
 * went through (a relay, test/helpers/pg-proxy.ts), the server stopped for 30 s, a worker frozen
 * (SIGSTOP) past its lease, a write the database refuses. In each: no row sent that was not marked
 * in flight first, no outcome lost, no lead twice, and a frozen worker's later writes change nothing.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import pg from 'pg';
import type { SandboxHandle } from '../../src/sandbox/index.js';
import { startCli, type CliResult } from '../helpers/cli.js';
import { startPgProxy } from '../helpers/pg-proxy.js';
import { createTestDatabase, queryLedger, startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { generateLeads, KEY, MAPPING_CSV, startTestSandbox, waitFor } from '../pipeline/_setup.js';

const ROWS = 400;

describe('the PostgreSQL ledger when the database fails', () => {
  const tmp = makeTempDir('quote-batch-pg-faults-');
  let leads: { csv: string; agents: string };
  let sandbox: SandboxHandle;
  beforeAll(async () => {
    leads = generateLeads(tmp.dir, ROWS, 23);
    sandbox = await startTestSandbox({ agentsFile: leads.agents, faults: { latencyMs: 20, jitterMs: 10 } });
  });
  afterAll(async () => {
    await sandbox.close();
    tmp.cleanup();
  });

  const worker = (ledger: string, extra: string[] = []): ReturnType<typeof startCli> => startCli(
    ['run', leads.csv, '--mapping', MAPPING_CSV, '--env', 'sandbox', '--base-url', sandbox.url, '--ledger', ledger, '--quiet', '--json-log', ...extra],
    { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: KEY }, timeoutMs: 150_000 },
  );

  /** The ledger's rows by state, and what the sandbox saw: every lead it took is a row the ledger shows sent, none twice. */
  async function expectConsistent(ledger: string, label: string): Promise<Record<string, number>> {
    const rows = await queryLedger<{ row_key: string; state: string }>(ledger, 'SELECT row_key, state FROM rows');
    const states: Record<string, number> = {};
    for (const r of rows) states[r.state] = (states[r.state] ?? 0) + 1;
    expect(rows, label).toHaveLength(ROWS);
    expect(states.in_flight ?? 0, label).toBe(0);
    const stats = sandbox.stats();
    expect(stats.duplicateLeads, label).toEqual([]);
    // A lead the partner has is a row recorded as sent (or in doubt): never one left pending or failed.
    const sent = new Set(rows.filter((r) => ['succeeded', 'rejected', 'in_doubt'].includes(r.state)).map((r) => r.row_key));
    const taken = Object.entries(stats.leads).filter(([, lead]) => lead.processed > 0).map(([key]) => key);
    for (const key of taken) expect(sent.has(key), `${label}: lead ${key}`).toBe(true);
    return states;
  }

  it('connections killed mid-transaction, again and again: the run goes on and completes', async () => {
    sandbox.reset();
    const ledger = await createTestDatabase(inject('postgresUrl'));
    const run = worker(ledger, ['--rate', '60']);
    const admin = new pg.Client({ connectionString: inject('postgresUrl') });
    admin.on('error', () => {});
    await admin.connect();
    const db = new URL(ledger).pathname.slice(1);
    let killed = 0;
    let result: CliResult | undefined;
    void run.done.then((r) => (result = r));
    try {
      // Every 50 ms: a worker's writes are a statement or two per batch, so a connection is seldom caught busy.
      for (let i = 0; i < 120 && result === undefined; i += 1) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        const ended = await admin.query<{ n: number }>(
          `SELECT COUNT(*)::int AS n FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND application_name = 'quote-batch' AND state <> 'idle') k`, [db]);
        killed += ended.rows[0]?.n ?? 0;
      }
    } finally {
      await admin.end();
    }
    const done = await run.done;
    expect(killed).toBeGreaterThan(3);
    expect([0, 1], done.stderr).toContain(done.code);
    const states = await expectConsistent(ledger, 'terminated');
    expect(states.pending ?? 0).toBe(0);
    expect(sandbox.stats().operations.quote.received).toBe((states.succeeded ?? 0) + (states.rejected ?? 0) + (states.in_doubt ?? 0));
  });

  it('a connection cut right after its COMMIT went through, ten times: the commit is found applied, not applied twice', async () => {
    sandbox.reset();
    const ledger = await createTestDatabase(inject('postgresUrl'));
    const server = new URL(ledger);
    const proxy = await startPgProxy({ host: server.hostname, port: Number(server.port) });
    try {
      const through = new URL(ledger);
      through.port = String(proxy.port);
      const run = worker(through.href, ['--rate', '80']);
      let result: CliResult | undefined;
      void run.done.then((r) => (result = r));
      for (let i = 0; i < 10 && result === undefined; i += 1) {
        proxy.cutAfterCommit(3);
        await waitFor(() => proxy.cut > i || result !== undefined, 20_000, 20);
      }
      const done = await run.done;
      expect(proxy.cut).toBeGreaterThanOrEqual(5);
      expect([0, 1], done.stderr).toContain(done.code);
      const states = await expectConsistent(ledger, 'cut after commit');
      expect(states.pending ?? 0).toBe(0);
      // Each attempt is recorded once: no row has more attempts than requests the partner saw for it.
      const [{ attempts }] = await queryLedger<{ attempts: number }>(ledger, `SELECT COUNT(*)::int AS attempts FROM attempts WHERE kind = 'quote'`) as [{ attempts: number }];
      expect(attempts).toBe(sandbox.stats().operations.quote.received);
    } finally {
      await proxy.close();
    }
  });

  it('the server stopped for 30 s and started again: the worker waits within its lease, then completes', async () => {
    sandbox.reset();
    const own: TestPostgres = await startPostgres();
    try {
      const ledger = own.url();
      const run = worker(ledger, ['--rate', '25', '--lease', '60s']);
      await waitFor(async () => (await queryLedger<{ n: number }>(ledger, `SELECT COUNT(*)::int AS n FROM rows WHERE state = 'succeeded'`).catch(() => [{ n: 0 }]))[0]!.n > 40, 30_000, 100);
      await own.stop();
      const receivedAtStop = sandbox.stats().operations.quote.received;
      await new Promise((resolve) => setTimeout(resolve, 30_000));
      // Nothing is sent while the ledger cannot record it in flight first.
      expect(sandbox.stats().operations.quote.received - receivedAtStop).toBeLessThanOrEqual(2 * 8);
      await own.start();
      const done = await run.done;
      expect([0, 1], done.stderr).toContain(done.code);
      const states = await expectConsistent(ledger, 'server stopped');
      expect(states.pending ?? 0).toBe(0);
    } finally {
      await own.destroy();
    }
  }, 120_000);

  it('a write the database refuses (a trigger raising an error), not a connection failing: the worker halts on it at once, the rows it left in flight in doubt, never sent again', async () => {
    sandbox.reset();
    const ledger = await createTestDatabase(inject('postgresUrl'));
    const run = worker(ledger, ['--rate', '20']);
    await waitFor(async () => (await queryLedger<{ n: number }>(ledger, `SELECT COUNT(*)::int AS n FROM rows WHERE state = 'succeeded'`).catch(() => [{ n: 0 }]))[0]!.n > 10, 30_000, 100);
    await queryLedger(ledger, `CREATE FUNCTION refuse_outcomes() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.state = 'succeeded' THEN RAISE EXCEPTION 'outcomes refused by the test'; END IF; RETURN NEW; END $$`);
    await queryLedger(ledger, 'CREATE TRIGGER refuse_outcomes BEFORE UPDATE ON rows FOR EACH ROW EXECUTE FUNCTION refuse_outcomes()');
    const refusedFrom = Date.now();
    const done = await run.done;
    // Sent again, the statement is refused again: it used to be tried for minutes (200 times, 4 s apart).
    expect(Date.now() - refusedFrom).toBeLessThan(30_000);
    expect(done.code, done.stderr).toBe(3);
    expect(done.stderr).not.toMatch(/internal error|\n\s+at /);
    expect(done.stderr).toMatch(/outcomes refused by the test \(P0001\)/);
    await queryLedger(ledger, 'DROP TRIGGER refuse_outcomes ON rows');
    // The rows whose outcomes were refused are in doubt (their requests left), with an attempt of the run that sent them.
    const inDoubt = await queryLedger<{ row_number: number; runs: number[] }>(ledger,
      `SELECT r.row_number, array_agg(a.run_id) AS runs FROM rows r JOIN attempts a ON a.job_id = r.job_id AND a.row_number = r.row_number AND a.error_code = 'process_stopped'
        WHERE r.state = 'in_doubt' GROUP BY r.row_number`);
    expect(inDoubt.length).toBeGreaterThan(0);
    for (const row of inDoubt) expect(row.runs, `row ${row.row_number}`).toEqual([1]);
    const again = await worker(ledger).done;
    // Never sent again: the second run leaves them in doubt for ops to check with the partner (exit 3).
    expect(again.code, again.stderr).toBe(3);
    const states = await expectConsistent(ledger, 'refused');
    expect(states.pending ?? 0).toBe(0);
    expect(states.in_doubt).toBe(inDoubt.length);
  });

  it('a worker frozen (SIGSTOP) past its lease: the other takes its chunk over, its rows in flight stay in doubt, its later writes change nothing', async () => {
    sandbox.reset();
    const ledger = await createTestDatabase(inject('postgresUrl'));
    const frozen = worker(ledger, ['--rate', '30', '--lease', '2s', '--concurrency', '4']);
    await waitFor(async () => (await queryLedger(ledger, `SELECT 1 FROM rows WHERE state = 'in_flight'`).catch(() => [])).length > 0, 30_000, 20);
    frozen.child.kill('SIGSTOP');
    const inFlight = (await queryLedger<{ row_number: number }>(ledger, `SELECT row_number FROM rows WHERE state = 'in_flight'`)).map((r) => r.row_number);
    const other = worker(ledger, ['--rate', '60', '--lease', '2s']);
    // The other worker takes the frozen one's chunk over once its lease has run out.
    await waitFor(async () => (await queryLedger(ledger, `SELECT 1 FROM rows WHERE state = 'in_doubt'`)).length > 0, 30_000, 100);
    frozen.child.kill('SIGCONT');
    const [a, b] = await Promise.all([frozen.done, other.done]);
    expect(a.code, a.stderr).toBe(3);
    expect(a.stderr).toMatch(/lost its claim on the job/);
    expect([0, 1, 3], b.stderr).toContain(b.code);
    const rows = await queryLedger<{ row_number: number; state: string }>(ledger, 'SELECT row_number, state FROM rows WHERE row_number = ANY($1::int[])', [inFlight]);
    // The frozen worker's answers to those requests came in after it woke: recorded nowhere.
    for (const row of rows) expect(row.state, `row ${row.row_number}`).toBe('in_doubt');
    await expectConsistent(ledger, 'frozen');
  });
});
