/**
 * One seeded crash case: a run over the generated leads is SIGKILLed at a seeded moment, resumed
 * to completion, and checked (issue item 3). Shared by the crash-*.test.ts files, which split
 * the seeds so that the two test workers run them side by side.
 */
import { statSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxHandle } from '../../src/sandbox/index.js';
import { runCli, startCli, type CliResult } from '../helpers/cli.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { countState, generateLeads, MAPPING_CSV, readLedger, waitFor } from '../pipeline/_setup.js';
import {
  CANARY_KEY, createRandom, expectedCounts, expectedStateOf, expectNoSecrets, expectPrivateLedger, FINAL_STATES,
  startCanarySandbox,
} from './_shared.js';

export const CRASH_ROWS = 5000;
export const CRASH_CONCURRENCY = 8;
/** Runs of one job after the kill before the suite gives up on reaching a final state. */
const MAX_RESUMES = 3;
/** Per CLI process: far above a healthy 5,000-row run, so a hang fails instead of stalling CI. */
const RUN_TIMEOUT_MS = 150_000;

/** How a seed kills its run. */
export interface KillPlan {
  /** `early`: after a delay from spawn (start-up, job creation, first rows); `rows`: after N succeeded rows. */
  mode: 'early' | 'rows';
  delayMs: number;
  afterSucceeded: number;
}

/** The kill moment of a seed: every fourth seed kills in the first seconds, the others anywhere. */
export function planKill(seed: number): KillPlan {
  const random = createRandom(seed * 7919);
  if (seed % 4 === 1) return { mode: 'early', delayMs: 100 + Math.floor(random() * 1900), afterSucceeded: 0 };
  return { mode: 'rows', delayMs: 0, afterSucceeded: 1 + Math.floor(random() * (CRASH_ROWS - 100)) };
}

/** The seeds of a crash file: `QB_CRASH_SEED=n` replays one seed; `QB_CRASH_SEEDS=k` keeps the first k. */
export function selectSeeds(all: readonly number[]): number[] {
  const only = Number(process.env.QB_CRASH_SEED ?? '');
  if (Number.isInteger(only) && only > 0) return all.includes(only) ? [only] : [];
  const keep = Number(process.env.QB_CRASH_SEEDS ?? '');
  return Number.isInteger(keep) && keep > 0 ? all.filter((s) => s <= keep) : [...all];
}

export interface CrashCaseReport {
  seed: number;
  plan: KillPlan;
  killedAtSucceeded: number;
  exitedBeforeKill: boolean;
  resumes: number;
  inDoubt: number;
  ms: number;
}

/**
 * Runs one seed end to end in `dir` with the generated `csv`. Every assertion message starts
 * with `seed N (replay: QB_CRASH_SEED=N)` so that a failure names the run to reproduce.
 */
export async function runCrashCase(seed: number, csv: string, agents: string, dir: string): Promise<CrashCaseReport> {
  const started = Date.now();
  const label = `seed ${seed} (replay: QB_CRASH_SEED=${seed} npx vitest run test/robustness/crash)`;
  const plan = planKill(seed);
  const sandbox: SandboxHandle = await startCanarySandbox({ latencyMs: 5, jitterMs: 5 }, seed, agents);
  const ledgerPath = `${dir}/crash-${seed}.db`;
  const args = [
    'run', csv, '--mapping', MAPPING_CSV, '--base-url', sandbox.url, '--env', 'sandbox', '--ledger', ledgerPath,
    '--concurrency', String(CRASH_CONCURRENCY),
  ];
  const opts = { cwd: dir, env: { QUOTE_BATCH_API_KEY: CANARY_KEY }, timeoutMs: RUN_TIMEOUT_MS };
  const results: CliResult[] = [];
  try {
    // 1. The run to kill. Progress lines on stderr (not --quiet) so that their bytes are searched too.
    const { child, done } = startCli(args, opts);
    let exited = false;
    void done.then(() => (exited = true));
    if (plan.mode === 'early') {
      await new Promise((r) => setTimeout(r, plan.delayMs));
    } else {
      await waitFor(() => exited || countState(ledgerPath, 'succeeded') >= plan.afterSucceeded, RUN_TIMEOUT_MS, 25);
    }
    const killedAtSucceeded = countState(ledgerPath, 'succeeded');
    child.kill('SIGKILL');
    const killed = await done;
    results.push(killed);
    const exitedBeforeKill = killed.signal !== 'SIGKILL';
    expect(killed.stderr, `${label}: killed run`).not.toMatch(/internal error/);

    // 2. Resume until nothing is left to send but rows in doubt (bounded).
    let resumes = 0;
    let last: CliResult | undefined;
    for (; resumes < MAX_RESUMES; resumes += 1) {
      last = await runCli([...args, '--quiet'], opts);
      results.push(last);
      expect(last.stderr, `${label}: resume ${resumes + 1} stderr`).not.toMatch(/internal error/);
      expect([0, 1, 3], `${label}: resume ${resumes + 1} exit code; stderr: ${last.stderr}`).toContain(last.code);
      const states = readLedger(ledgerPath).states;
      if ((states.pending ?? 0) + (states.failed ?? 0) + (states.in_flight ?? 0) === 0) {
        resumes += 1;
        break;
      }
    }

    // 3. The invariants.
    const ledger = readLedger(ledgerPath);
    expect(ledger.integrity, `${label}: PRAGMA integrity_check`).toBe('ok');
    expect(ledger.jobs.length, `${label}: one job`).toBe(1);
    expect(ledger.rows.length, `${label}: every row recorded`).toBe(CRASH_ROWS);
    const numbers = ledger.rows.map((r) => r.row_number);
    expect(new Set(numbers).size === CRASH_ROWS && numbers[0] === 1 && numbers.at(-1) === CRASH_ROWS, `${label}: row numbers 1..${CRASH_ROWS}, each once`).toBe(true);
    const inDoubtRows = ledger.rows.filter((r) => r.state === 'in_doubt');
    const wrong = ledger.rows.filter((r) => r.state !== 'in_doubt' && r.state !== expectedStateOf(r.row_number));
    expect(wrong.slice(0, 5), `${label}: rows in an unexpected state`).toEqual([]);
    expect(inDoubtRows.length, `${label}: in_doubt ≤ concurrency`).toBeLessThanOrEqual(CRASH_CONCURRENCY);
    expect(last?.code, `${label}: exit code of the last resume`).toBe(inDoubtRows.length > 0 ? 3 : 1);
    expect(ledger.jobs[0]?.status, `${label}: job status`).toBe(inDoubtRows.length > 0 ? 'interrupted' : 'completed');
    if (!exitedBeforeKill && ledger.runs.length > resumes) expect(ledger.runs[0]?.status, `${label}: the killed run`).toBe('crashed');
    expect(sandbox.stats().duplicateLeads, `${label}: leads the sandbox processed twice`).toEqual([]);
    expectPrivateLedger(label, ledgerPath);
    // The job lock survives the kill as a file (only the lock itself died with the process).
    expect((statSync(`${ledgerPath}.job-1.lock`).mode & 0o777).toString(8), `${label}: mode of the job lock file`).toBe('600');

    // 4. --resend-in-doubt completes every row; only the in-doubt leads may then be seen twice.
    if (inDoubtRows.length > 0) {
      const resend = await runCli([...args, '--quiet', '--resend-in-doubt'], opts);
      results.push(resend);
      expect(resend.code, `${label}: --resend-in-doubt exit code; stderr: ${resend.stderr}`).toBe(1);
      const after = readLedger(ledgerPath);
      expect(after.states, `${label}: counts after --resend-in-doubt`).toEqual(expectedCounts(CRASH_ROWS));
      for (const row of after.rows) expect(FINAL_STATES as readonly string[], `${label}: row ${row.row_number}`).toContain(row.state);
      const inDoubtKeys = new Set(inDoubtRows.map((r) => r.row_key));
      const unexpected = sandbox.stats().duplicateLeads.filter((key) => !inDoubtKeys.has(key));
      expect(unexpected, `${label}: duplicates other than the resent in-doubt leads`).toEqual([]);
      expect(after.integrity, `${label}: integrity after --resend-in-doubt`).toBe('ok');
    } else {
      expect(ledger.states, `${label}: final counts`).toEqual(expectedCounts(CRASH_ROWS));
    }
    expectNoSecrets(label, results, ledgerPath);
    expectPrivateLedger(label, ledgerPath);
    return {
      seed, plan, killedAtSucceeded, exitedBeforeKill, resumes, inDoubt: inDoubtRows.length, ms: Date.now() - started,
    };
  } finally {
    await sandbox.close();
  }
}

/**
 * Declares one crash-*.test.ts file's suite: its seeds over one generated 5,000-row file.
 * Replay one seed: `QB_CRASH_SEED=7 npx vitest run test/robustness/crash`.
 */
export function describeCrashSuite(name: string, seeds: readonly number[]): void {
  const selected = selectSeeds(seeds);
  describe(name, () => {
    let tmp: ReturnType<typeof makeTempDir>;
    let files: { csv: string; agents: string };
    const reports: CrashCaseReport[] = [];

    beforeAll(() => {
      tmp = makeTempDir('quote-batch-crash-');
      files = generateLeads(tmp.dir, CRASH_ROWS, 11);
    });
    afterAll(() => {
      // One line per seed: where it was killed and what the resume found (useful when tuning).
      for (const r of reports) console.log(`crash seed ${r.seed}: ${r.plan.mode} kill at ${r.killedAtSucceeded} succeeded${r.exitedBeforeKill ? ' (had exited)' : ''}, ${r.resumes} resume(s), ${r.inDoubt} in doubt, ${r.ms} ms`);
      tmp?.cleanup();
    });

    it.each(selected.length > 0 ? selected : [0])('seed %i: killed, resumed, every row in one final state, no lead twice', async (seed) => {
      if (seed === 0) return; // QB_CRASH_SEED names a seed of the other file
      const plan = planKill(seed);
      expect(plan.mode === 'early' ? plan.delayMs : plan.afterSucceeded).toBeGreaterThan(0);
      reports.push(await runCrashCase(seed, files.csv, files.agents, tmp.dir));
    }, 400_000);
  });
}
