/**
 * Adaptive concurrency remembers a partner's limit across runs: a run (a resume, or tonight's new
 * job) starts where the latest run sent to the same partner settled, instead of overshooting it
 * again with a cold slow start; a limit our own side set is only a floor. Runs that halted or ran
 * `--no-adaptive` are passed over; the embedded sandbox and another base URL start cold.
 */
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_INITIAL_WINDOW } from '../../src/partner/limiter/index.js';
import { SqliteDb } from '../../src/ledger/index.js';
import { readStartingLimit } from '../../src/pipeline/run-job.js';
import type { SandboxHandle } from '../../src/sandbox/index.js';
import { runCli, startCli } from '../helpers/cli.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { copyInto, generateLeads, KEY, MAPPING_CSV, startTestSandbox, waitFor } from './_setup.js';

interface LogLine {
  event?: string;
  msg?: string;
  limit?: number;
  warm?: boolean;
  pace?: number | null;
  settled_pace?: number | null;
  from_job?: number;
  from_run?: number;
}

/** The start line: where the limit settled (`warm`), or a floor to grow from. */
const STARTS = /^adaptive concurrency starts at [\d.]+ requests in flight(, paced at [\d.]+ requests\/s)?(, where run \d+ \(job \d+\) against this partner settled| and grows fast from there: run \d+ \(job \d+\) against this partner got that far without being held back by the partner)$/;

const logLines = (stderr: string): LogLine[] =>
  stderr.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as LogLine);

describe('adaptive concurrency across jobs', () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let sandbox: SandboxHandle;
  let files: { first: string; second: string; third: string };

  beforeEach(async () => {
    tmp = makeTempDir();
    // 50 ms per answer: the first job runs over a second, so its run records samples of its limit.
    sandbox = await startTestSandbox({ faults: { latencyMs: 50 } });
    const a = generateLeads(tmp.path('a'), 120, 21);
    const b = generateLeads(tmp.path('b'), 120, 22);
    const c = generateLeads(tmp.path('c'), 120, 23);
    files = { first: copyInto(tmp.dir, a.csv, 'monday.csv'), second: copyInto(tmp.dir, b.csv, 'tuesday.csv'), third: copyInto(tmp.dir, c.csv, 'wednesday.csv') };
  });
  afterEach(async () => {
    await sandbox.close();
    tmp.cleanup();
  });

  const run = (file: string, baseUrl: string | null, extra: string[] = []) =>
    runCli([
      'run', file, '--mapping', MAPPING_CSV, '--env', 'sandbox', '--ledger', tmp.path('l.db'), '--concurrency', '8', '--quiet', '--json-log',
      ...(baseUrl === null ? [] : ['--base-url', baseUrl]), ...extra,
    ], { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: KEY } });

  it('a new job against the same partner starts where the last one settled; another partner starts cold', async () => {
    const first = await run(files.first, sandbox.url);
    expect(first.stderr).not.toMatch(/internal error/);
    expect(logLines(first.stderr).filter((l) => l.event === 'warm_start')).toEqual([]); // nothing known yet

    const db = new Database(tmp.path('l.db'), { readonly: true });
    const limits = db.prepare('SELECT concurrency_limit FROM run_samples WHERE run_id = 1 ORDER BY elapsed_ms').pluck().all() as number[];
    db.close();
    expect(limits.length).toBeGreaterThan(0);

    const second = await run(files.second, sandbox.url);
    const warm = logLines(second.stderr).filter((l) => l.event === 'warm_start');
    expect(warm).toHaveLength(1);
    expect(warm[0]).toMatchObject({ from_job: 1, from_run: 1 });
    expect(limits).toContain(warm[0]?.limit);
    expect(warm[0]?.msg).toMatch(STARTS);

    // Another partner (another base URL) knows nothing of this one's limit.
    const other = await startTestSandbox({ faults: { latencyMs: 50 } });
    try {
      const elsewhere = await run(files.third, other.url);
      expect(logLines(elsewhere.stderr).map((l) => l.msg)).toContain('started job 3 (run 3)');
      expect(logLines(elsewhere.stderr).filter((l) => l.event === 'warm_start')).toEqual([]);
    } finally {
      await other.close();
    }
  });

  it('a partner with a rate cap: the next job starts paced just below the rate the last one settled at, and meets far fewer 429s', async () => {
    // 20 requests/s, counted per second: a cold start at 8 in flight × 50 ms overshoots it at once.
    sandbox.setFaults({ rpsCap: 20, rpsMode: 'window', retryAfterSeconds: 1 });
    const first = await run(files.first, sandbox.url);
    expect(first.code).not.toBe(3); // completed (exit 1: the generated file's deliberate bad rows)
    expect(logLines(first.stderr).filter((l) => l.event === 'warm_start')).toEqual([]);
    // Below the --concurrency ceiling (8): a limit the partner showed, as the summary says.
    expect(first.stdout).toMatch(/\nin flight {4}[\d.]+ requests allowed at the end \(median of (?:1 s|the last \d+ s)\) \(adaptive concurrency: where the partner's answers led it\)\n/);
    const second = await run(files.second, sandbox.url);
    expect(second.code).not.toBe(3);
    const warm = logLines(second.stderr).filter((l) => l.event === 'warm_start');
    expect(warm).toEqual([expect.objectContaining({ warm: true, from_run: 1 })]);
    expect(warm[0]?.msg).toMatch(STARTS);
    expect(warm[0]?.msg).toMatch(/, paced at [\d.]+ requests\/s, where run 1/);
    const pace = warm[0]?.pace ?? 0;
    // The pace the first run's summary reported is where the second starts.
    expect(logLines(first.stderr).filter((l) => l.event === 'summary').map((l) => l.settled_pace)).toEqual([pace]);
    // About the cap: counted per second, a window cap lets a little more through across two of them;
    // after a short first run the pace may still be climbing back from its first cut.
    expect(pace).toBeGreaterThan(5);
    expect(pace).toBeLessThan(30);

    const db = new Database(tmp.path('l.db'), { readonly: true });
    const throttled = (runId: number): number =>
      db.prepare("SELECT COUNT(*) FROM attempts WHERE run_id = ? AND kind = 'quote' AND http_status = 429").pluck().get(runId) as number;
    const firstSample = db.prepare('SELECT pace_rate FROM run_samples WHERE run_id = 2 ORDER BY elapsed_ms LIMIT 1').pluck().get() as number | null;
    const [cold, warmRun] = [throttled(1), throttled(2)];
    db.close();
    // Paced from its first second on, below the cap: the cold start's burst of 429s is not repeated.
    expect(firstSample).not.toBeNull();
    expect(firstSample).toBeLessThanOrEqual(pace * 1.1); // back at the pace after a second, then probing slowly
    expect(cold).toBeGreaterThan(10);
    expect(warmRun).toBeLessThan(cold / 3);

    // A lower --concurrency carries that share of the pace; a pace at or above --rate is not used.
    // Each on a copy of the ledger as it is now, so that both start from run 2.
    const summary = logLines(second.stderr).find((l) => l.event === 'summary') as LogLine & { settled_limit: number; settled_pace: number };
    const copy = (name: string): string => {
      const path = tmp.path(name);
      const source = new Database(tmp.path('l.db'), { readonly: true });
      source.exec(`VACUUM INTO '${path}'`);
      source.close();
      return path;
    };
    const [narrowLedger, cappedLedger] = [copy('narrow.db'), copy('capped.db')];
    // (At 50 ms, 20 requests/s put about 1 in flight: --concurrency 1 is the one below it.)
    const narrow = await run(files.third, sandbox.url, ['--concurrency', '1', '--limit', '10', '--ledger', narrowLedger]);
    const scaled = logLines(narrow.stderr).filter((l) => l.event === 'warm_start');
    expect(scaled).toEqual([expect.objectContaining({ limit: 1, from_run: 2 })]);
    expect(scaled[0]?.pace).toBeCloseTo(summary.settled_pace / summary.settled_limit, 6);
    const capped = await run(files.third, sandbox.url, ['--rate', '2', '--limit', '10', '--ledger', cappedLedger]);
    expect(logLines(capped.stderr).filter((l) => l.event === 'warm_start')).toEqual([expect.objectContaining({ warm: true, pace: null, from_run: 2 })]);
  });

  it('a resumed job starts where its own last run settled', async () => {
    const part = await run(files.first, sandbox.url, ['--limit', '60']);
    expect(part.code).toBe(3); // limited: the job is not finished
    const rest = await run(files.first, sandbox.url);
    expect(logLines(rest.stderr).map((l) => l.msg)).toContain('resuming job 1 (run 2)');
    const warm = logLines(rest.stderr).filter((l) => l.event === 'warm_start');
    expect(warm).toHaveLength(1);
    expect(warm[0]).toMatchObject({ from_job: 1, from_run: 1 });
    expect(warm[0]?.msg).toMatch(STARTS);
  });

  it('a run killed (kill -9) counts: its resume starts where it had got to', async () => {
    // 200 ms per answer, six at a time: about 4 s of sending, so the kill comes mid-run.
    sandbox.setFaults({ latencyMs: 200 });
    const args = ['run', files.first, '--mapping', MAPPING_CSV, '--env', 'sandbox', '--ledger', tmp.path('l.db'), '--concurrency', '6', '--quiet',
      '--json-log', '--base-url', sandbox.url];
    const opts = { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: KEY } };
    const { child, done } = startCli(args, opts);
    // Killed once it has recorded a sample of its limit that saw answers (one per second): a quote
    // answered, as the warm start counts them (validations alone, on a loaded machine, are not).
    const sampled = (): boolean => {
      try {
        const db = new Database(tmp.path('l.db'), { readonly: true, fileMustExist: true });
        try {
          return (db.prepare('SELECT COUNT(*) FROM run_samples WHERE submits_answered > 0').pluck().get() as number) > 0;
        } finally {
          db.close();
        }
      } catch {
        return false; // not created yet
      }
    };
    await waitFor(sampled, 30_000);
    child.kill('SIGKILL');
    expect((await done).signal).toBe('SIGKILL');
    const resumed = await runCli(args, opts);
    const lines = logLines(resumed.stderr);
    expect(lines.map((l) => l.msg)).toContain('resuming job 1 (run 2)');
    expect(lines.filter((l) => l.event === 'warm_start')).toEqual([expect.objectContaining({ from_job: 1, from_run: 1 })]);
  });

  it('a run that halted (the partner down past --max-outage) is passed over: its last limits say nothing of the partner', async () => {
    const first = await run(files.first, sandbox.url);
    expect(first.code).not.toBe(3);
    sandbox.setFaults({ outage: true, retryAfterSeconds: 0 });
    const down = await run(files.second, sandbox.url, ['--max-outage', '1s']);
    expect(down.code).toBe(3);
    const db = new Database(tmp.path('l.db'), { readonly: true });
    const halted = db.prepare('SELECT status, (SELECT COUNT(*) FROM run_samples WHERE run_id = runs.id) AS samples FROM runs WHERE id = 2').get();
    db.close();
    expect(halted).toMatchObject({ status: 'halted' });
    expect((halted as { samples: number }).samples).toBeGreaterThan(0); // it did record limits: they must not be used
    // The next morning, report says why it stopped (and the table what to do with its rows in doubt, if any).
    const report = await runCli(['report', '--ledger', tmp.path('l.db'), '--job', '2', '--format', 'json'], { cwd: tmp.dir });
    expect((JSON.parse(report.stdout) as { runs: { end_reason: string | null }[] }).runs.map((r) => r.end_reason))
      .toEqual([expect.stringMatching(/^the partner did not recover within --max-outage \(1s; /)]);
    const table = await runCli(['report', '--ledger', tmp.path('l.db'), '--job', '2'], { cwd: tmp.dir, env: { COLUMNS: '200' } });
    expect(table.stdout).toMatch(/\n {2}stopped {3}run 2 halted: the partner did not recover within --max-outage \(1s; /);
    sandbox.setFaults({ outage: false });
    const third = await run(files.third, sandbox.url);
    const warm = logLines(third.stderr).filter((l) => l.event === 'warm_start');
    expect(warm).toHaveLength(1);
    expect(warm[0]).toMatchObject({ from_job: 1, from_run: 1 });
  });

  it('a run stopped (--max-runtime) while the partner never answered is passed over too', async () => {
    expect((await run(files.first, sandbox.url)).code).not.toBe(3);
    // Every connection reset before the request is read: requests fail, none is answered.
    sandbox.setFaults({ resetBeforeRate: 1 });
    const stopped = await run(files.second, sandbox.url, ['--max-runtime', '3s']);
    expect(stopped.code).toBe(3);
    const db = new Database(tmp.path('l.db'), { readonly: true });
    const run2 = db.prepare(`SELECT status, (SELECT TOTAL(attempts) FROM run_samples WHERE run_id = runs.id) AS attempts,
      (SELECT TOTAL(attempts - errors) FROM run_samples WHERE run_id = runs.id) AS answered FROM runs WHERE id = 2`).get();
    db.close();
    expect(run2).toMatchObject({ status: 'interrupted', answered: 0 });
    const report = await runCli(['report', '--ledger', tmp.path('l.db'), '--job', '2', '--format', 'json'], { cwd: tmp.dir });
    expect((JSON.parse(report.stdout) as { runs: { end_reason: string | null }[] }).runs.map((r) => r.end_reason)).toEqual(['stopped after --max-runtime 3s']);
    expect((run2 as { attempts: number }).attempts).toBeGreaterThan(0); // it sent, and recorded limits: they must not be used
    // Nor does its summary, or its report, claim a limit the partner showed.
    expect(logLines(stopped.stderr).find((l) => l.event === 'summary')).toMatchObject({ settled_limit: null, settled_pace: null });
    expect((JSON.parse(report.stdout) as { partner: { settled_limit: number | null } }).partner.settled_limit).toBeNull();
    // The warning said what else it might be than an outage.
    expect(logLines(stopped.stderr).find((l) => l.event === 'breaker_open')?.msg).toContain(`no request of this run has had an answer from ${sandbox.url}: if that address is wrong, fix --base-url (or --env)`);
    // A partner that answers, but only 503s: its address is right (no such warning), its limit unknown all the same.
    sandbox.setFaults({ resetBeforeRate: 0, outage: true, retryAfterSeconds: 0 });
    const only503 = await run(files.second, sandbox.url, ['--max-runtime', '3s']);
    expect(only503.code).toBe(3);
    expect(logLines(only503.stderr).find((l) => l.event === 'summary')).toMatchObject({ settled_limit: null, settled_pace: null });
    expect(only503.stderr).not.toContain('no request of this run has had an answer');
    sandbox.setFaults({ outage: false });
    const third = await run(files.third, sandbox.url);
    expect(logLines(third.stderr).filter((l) => l.event === 'warm_start')).toEqual([expect.objectContaining({ from_job: 1, from_run: 1 })]);
  });

  it('a --no-adaptive run says nothing of the partner: the next adaptive job starts cold', async () => {
    await run(files.first, sandbox.url, ['--no-adaptive']);
    const next = await run(files.second, sandbox.url);
    expect(logLines(next.stderr).map((l) => l.msg)).toContain('started job 2 (run 2)');
    expect(logLines(next.stderr).filter((l) => l.event === 'warm_start')).toEqual([]);
  });

  it('a limit our own side set (the run sat at its --concurrency) is a floor: the next job grows fast from it, never past its own --concurrency', async () => {
    await run(files.first, sandbox.url, ['--concurrency', '6']);
    const next = await run(files.second, sandbox.url); // --concurrency 8
    const warm = logLines(next.stderr).filter((l) => l.event === 'warm_start');
    expect(warm).toEqual([expect.objectContaining({ limit: 6, warm: false, from_run: 1 })]);
    expect(warm[0]?.msg).toBe('adaptive concurrency starts at 6 requests in flight and grows fast from there: run 1 (job 1) against this partner got that far without being held back by the partner');
    // The latest run (job 2's, at its ceiling of 8) is cut to this run's --concurrency.
    const capped = await run(files.third, sandbox.url, ['--concurrency', '5']);
    expect(logLines(capped.stderr).filter((l) => l.event === 'warm_start')).toEqual([expect.objectContaining({ limit: 5, warm: false, from_run: 2 })]);
  });

  it('a floor no higher than the cold start\'s first window (4) is a cold start', async () => {
    await run(files.first, sandbox.url, ['--concurrency', '2']);
    const next = await run(files.second, sandbox.url);
    expect(logLines(next.stderr).map((l) => l.msg)).toContain('started job 2 (run 2)');
    expect(logLines(next.stderr).filter((l) => l.event === 'warm_start')).toEqual([]);
  });

  it('a run refused because another live process holds the job (exit 4) says nothing of where it would have started', async () => {
    // Something to start from: a finished job against this partner.
    expect((await run(files.first, sandbox.url)).code).not.toBe(3);
    /** What `run` would read now: a start it would announce (a limit the partner set, or a floor above the cold start's window). */
    const wouldAnnounce = async (): Promise<boolean> => {
      const db = new Database(tmp.path('l.db'), { readonly: true });
      try {
        const found = await readStartingLimit(new SqliteDb(db), { environment: 'sandbox', operation: 'quote', baseUrl: sandbox.url });
        return found !== null && (found.used || Math.min(found.limit, 8) > Math.min(DEFAULT_INITIAL_WINDOW, 8));
      } finally {
        db.close();
      }
    };
    // A slow second job that holds its lock while the other process tries it.
    sandbox.setFaults({ latencyMs: 300 });
    const args = ['run', files.second, '--mapping', MAPPING_CSV, '--env', 'sandbox', '--ledger', tmp.path('l.db'), '--concurrency', '8', '--quiet', '--json-log', '--base-url', sandbox.url];
    const opts = { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: KEY } };
    const holder = startCli(args, opts);
    let holderLog = '';
    holder.child.stderr?.on('data', (d: string) => (holderLog += d));
    try {
      await waitFor(() => holderLog.includes('"started job 2 (run 2)"'), 30_000);
      await waitFor(wouldAnnounce, 30_000);
      const refused = await runCli(args, opts);
      expect(refused.code, refused.stderr).toBe(4);
      const lines = logLines(refused.stderr);
      expect(lines).toEqual([expect.objectContaining({ level: 'error', code: 'E_JOB_LOCKED', exit_code: 4 })]);
      expect(refused.stderr).not.toMatch(/adaptive concurrency starts at/);
      // It would have had a start to announce: the message is held back, not missing.
      expect(await wouldAnnounce()).toBe(true);
    } finally {
      holder.child.kill('SIGKILL');
      await holder.done;
    }
    // The holder said it (it holds the job): the message belongs to the process that runs it.
    expect(logLines(holderLog).filter((l) => l.event === 'warm_start')).toEqual([expect.objectContaining({ from_job: 1, from_run: 1 })]);
  });

  it('the embedded sandbox, started anew for each run, starts cold every time', async () => {
    await run(files.first, null);
    const second = await run(files.second, null);
    expect(second.stderr).toMatch(/started the embedded sandbox/);
    expect(logLines(second.stderr).map((l) => l.msg)).toContain('started job 2 (run 2)');
    expect(logLines(second.stderr).filter((l) => l.event === 'warm_start')).toEqual([]);
  });
});
