/**
 * Several workers on one job (PostgreSQL ledger), as a fleet runs them: the same `run` started three
 * times at once, the real CLI against the sandbox. They share the job and complete it with each lead
 * sent once; a worker killed (kill -9) at a random moment leaves its chunks to the others once its
 * lease runs out, its rows in flight in doubt, never resent.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { SandboxHandle } from '../../src/sandbox/index.js';
import { startCli, type CliResult } from '../helpers/cli.js';
import { createTestDatabase, queryLedger } from '../helpers/postgres.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { generateLeads, KEY, MAPPING_CSV, startTestSandbox, waitFor } from '../pipeline/_setup.js';

const ROWS = 600;
const CONCURRENCY = 4;
/** Requests/s of each worker: a round lasts about five seconds, so that a kill lands while chunks are held. */
const RATE = 40;

describe('three workers on one job', () => {
  const tmp = makeTempDir('quote-batch-workers-');
  let leads: { csv: string; agents: string };
  let sandbox: SandboxHandle;
  beforeAll(async () => {
    leads = generateLeads(tmp.dir, ROWS, 17);
    sandbox = await startTestSandbox({ agentsFile: leads.agents, faults: { latencyMs: 50, jitterMs: 10 } });
  });
  afterAll(async () => {
    await sandbox.close();
    tmp.cleanup();
  });

  const worker = (ledger: string): ReturnType<typeof startCli> => startCli(
    ['run', leads.csv, '--mapping', MAPPING_CSV, '--env', 'sandbox', '--base-url', sandbox.url, '--ledger', ledger,
      '--concurrency', String(CONCURRENCY), '--rate', String(RATE), '--lease', '2s', '--quiet', '--json-log'],
    { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: KEY }, timeoutMs: 90_000 },
  );

  async function statesOf(ledger: string): Promise<Record<string, number>> {
    const rows = await queryLedger<{ state: string; n: number }>(ledger, 'SELECT state, COUNT(*)::int AS n FROM rows GROUP BY state');
    return Object.fromEntries(rows.map((r) => [r.state, r.n]));
  }

  it('share it: each worker claims its part, the job completes, every lead is sent once', async () => {
    sandbox.reset();
    const ledger = await createTestDatabase(inject('postgresUrl'));
    const results: CliResult[] = await Promise.all([worker(ledger), worker(ledger), worker(ledger)].map((w) => w.done));
    for (const r of results) expect([0, 1], r.stderr).toContain(r.code);
    const logs = results.map((r) => r.stderr.trimEnd().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>));
    const joined = logs.flat().filter((l) => l.event === 'job_joined' || l.event === 'job_started' || l.event === 'job_resumed');
    expect(joined.filter((l) => l.event === 'job_started')).toHaveLength(1);
    const summaries = logs.flat().filter((l) => l.event === 'summary');
    expect(summaries).toHaveLength(3);
    // Each did a share of the rows.
    for (const s of summaries) expect(s.worker_rows as number).toBeGreaterThan(0);
    const states = await statesOf(ledger);
    expect(states.pending ?? 0).toBe(0);
    expect(states.in_flight ?? 0).toBe(0);
    expect(states.in_doubt ?? 0).toBe(0);
    const [job] = await queryLedger<{ status: string; total_rows: number }>(ledger, 'SELECT status, total_rows FROM jobs');
    expect(job).toEqual({ status: 'completed', total_rows: ROWS });
    const stats = sandbox.stats();
    expect(stats.duplicateLeads).toEqual([]);
    expect(stats.operations.quote.received).toBe((states.succeeded ?? 0) + (states.rejected ?? 0));
  });

  it('a worker killed (kill -9) at a random moment, ten times: the others finish its rows, none sent twice, at most its concurrency in doubt', async () => {
    let seed = 20261128;
    const random = (): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    let takenOver = 0;
    for (let round = 1; round <= 10; round += 1) {
      sandbox.reset();
      const ledger = await createTestDatabase(inject('postgresUrl'));
      const workers = [worker(ledger), worker(ledger), worker(ledger)];
      const victim = workers[Math.floor(random() * 3)] as ReturnType<typeof startCli>;
      // At a random moment of its work: once it holds a chunk, within the next two seconds.
      await waitFor(async () => (await queryLedger(ledger, 'SELECT 1 FROM chunks c JOIN runs r ON r.id = c.run_id WHERE r.pid = $1 AND NOT c.done',
        [victim.child.pid]).catch(() => [])).length > 0, 30_000, 100);
      await new Promise((resolve) => setTimeout(resolve, random() * 2000));
      victim.child.kill('SIGKILL');
      const results = await Promise.all(workers.map((w) => w.done));
      const killed = results.filter((r) => r.signal === 'SIGKILL');
      expect(killed, `round ${round}`).toHaveLength(1);
      for (const r of results.filter((x) => x.signal !== 'SIGKILL')) expect([0, 1, 3], `round ${round}: ${r.stderr}`).toContain(r.code);
      const states = await statesOf(ledger);
      expect(states.pending ?? 0, `round ${round}`).toBe(0);
      expect(states.in_flight ?? 0, `round ${round}`).toBe(0);
      expect(states.failed ?? 0, `round ${round}`).toBe(0);
      expect(states.in_doubt ?? 0, `round ${round}`).toBeLessThanOrEqual(CONCURRENCY);
      expect(sandbox.stats().duplicateLeads, `round ${round}`).toEqual([]);
      const total = Object.values(states).reduce((a, b) => a + b, 0);
      expect(total, `round ${round}`).toBe(ROWS);
      takenOver += results.filter((r) => r.stderr.includes('"event":"chunk_taken_over"')).length;
    }
    // The dead worker's chunks were taken over (not merely left to a later run).
    expect(takenOver).toBeGreaterThanOrEqual(8);
  }, 240_000);
});
