/**
 * The job lock dies with its process (issue 9 item 5): a run killed the way supervisors kill
 * (SIGKILL to its process group), or left a zombie by a parent that does not reap it, can be
 * resumed at once; a live run keeps the job to itself (exit 4, nothing sent).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxHandle } from '../../src/sandbox/index.js';
import { CLI, cliEnv, runCli, startCli, type CliResult } from '../helpers/cli.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { countState, generateLeads, MAPPING_CSV, readLedger, waitFor } from '../pipeline/_setup.js';
import { CANARY_KEY, expectedCounts, expectNoSecrets, expectPrivateLedger, startCanarySandbox } from './_shared.js';

const ROWS = 1000;
const LOCKED = /in use by another live quote-batch process/;

/** Rows whose last attempt the partner answered 429, as the ledger has them now (read while a run writes). */
function refusedRows(path: string): { row_number: number; state: string; attempts: number; http_status: number | null }[] {
  if (!existsSync(path)) return [];
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return db.prepare(
      `SELECT r.row_number, r.state, r.attempts, r.http_status FROM rows r
        WHERE (SELECT a.http_status FROM attempts a WHERE a.job_id = r.job_id AND a.row_number = r.row_number
                ORDER BY a.id DESC LIMIT 1) = 429`,
    ).all() as { row_number: number; state: string; attempts: number; http_status: number | null }[];
  } catch {
    return []; // the ledger's tables not created yet
  } finally {
    db.close();
  }
}

describe('killed runs resume at once; live runs keep their job', () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let files: { csv: string; agents: string };
  let sandbox: SandboxHandle;
  const spawned: ChildProcess[] = [];

  beforeAll(() => {
    tmp = makeTempDir('quote-batch-kill-');
    files = generateLeads(tmp.dir, ROWS, 5);
  });
  afterEach(async () => {
    for (const child of spawned.splice(0)) {
      try {
        process.kill(-(child.pid as number), 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await sandbox?.close();
  });
  afterAll(() => tmp?.cleanup());

  const argsFor = (ledger: string, url = sandbox.url): string[] => [
    'run', files.csv, '--mapping', MAPPING_CSV, '--base-url', url, '--env', 'sandbox', '--ledger', ledger, '--concurrency', '8', '--quiet',
  ];
  const opts = (): { cwd: string; env: Record<string, string> } => ({ cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: CANARY_KEY } });

  /** Starts the CLI as the leader of its own process group, as a supervisor does. */
  function startDetached(args: readonly string[]): ChildProcess {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: tmp.dir, env: cliEnv(opts().env), detached: true, stdio: 'ignore' });
    spawned.push(child);
    return child;
  }

  /**
   * Settles the rows left in doubt by asking the sandbox what it processed (as ops would ask the
   * partner), with `resolve`, then runs once more: every row must end final, no lead twice.
   */
  async function settleAndFinish(ledgerPath: string, args: readonly string[]): Promise<CliResult[]> {
    const inDoubt = readLedger(ledgerPath).rows.filter((r) => r.state === 'in_doubt');
    // Each was in flight (or timed out after sending): its request may have reached the partner, and counts.
    for (const row of inDoubt) expect(row.attempts, `row ${row.row_number}`).toBeGreaterThanOrEqual(1);
    const processed = sandbox.stats().leads;
    const arrived = inDoubt.filter((r) => (processed[r.row_key ?? '']?.processed ?? 0) > 0).map((r) => r.row_number);
    const lost = inDoubt.filter((r) => !arrived.includes(r.row_number)).map((r) => r.row_number);
    const results: CliResult[] = [];
    for (const [rows, as] of [[arrived, 'succeeded'], [lost, 'pending']] as const) {
      if (rows.length === 0) continue;
      const resolve = await runCli(['resolve', '--ledger', ledgerPath, '--rows', rows.join(','), '--as', as, '--note', 'checked with the partner'], opts());
      expect(resolve.code, resolve.stderr).toBe(0);
      results.push(resolve);
    }
    const last = await runCli(args, opts());
    results.push(last);
    expect(last.code, last.stderr).toBe(1); // completed; the generated file has rows with data to fix
    const ledger = readLedger(ledgerPath);
    expect(ledger.states).toEqual(expectedCounts(ROWS));
    expect(ledger.integrity).toBe('ok');
    expect(sandbox.stats().duplicateLeads).toEqual([]);
    expectPrivateLedger('kill-resume', ledgerPath);
    expect(statSync(`${ledgerPath}.job-1.lock`).mode & 0o777).toBe(0o600);
    return results;
  }

  it('resumes at once after SIGKILL of the run\'s process group: no refusal, every row final, no lead twice', async () => {
    sandbox = await startCanarySandbox({ latencyMs: 5, jitterMs: 5 }, 5, files.agents);
    const ledgerPath = tmp.path('group.db');
    const args = argsFor(ledgerPath);
    const child = startDetached(args);
    await waitFor(() => countState(ledgerPath, 'succeeded') >= 200, 60_000, 20);
    process.kill(-(child.pid as number), 'SIGKILL');
    // No waiting for the killed process to be reaped: a process manager restarts at once.
    const resume = await runCli(args, opts());
    expect(resume.stderr).not.toMatch(LOCKED);
    expect([1, 3], resume.stderr).toContain(resume.code);
    expect(readLedger(ledgerPath).runs.map((r) => r.status)).toEqual(['crashed', 'completed']);
    const results = await settleAndFinish(ledgerPath, args);
    expectNoSecrets('group kill', [resume, ...results], ledgerPath);
  });

  it.skipIf(!existsSync('/proc/self/status'))('resumes at once while the killed run is a zombie its parent has not reaped', async () => {
    sandbox = await startCanarySandbox({ latencyMs: 5, jitterMs: 5 }, 6, files.agents);
    const ledgerPath = tmp.path('zombie.db');
    const args = argsFor(ledgerPath);
    // The run's parent is a `sleep` that never reaps it (sh prints the run's pid, then becomes sleep).
    const parent = spawn('/bin/sh', ['-c', '"$0" "$@" & echo $!; exec sleep 120', process.execPath, CLI, ...args], {
      cwd: tmp.dir, env: cliEnv(opts().env), detached: true, stdio: ['ignore', 'pipe', 'ignore'],
    });
    spawned.push(parent);
    const pid = await new Promise<number>((resolve) => parent.stdout?.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
    await waitFor(() => countState(ledgerPath, 'succeeded') >= 200, 60_000, 20);
    process.kill(pid, 'SIGKILL');
    await waitFor(() => /State:\s+Z/.test(readFileSync(`/proc/${pid}/status`, 'utf8')), 10_000, 10);
    expect(() => process.kill(pid, 0)).not.toThrow(); // what fooled the pid check: a zombie "exists"
    // Before any run notices, jobs and report show the run's process gone, not `running`, once it has
    // written no heartbeat for a minute (aged here, as if read next morning): the zombie's pid does not count.
    const aged = new Database(ledgerPath);
    aged.prepare(`UPDATE runs SET heartbeat_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-70 seconds') WHERE status = 'running'`).run();
    aged.close();
    const jobs = await runCli(['jobs', '--ledger', ledgerPath, '--format', 'json'], opts());
    expect((JSON.parse(jobs.stdout) as { status: string; process_gone: boolean }[]).map((j) => [j.status, j.process_gone])).toEqual([['running', true]]);
    expect((await runCli(['report', '--ledger', ledgerPath], opts())).stdout).toMatch(/^quote-batch report · job 1 · crashed \(run 1's process is gone\)\n/);

    const resume = await runCli(args, opts());
    expect(resume.stderr).not.toMatch(LOCKED);
    expect([1, 3], resume.stderr).toContain(resume.code);
    expect(readFileSync(`/proc/${pid}/status`, 'utf8')).toMatch(/State:\s+Z/); // still a zombie throughout
    await settleAndFinish(ledgerPath, args);
  });

  it('leaves a row the partner answered 429 to be sent again, not in doubt, when the run is killed during its Retry-After', async () => {
    // 20 requests a second and a Retry-After the refused rows are still waiting out at the kill.
    sandbox = await startCanarySandbox({ latencyMs: 5, jitterMs: 5, rpsCap: 20, retryAfterSeconds: 60 }, 8, files.agents);
    const ledgerPath = tmp.path('refused.db');
    const args = argsFor(ledgerPath);
    const child = startDetached(args);
    // The refusals are recorded as they come, not when the row's call ends.
    await waitFor(() => refusedRows(ledgerPath).length >= 4, 30_000, 20);
    process.kill(-(child.pid as number), 'SIGKILL');

    const refused = refusedRows(ledgerPath);
    expect(refused.length).toBeGreaterThanOrEqual(4);
    for (const row of refused) expect(row, `row ${row.row_number}`).toMatchObject({ state: 'pending', attempts: 1 });
    // In flight: only what may be on the wire (the window never passes --concurrency 8).
    expect(countState(ledgerPath, 'in_flight')).toBeLessThanOrEqual(8);

    sandbox.setFaults({ rpsCap: 0 });
    const resume = await runCli(args, opts());
    expect([1, 3], resume.stderr).toContain(resume.code);
    const after = new Map(readLedger(ledgerPath).rows.map((r) => [r.row_number, r.state]));
    for (const row of refused) expect(['succeeded', 'rejected', 'agent_invalid', 'invalid'], `row ${row.row_number}`).toContain(after.get(row.row_number));
    const results = await settleAndFinish(ledgerPath, args);
    expectNoSecrets('refused kill', [resume, ...results], ledgerPath);
  });

  it('refuses a second run with exit 4 while the first lives; the second sends nothing', async () => {
    sandbox = await startCanarySandbox({ latencyMs: 20 }, 7, files.agents);
    const other = await startCanarySandbox({}, 7, files.agents);
    try {
      const ledgerPath = tmp.path('live.db');
      const first = startCli(argsFor(ledgerPath), opts());
      await waitFor(() => countState(ledgerPath, 'succeeded') >= 20, 60_000, 20);
      // Same job (same file, mapping, environment, operation), pointed at another sandbox to see what it sends.
      const second = await runCli(argsFor(ledgerPath, other.url), opts());
      expect(second.code, second.stderr).toBe(4);
      expect(second.stderr).toMatch(new RegExp(`error: job 1 is in use by another live quote-batch process \\(its run 1 was started by pid ${first.child.pid}`));
      expect(second.stderr).toMatch(/^hint: wait for that run/m);
      const sent = other.stats().operations;
      expect([sent.validate.received, sent.quote.received, sent.lead.received]).toEqual([0, 0, 0]);
      first.child.kill('SIGTERM');
      expect((await first.done).code).toBe(3);
      expect(readLedger(ledgerPath).runs.map((r) => r.status)).toEqual(['interrupted']);
    } finally {
      await other.close();
    }
  });

  it('lets exactly one of two runs started at the same moment run the job', async () => {
    sandbox = await startCanarySandbox({ latencyMs: 10 }, 8, files.agents);
    const ledgerPath = tmp.path('race.db');
    const [a, b] = await Promise.all([runCli(argsFor(ledgerPath), opts()), runCli(argsFor(ledgerPath), opts())]);
    expect([a.code, b.code].sort(), `${a.stderr}\n${b.stderr}`).toEqual([1, 4]);
    expect((a.code === 4 ? a : b).stderr).toMatch(LOCKED);
    const ledger = readLedger(ledgerPath);
    expect(ledger.jobs).toHaveLength(1);
    expect(ledger.states).toEqual(expectedCounts(ROWS));
    expect(sandbox.stats().duplicateLeads).toEqual([]);
  });
});
