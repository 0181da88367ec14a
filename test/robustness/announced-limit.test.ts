/**
 * A partner that announces its quota in its headers (issue 34), with the real CLI against the
 * sandbox on loopback: a quota spent until a reset beyond --max-retry-after halts the run (exit 3,
 * "the partner's quota for this key is spent until <time>", the rows left unsent) without a single
 * 429; a run started again before the reset sends nothing; the next run after it sends the rest,
 * each lead once. A quota whose reset is within --max-retry-after is waited for instead. Windows are
 * seconds long so the suite stays bounded.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxHandle } from '../../src/sandbox/index.js';
import { REPO_ROOT, runCli, type CliResult } from '../helpers/cli.js';
import { makeTempDir, type TempDir } from '../helpers/temp-dir.js';
import { CANARY_KEY, expectNoSecrets, startCanarySandbox } from './_shared.js';

const MAPPING = join(REPO_ROOT, 'bench', 'mappings', 'leads-100.yaml');
let files: TempDir;
let sandbox: SandboxHandle | undefined;

/** `rows` leads that all succeed (the benchmark's generator: valid rows, known agents, unique click ids). */
function leads(rows: number): { csv: string; agents: string } {
  const dir = files.path(`leads-${rows}`);
  const result = spawnSync(process.execPath, [join(REPO_ROOT, 'bench', 'generate-leads.js'), '--rows', String(rows), '--out', dir, '--name', 'leads.csv', '--seed', '7'], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`generator failed: ${result.stderr}`);
  return { csv: join(dir, 'leads.csv'), agents: join(dir, 'agents.csv') };
}

beforeAll(() => {
  files = makeTempDir('quote-batch-announced-');
});
afterAll(() => files.cleanup());
afterEach(async () => {
  await sandbox?.close();
  sandbox = undefined;
});

function run(csv: string, ledger: string, extra: readonly string[]): Promise<CliResult> {
  return runCli(
    ['run', csv, '--mapping', MAPPING, '--base-url', (sandbox as SandboxHandle).url, '--env', 'uat', '--ledger', ledger, '--concurrency', '16', ...extra],
    { cwd: files.dir, env: { QUOTE_BATCH_API_KEY: CANARY_KEY }, timeoutMs: 90_000 },
  );
}

function states(ledger: string): Record<string, number> {
  const db = new Database(ledger, { readonly: true, fileMustExist: true });
  try {
    const out: Record<string, number> = {};
    for (const r of db.prepare('SELECT state, COUNT(*) AS n FROM rows GROUP BY state').all() as { state: string; n: number }[]) out[r.state] = r.n;
    return out;
  } finally {
    db.close();
  }
}

type LogLine = Record<string, unknown>;
const logLines = (result: CliResult): LogLine[] => result.stderr.trimEnd().split('\n').map((line) => JSON.parse(line) as LogLine);

describe('an announced rate', () => {
  it('kept to: said at the first answer, in the summary, --json-log and report; no 429', async () => {
    const { csv, agents } = leads(240);
    const ledger = files.path('told.db');
    sandbox = await startCanarySandbox({ rpsCap: 40, announceLimit: 'kong', latencyMs: 50 }, 7, agents);
    const result = await run(csv, ledger, ['--json-log']);
    expect(result.code, result.stderr).toBe(0);
    const lines = logLines(result);
    expect(lines.find((l) => l.event === 'limit_announced')).toMatchObject({
      level: 'info', headers: 'X-RateLimit-Limit-Second (Kong)', limit: 40, window_s: 1, windows: 'second:40/1s', msg: expect.stringContaining('the partner announces its limit: 40 requests per second'),
    });
    expect(lines.filter((l) => l.event === 'limit_distrusted')).toEqual([]);
    expect(lines.at(-1)).toMatchObject({ event: 'summary', announced_headers: 'X-RateLimit-Limit-Second (Kong)', announced_windows: 'second:40/1s', announced_distrusted: false, announced_spent_until: null });
    const json = await runCli(['report', '--ledger', ledger, '--format', 'json'], { cwd: files.dir });
    expect((JSON.parse(json.stdout) as { partner: { announced: unknown } }).partner.announced).toMatchObject({ windows: [{ name: 'second', limit: 40, window_s: 1 }], distrusted_after_ms: null });
    // Paced within 39.6/s from the first answer: the cap never refuses one.
    expect(sandbox.stats().faults.rpsCapped).toBe(0);
  });

  it('not kept to (headers announcing 2.5 times the cap): a warning says it is ignored from then on; the summary and report say so', async () => {
    const { csv, agents } = leads(300);
    const ledger = files.path('liar.db');
    sandbox = await startCanarySandbox({ rpsCap: 40, announceLimit: 'ietf', announceFactor: 2.5, latencyMs: 100 }, 7, agents);
    const result = await run(csv, ledger, ['--json-log']);
    expect(result.code, result.stderr).toBe(0);
    const lines = logLines(result);
    const warning = lines.filter((l) => l.event === 'limit_distrusted');
    expect(warning).toHaveLength(1);
    expect(warning[0]).toMatchObject({
      level: 'warn', headers: 'RateLimit-Policy / RateLimit (IETF draft)', limit: 100, window_s: 1, throttled: 4,
      msg: expect.stringMatching(/^the partner answered 4 of the last \d+ requests sent within the limit it announces \(100 requests per second; RateLimit-Policy \/ RateLimit \(IETF draft\)\) with 429: that limit is not kept to, and is ignored for the rest of the run/),
    });
    expect(lines.at(-1)).toMatchObject({ event: 'summary', announced_distrusted: true });
    const plain = await runCli(['report', '--ledger', ledger], { cwd: files.dir });
    expect(plain.stdout.replace(/\n +/g, ' ')).toMatch(/Announced: 100 requests per second \(RateLimit-Policy \/ RateLimit \(IETF draft\)\) in run 1, but it was not kept to: 4 of the \d+ requests sent within it were answered 429/);
    expect(sandbox.stats().duplicateLeads).toEqual([]);
  });
});

describe('an announced quota', () => {
  it('spent until a reset beyond --max-retry-after: 500 sent, the halt with the reset time, exit 3; the next run after the reset sends the rest, once', async () => {
    const { csv, agents } = leads(800);
    const ledger = files.path('quota.db');
    const windowS = 15;
    sandbox = await startCanarySandbox({ quota: 500, quotaWindowSeconds: windowS, announceLimit: 'ietf' }, 7, agents);
    const windowEnds = Date.now() + windowS * 1000;

    const first = await run(csv, ledger, ['--max-retry-after', '2s', '--json-log']);
    expect(first.code, first.stderr).toBe(3);
    const lines = logLines(first);
    const halt = lines.find((l) => l.event === 'halt');
    expect(halt).toMatchObject({ level: 'error', code: 'E_QUOTA_SPENT', exit_code: 3 });
    const until = /spent until (\d{4}-\d\d-\d\dT[\d:.]+Z) \(500 requests per 15s, announced in RateLimit-Policy \/ RateLimit \(IETF draft\)\)/.exec(String(halt?.msg));
    expect(until, String(halt?.msg)).not.toBeNull();
    // The reset it names is the window's end, as the partner said it (whole seconds, from when the request left).
    expect(Math.abs(Date.parse(until![1]!) - windowEnds)).toBeLessThan(2500);
    expect(String(halt?.hint)).toMatch(/^run the same command again after \S+ to send the rows left pending/);
    expect(lines.find((l) => l.event === 'limit_announced')).toMatchObject({ level: 'info', limit: 500, window_s: 15 });
    expect(lines.at(-1)).toMatchObject({
      event: 'summary', end: 'halted', exit_code: 3, announced_headers: 'RateLimit-Policy / RateLimit (IETF draft)', announced_spent_until: until![1],
    });
    // 500 quote requests, none refused: the quota was not overrun, even by the requests in flight when it ran out.
    expect(sandbox.stats().operations.quote).toMatchObject({ received: 500, statuses: { 200: 500 } });
    expect(sandbox.stats().faults.quotaSpent).toBe(0);
    const afterFirst = states(ledger);
    expect(afterFirst.succeeded).toBe(500);
    // The rows read and not sent stay pending; the rest of the file is still to be read.
    expect(Object.keys(afterFirst).sort()).toEqual(['pending', 'succeeded']);

    // Started again before the reset: nothing leaves.
    const early = await run(csv, ledger, ['--max-retry-after', '2s', '--json-log']);
    expect(early.code, early.stderr).toBe(3);
    expect(logLines(early).find((l) => l.event === 'halt')).toMatchObject({ code: 'E_QUOTA_SPENT', msg: expect.stringContaining(`the partner's quota for this key is spent until ${until![1]} (as run 1 (job 1) found)`) });
    expect(sandbox.stats().operations.quote.received).toBe(500);

    // After the reset: the 300 left, each once.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(until![1]!) - Date.now() + 200)));
    const last = await run(csv, ledger, ['--max-retry-after', '2s']);
    expect(last.code, last.stderr).toBe(0);
    expect(states(ledger)).toEqual({ succeeded: 800 });
    const stats = sandbox.stats();
    expect(stats.operations.quote).toMatchObject({ received: 800, statuses: { 200: 800 } });
    expect(stats.duplicateLeads).toEqual([]);
    expect(last.stdout).toMatch(/announced {4}500 requests per 15s \(RateLimit-Policy \/ RateLimit \(IETF draft\)\)/);

    // report: what was announced, in every format.
    const json = await runCli(['report', '--ledger', ledger, '--format', 'json'], { cwd: files.dir });
    const partner = (JSON.parse(json.stdout) as { partner: { announced: unknown } }).partner;
    expect(partner.announced).toMatchObject({ run_id: 3, headers: 'RateLimit-Policy / RateLimit (IETF draft)', windows: [{ name: 'quota', limit: 500, window_s: 15 }], rate: null, spent_until: null });
    const table = await runCli(['report', '--ledger', ledger], { cwd: files.dir });
    expect(table.stdout).toMatch(/Announced: 500 requests per 15s \(RateLimit-Policy \/ RateLimit \(IETF draft\)\) in run 3/);
    const html = await runCli(['report', '--ledger', ledger, '--format', 'html', '--out', files.path('r.html')], { cwd: files.dir });
    expect(html.code, html.stderr).toBe(0);
    expectNoSecrets('quota', [first, early, last, json, table], ledger);
  });

  it('spent until a reset within --max-retry-after: every request waits for it, and the run completes without a 429', async () => {
    // The sandbox's windows count from its start, not from the run's first quote: a run that starts late
    // in the first window (a loaded machine) spends less than 100 there. 350 rows still spend two
    // windows whole after it, whenever the run starts.
    const { csv, agents } = leads(350);
    const ledger = files.path('wait.db');
    // 100 per 6 s is a quota under --max-retry-after 4s (no rate is paced by it); --rate 40 spends it
    // in 2.5 s, so each window's reset comes within 4 s of its last request.
    sandbox = await startCanarySandbox({ quota: 100, quotaWindowSeconds: 6, announceLimit: 'x-ratelimit' }, 7, agents);
    const started = Date.now();
    const result = await run(csv, ledger, ['--max-retry-after', '4s', '--rate', '40', '--json-log']);
    expect(result.code, result.stderr).toBe(0);
    expect(states(ledger)).toEqual({ succeeded: 350 });
    // Part of a fourth window at least (its windows count from the sandbox's start), two waits or more.
    expect(Date.now() - started).toBeGreaterThan(17_000);
    const waits = logLines(result).filter((l) => l.event === 'quota_wait');
    expect(waits.length).toBeGreaterThanOrEqual(2);
    expect(waits[0]).toMatchObject({ level: 'warn', limit: 100, window_s: 6 });
    const stats = sandbox.stats();
    // At most a stray 429 as a window turns (the reset is said in whole seconds).
    expect(stats.faults.quotaSpent).toBeLessThanOrEqual(waits.length);
    expect(stats.operations.quote.received).toBe(350 + stats.faults.quotaSpent);
    expect(stats.duplicateLeads).toEqual([]);
  });

  it('a window within --max-retry-after is a rate: what is left of it is spread over what is left of the window, never spent in a burst and refused', async () => {
    const { csv, agents } = leads(330);
    const ledger = files.path('spread.db');
    sandbox = await startCanarySandbox({ quota: 150, quotaWindowSeconds: 4, announceLimit: 'x-ratelimit' }, 7, agents);
    const started = Date.now();
    const result = await run(csv, ledger, ['--max-retry-after', '10s', '--json-log']);
    expect(result.code, result.stderr).toBe(0);
    expect(states(ledger)).toEqual({ succeeded: 330 });
    // 330 requests at 150 per 4 s: into a third window.
    expect(Date.now() - started).toBeGreaterThan(7000);
    const stats = sandbox.stats();
    expect(stats.faults.quotaSpent).toBeLessThanOrEqual(2);
    expect(stats.operations.quote.received).toBe(330 + stats.faults.quotaSpent);
    expect(stats.duplicateLeads).toEqual([]);
    // Paced by it: the summary counts the seconds.
    const summary = logLines(result).at(-1) as LogLine;
    expect(summary).toMatchObject({ event: 'summary', announced_distrusted: false, announced_spent_until: null });
    expect(summary.announced_paced_seconds).toBeGreaterThan((summary.announced_seconds as number) / 2);
  });
});
