/** `quote-batch resolve` and `quote-batch prune` (issue 9 item 8), as ops run them. */
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { beforeAll, describe, expect, it } from 'vitest';
import { Ledger } from '../../src/ledger/index.js';
import type { SandboxHandle } from '../../src/sandbox/index.js';
import { CLI, cliEnv, cliReadableByAll, runCli, type CliResult } from '../helpers/cli.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { KEY, MAPPING_CSV, readLedger, SAMPLE_CSV, startTestSandbox } from '../pipeline/_setup.js';

describe('resolve and prune', () => {
  const tmp = useTempDir('quote-batch-ops-', { per: 'file' });
  let sandbox: SandboxHandle;
  let base: string;
  let copies = 0;

  const runArgs = (ledger: string): string[] => ['run', SAMPLE_CSV, '--mapping', MAPPING_CSV, '--base-url', sandbox.url, '--env', 'sandbox', '--ledger', ledger, '--quiet'];
  const cli = (args: readonly string[]) => runCli(args, { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: KEY }, timeoutMs: 60_000 });

  /** A copy of the samples' completed ledger, with `sql` applied (e.g. rows left in doubt by a crash). */
  function ledgerWith(sql = ''): string {
    copies += 1;
    const path = tmp.path(`copy-${copies}.db`);
    copyFileSync(base, path);
    const db = new Database(path);
    if (sql !== '') db.exec(sql);
    db.close();
    return path;
  }

  beforeAll(async () => {
    sandbox = await startTestSandbox();
    base = tmp.path('base.db');
    const run = await cli(runArgs(base));
    expect(run.code, run.stderr).toBe(1);
    return () => sandbox.close();
  });

  const IN_DOUBT = `UPDATE rows SET state = 'in_doubt', error_code = 'ETIMEDOUT', error_message = 'time-out after the request was sent'
    WHERE row_number IN (2, 3, 4, 10); UPDATE jobs SET status = 'interrupted', finished_at = NULL;`;

  it('settles rows in doubt, records why, and the next run sends only those set back to pending', async () => {
    const ledger = ledgerWith(IN_DOUBT);
    const received = sandbox.stats().operations.quote.received;
    const first = await cli(['resolve', '--ledger', ledger, '--rows', '2-3', '--as', 'succeeded', '--note', 'seen in the partner portal, ticket OPS-7']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toBe('job 1: 2 row(s) resolved from in_doubt to succeeded (rows 2-3)\njob 1 is not completed: the next `quote-batch run` of the same file and mapping sends nothing; its 2 row(s) in doubt stay so until settled here (or sent again by a run with --resend-in-doubt)\n');
    const second = await cli(['resolve', '--ledger', ledger, '--all-in-doubt', '--as', 'pending']);
    expect(second.stdout).toBe('job 1: 2 row(s) resolved from in_doubt to pending (rows 4, 10)\njob 1 is not completed: the next `quote-batch run` of the same file and mapping sends its 2 row(s) still to send\n');

    const db = new Database(ledger, { readonly: true });
    expect(db.prepare('SELECT row_number, to_state, note FROM resolutions ORDER BY id').all()).toEqual([
      { row_number: 2, to_state: 'succeeded', note: 'seen in the partner portal, ticket OPS-7' },
      { row_number: 3, to_state: 'succeeded', note: 'seen in the partner portal, ticket OPS-7' },
      { row_number: 4, to_state: 'pending', note: null },
      { row_number: 10, to_state: 'pending', note: null },
    ]);
    db.close();

    const resumed = await cli(runArgs(ledger));
    expect(resumed.code, resumed.stderr).toBe(1);
    expect(sandbox.stats().operations.quote.received - received).toBe(2);
    const view = readLedger(ledger);
    expect(view.jobs[0]?.status).toBe('completed');
    expect(view.rows.filter((r) => [2, 3, 4, 10].includes(r.row_number)).map((r) => r.state)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded']);
  });

  it('completes the job when the last rows in doubt are settled as succeeded', async () => {
    const ledger = ledgerWith(IN_DOUBT);
    const result = await cli(['resolve', '--ledger', ledger, '--job', '1', '--all-in-doubt', '--as', 'succeeded', '--json-log']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/job 1 is completed: every row is final\n$/);
    expect(JSON.parse(result.stderr)).toMatchObject({ level: 'info', event: 'resolve', job: 1, resolved: 4, job_status: 'completed' });
    const again = await cli(runArgs(ledger));
    expect(again.stdout).toMatch(/already completed|exit 1/);
  });

  it.each([
    ['a row that is not in doubt', ['--rows', '1,2', '--as', 'succeeded'], /error: only rows in_doubt can be resolved; not in doubt in job 1: 1 \(succeeded\); nothing was changed/],
    ['a row that does not exist', ['--rows', '9999', '--as', 'pending'], /not in doubt in job 1: 9999 \(no such row\)/],
    ['neither --rows nor --all-in-doubt', ['--as', 'pending'], /error: give either --rows <list> or --all-in-doubt/],
    ['both --rows and --all-in-doubt', ['--rows', '2', '--all-in-doubt', '--as', 'pending'], /error: give either --rows <list> or --all-in-doubt/],
    ['a bad --as', ['--rows', '2', '--as', 'done'], /argument 'done' is invalid/],
    ['a bad --rows', ['--rows', '3-1', '--as', 'pending'], /--rows expects row numbers and ranges such as 17,42,100-120/],
    ['a job not in the ledger', ['--job', '7', '--all-in-doubt', '--as', 'pending'], /error: job 7 is not in ledger/],
  ])('resolve refuses %s (exit 2) and changes nothing', async (_name, args, message) => {
    const ledger = ledgerWith(IN_DOUBT);
    const result = await cli(['resolve', '--ledger', ledger, ...args]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(message);
    expect(readLedger(ledger).states.in_doubt).toBe(4);
  });

  it('prune and run refuse a duration too long to mean anything, naming the flag (prune ended in an internal error)', async () => {
    const ledger = ledgerWith('');
    const prune = await cli(['prune', '--ledger', ledger, '--older-than', '99999999999d']);
    expect(prune.code).toBe(2);
    expect(prune.stderr).toMatch(/error: option '--older-than <duration>' argument '99999999999d' is invalid\. --older-than expects a duration of at most 36500d00h, got "99999999999d"/);
    expect(prune.stderr).not.toMatch(/internal|RangeError/i);
    const run = await cli(['run', 'leads.csv', '--max-outage', '25d']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--max-outage expects a duration of at most 24d00h, got "25d"/);
  });

  it('resolve and prune refuse a missing ledger instead of creating one', async () => {
    for (const args of [['resolve', '--all-in-doubt', '--as', 'pending'], ['prune', '--older-than', '30d']]) {
      const result = await cli([...args, '--ledger', tmp.path('none.db')]);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/error: ledger .*none\.db does not exist/);
      expect(existsSync(tmp.path('none.db'))).toBe(false);
    }
  });

  it('resolve after a run was killed: its rows left in flight are in doubt, and can be resolved at once', async () => {
    // What kill -9 leaves: the run still `running`, rows `in_flight`, the job lock free.
    const ledger = ledgerWith(`UPDATE rows SET state = 'in_flight' WHERE row_number IN (17, 18);
      UPDATE runs SET status = 'running', finished_at = NULL; UPDATE jobs SET status = 'running', finished_at = NULL;`);
    const first = await cli(['resolve', '--ledger', ledger, '--rows', '17', '--as', 'succeeded', '--note', 'in the portal']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toBe([
      'job 1: 1 run(s) had ended without recording it (crash or kill): the 2 row(s) they left in flight are now in doubt',
      'job 1: 1 row(s) resolved from in_doubt to succeeded (rows 17)',
      'job 1 is not completed: the next `quote-batch run` of the same file and mapping sends nothing; its 1 row(s) in doubt stay so until settled here (or sent again by a run with --resend-in-doubt)',
      '',
    ].join('\n'));
    const second = await cli(['resolve', '--ledger', ledger, '--all-in-doubt', '--as', 'pending']);
    expect(second.stdout).toMatch(/^job 1: 1 row\(s\) resolved from in_doubt to pending \(rows 18\)\n/);
    const view = readLedger(ledger);
    expect(view.runs.map((r) => r.status)).toEqual(['crashed']);
    expect(view.jobs[0]?.status).toBe('interrupted');
    expect(view.rows.filter((r) => [17, 18].includes(r.row_number)).map((r) => r.state)).toEqual(['succeeded', 'pending']);
  });

  it('a refused resolve after a kill says the rows the killed run left are in doubt all the same; a half-read input is named', async () => {
    const killed = `UPDATE rows SET state = 'in_flight' WHERE row_number IN (17, 18); DELETE FROM rows WHERE row_number > 150;
      UPDATE runs SET status = 'running', finished_at = NULL; UPDATE jobs SET status = 'running', finished_at = NULL, total_rows = NULL;`;
    const ledger = ledgerWith(killed);
    const refused = await cli(['resolve', '--ledger', ledger, '--rows', '1', '--as', 'succeeded']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('error: only rows in_doubt can be resolved; not in doubt in job 1: 1 (succeeded); no row was resolved; the 2 row(s) a stopped run had left in flight are now in doubt all the same\n');
    // Its hint names the ledger and the job: it works as printed, from any directory.
    expect(refused.stderr).toContain(`hint: list the rows in doubt with \`quote-batch export --ledger ${ledger} --job 1 --status in_doubt\``);
    expect(readLedger(ledger).states.in_doubt).toBe(2);
    // On a copy just killed: --all-in-doubt leaves the rows it finds left in flight (nobody checked them).
    const copy = ledgerWith(killed);
    const all = await cli(['resolve', '--ledger', copy, '--all-in-doubt', '--as', 'pending']);
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toBe(`job 1: 1 run(s) had ended without recording it (crash or kill): the 2 row(s) they left in flight are now in doubt (not settled here: check them with the partner (quote-batch export --ledger ${copy} --job 1 --status in_doubt), settle them with \`quote-batch resolve --ledger ${copy} --job 1 --rows <n,...> --as succeeded|pending\`)\njob 1: no row was in doubt before; nothing resolved\njob 1 is not completed: the next \`quote-batch run\` of the same file and mapping reads the rest of the input; its 2 row(s) in doubt stay so until settled here (or sent again by a run with --resend-in-doubt)\n`);
  });

  it('resolve --all-in-doubt after a kill settles the rows in doubt as listed, not those the killed run left in flight', async () => {
    const ledger = ledgerWith(`UPDATE rows SET state = 'in_doubt' WHERE row_number = 12; UPDATE rows SET state = 'in_flight' WHERE row_number IN (17, 18);
      UPDATE runs SET status = 'running', finished_at = NULL; UPDATE jobs SET status = 'running', finished_at = NULL;`);
    const result = await cli(['resolve', '--ledger', ledger, '--all-in-doubt', '--as', 'pending']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.startsWith(`job 1: 1 run(s) had ended without recording it (crash or kill): the 2 row(s) they left in flight are now in doubt (not settled here: check them with the partner (quote-batch export --ledger ${ledger} --job 1 --status in_doubt), settle them with \`quote-batch resolve --ledger ${ledger} --job 1 --rows <n,...> --as succeeded|pending\`)\njob 1: 1 row(s) resolved from in_doubt to pending (rows 12)\n`)).toBe(true);
    const view = readLedger(ledger);
    expect(view.rows.filter((r) => [12, 17, 18].includes(r.row_number)).map((r) => r.state)).toEqual(['pending', 'in_doubt', 'in_doubt']);
  });

  it('resolve exits 4 while another process holds the job', async () => {
    const ledger = ledgerWith(IN_DOUBT);
    const holder = Ledger.open(ledger);
    holder.lockJob(1);
    try {
      const result = await cli(['resolve', '--ledger', ledger, '--all-in-doubt', '--as', 'succeeded']);
      expect(result.code).toBe(4);
      expect(result.stderr).toMatch(/error: job 1 is in use by another live quote-batch process; nothing was done/);
    } finally {
      holder.close();
    }
    expect(readLedger(ledger).states.in_doubt).toBe(4);
  });

  it('prunes completed jobs older than the duration, then vacuums the file smaller', async () => {
    const old = `UPDATE jobs SET created_at = '2020-01-01T00:00:00.000Z', finished_at = '2020-01-01T01:00:00.000Z';
      UPDATE runs SET started_at = '2020-01-01T00:00:00.000Z', finished_at = '2020-01-01T01:00:00.000Z', heartbeat_at = NULL;`;
    const ledger = ledgerWith(old);
    const dry = await cli(['prune', '--ledger', ledger, '--older-than', '30d', '--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(/^would drop 1 completed job without activity since \S+ \(200 rows\): 1 \(completed, .*leads\.csv\)\n$/);
    expect(readLedger(ledger).jobs).toHaveLength(1);

    const before = statSync(ledger).size;
    const pruned = await cli(['prune', '--ledger', ledger, '--older-than', '30d', '--vacuum']);
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(pruned.stdout).toMatch(/^dropped 1 completed job .*\nvacuum: ledger \S+ [KM]iB → \S+ KiB\n$/);
    expect(readLedger(ledger).jobs).toEqual([]);
    expect(statSync(ledger).size).toBeLessThan(before / 2);
    expect(existsSync(`${ledger}.job-1.lock`)).toBe(false);
  });

  it('prunes and vacuums hundreds of jobs with few file descriptors (one job lock at a time)', async () => {
    const jobs = (status: string, at: string) => `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
      INSERT INTO jobs (input_path, input_sha256, input_format, mapping_path, mapping_sha256, environment, operation, status, created_at, finished_at)
      SELECT 'night-' || i || '.csv', printf('%064d', i), 'csv', 'm.yaml', printf('%064d', 0), 'sandbox', 'quote', '${status}', '${at}', NULL FROM n;`;
    const ledger = ledgerWith(`UPDATE jobs SET created_at = '2020-01-01T00:00:00.000Z', finished_at = '2020-01-01T01:00:00.000Z';
      UPDATE runs SET started_at = '2020-01-01T00:00:00.000Z', finished_at = '2020-01-01T01:00:00.000Z', heartbeat_at = NULL;
      ${jobs('completed', '2020-01-02T00:00:00.000Z')} ${jobs('interrupted', new Date().toISOString())}`);
    // 256 descriptors: holding two per job, 300 locks at once would run out.
    const result = await new Promise<CliResult>((resolve) => {
      const child = spawn('/bin/bash', ['-c', 'ulimit -n 256 && exec "$@"', 'bash', process.execPath, CLI, 'prune', '--ledger', ledger, '--older-than', '30d', '--vacuum'], {
        cwd: tmp.dir, env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        resolve({ code, signal, stdout, stderr });
      });
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^dropped 301 completed jobs without activity since \S+ \(200 rows\): 1 \(completed, .*leads\.csv\), 2 \(completed, night-1\.csv\), .* and 291 more\nvacuum: ledger /);
    expect(readLedger(ledger).jobs).toHaveLength(300);
    const name = ledger.split('/').pop() as string;
    // The dropped jobs' lock files are gone; the 300 unfinished jobs' stay (the vacuum tried each).
    expect(readdirSync(tmp.dir).filter((f) => f.startsWith(`${name}.job-`))).toHaveLength(300);
  });

  /** Runs the CLI as another user (root: uid 65534) or as this one, for files whose modes say no. */
  function cliAs(uid: number | undefined, args: readonly string[]): Promise<CliResult> {
    return new Promise((resolve) => {
      // Another user may not read this checkout (a private directory): it runs a copy it can read.
      const child = spawn(process.execPath, [uid === undefined ? CLI : cliReadableByAll(), ...args], {
        cwd: tmp.dir, env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'], ...(uid === undefined ? {} : { uid, gid: uid }),
      });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
    });
  }

  it.each([
    ['not readable', 0o600, 0o000],
    ['readable only (SQLite would open it read-only and lock nothing)', 0o644, 0o444],
  ])('a job lock file %s: permission denied, exit 2, nothing changed', async (_name, rootMode, ownMode) => {
    const ledger = ledgerWith(IN_DOUBT);
    const lock = `${ledger}.job-1.lock`;
    writeFileSync(lock, '');
    // Root may open anything: the CLI then runs as nobody, with the ledger and its directory its own.
    const asRoot = process.getuid?.() === 0;
    const other = asRoot ? 65534 : undefined;
    if (asRoot) {
      chmodSync(tmp.dir, 0o777);
      chownSync(ledger, 65534, 65534);
      chmodSync(lock, rootMode);
    } else {
      chmodSync(lock, ownMode);
    }
    const result = await cliAs(other, ['resolve', '--ledger', ledger, '--all-in-doubt', '--as', 'succeeded']);
    expect(result.stderr).toMatch(new RegExp(`^error: cannot use the job lock file ${lock.replaceAll('.', '\\.')}: permission denied.*\nhint: run quote-batch as the user that owns the ledger and its lock files, or give that user read and write access to them \\(chown/chmod\\)\n$`));
    expect(result.code).toBe(2);
    expect(readLedger(ledger).states.in_doubt).toBe(4);
  });

  it('leaves recent and unfinished jobs unless told, and jobs in use always', async () => {
    const ledger = ledgerWith(`${IN_DOUBT} UPDATE jobs SET created_at = '2020-01-01T00:00:00.000Z';
      UPDATE runs SET started_at = '2020-01-01T00:00:00.000Z', finished_at = '2020-01-01T01:00:00.000Z', heartbeat_at = NULL;`);
    expect((await cli(['prune', '--ledger', ledger, '--older-than', '30d'])).stdout).toMatch(/^no completed jobs without activity since/);
    const holder = Ledger.open(ledger);
    holder.lockJob(1);
    try {
      const busy = await cli(['prune', '--ledger', ledger, '--older-than', '30d', '--include-unfinished', '--json-log']);
      expect(busy.code, busy.stderr).toBe(0);
      const lines = busy.stderr.trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(lines[0]).toMatchObject({ level: 'warn', event: 'prune_skipped', job: 1 });
      // Not "no jobs without activity": there was one, and the warning says why it stays.
      expect(busy.stdout).toMatch(/^dropped no jobs: 1 without activity since \S+ was left \(below\)\n/);
      expect(readLedger(ledger).jobs).toHaveLength(1);
    } finally {
      holder.close();
    }
    const dropped = await cli(['prune', '--ledger', ledger, '--older-than', '30d', '--include-unfinished']);
    expect(dropped.stdout).toMatch(/^dropped 1 job without activity/);
    expect(readLedger(ledger).jobs).toEqual([]);
  });
});
