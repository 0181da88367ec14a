/**
 * A partner that stops answering, and one that answers far too much: the run must give up on a dead
 * partner quickly and visibly, with few rows in doubt, and keep its memory and ledger small whatever
 * the partner sends (issue 9: "memory flat whatever the partner sends").
 */
import { readFileSync, statSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxHandle } from '../../src/sandbox/index.js';
import { startCli, type CliResult } from '../helpers/cli.js';
import { startMisbehavingPartner, type MisbehavingPartner } from '../helpers/misbehaving-partner.js';
import { makeTempDir, type TempDir } from '../helpers/temp-dir.js';
import { generateLeads, MAPPING_CSV, readLedger } from '../pipeline/_setup.js';
import { CANARY_KEY, expectNoSecrets, startCanarySandbox } from './_shared.js';

let files: TempDir;
let csv: string;
let sandbox: SandboxHandle;

beforeAll(async () => {
  files = makeTempDir('quote-batch-dead-');
  const generated = generateLeads(files.dir, 240, 43);
  csv = generated.csv;
  sandbox = await startCanarySandbox({}, 7, generated.agents);
});

afterAll(async () => {
  await sandbox.close();
  files.cleanup();
});

/** Runs the CLI, sampling its peak RSS (VmHWM) from /proc while it lives. */
async function runMeasured(args: readonly string[], timeoutMs: number): Promise<{ result: CliResult; peakRssMb: number; ms: number }> {
  const started = Date.now();
  const { child, done } = startCli(args, { cwd: files.dir, env: { QUOTE_BATCH_API_KEY: CANARY_KEY }, timeoutMs });
  let peakKb = 0;
  const timer = setInterval(() => {
    try {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const hwm = /VmHWM:\s+(\d+) kB/.exec(status);
      if (hwm !== null) peakKb = Math.max(peakKb, Number(hwm[1]));
    } catch {
      // Not started yet, or already gone.
    }
  }, 50);
  const result = await done;
  clearInterval(timer);
  return { result, peakRssMb: peakKb / 1024, ms: Date.now() - started };
}

describe('a partner that accepts connections and never answers', () => {
  let partner: MisbehavingPartner;
  afterAll(async () => {
    await partner.close();
  });

  it('stops sending, probes with agent validation, warns, and exits 3 after --max-outage with at most 2 × concurrency rows in doubt', async () => {
    const CONCURRENCY = 8;
    // Healthy for the first 20 quotes, then it takes every request and never answers.
    let dead = false;
    partner = await startMisbehavingPartner(sandbox.url, (r) => {
      if (r.operation === 'quote' && r.n > 20) dead = true;
      if (!dead) return { kind: 'forward' };
      return r.operation === 'validate' ? { kind: 'hang' } : { kind: 'forward-then', then: 'hang' };
    });
    const ledger = files.path('dead.db');
    const { result, ms } = await runMeasured(
      ['run', csv, '--mapping', MAPPING_CSV, '--base-url', partner.url, '--env', 'sandbox', '--ledger', ledger,
        '--concurrency', String(CONCURRENCY), '--timeout', '2000', '--max-outage', '20s'],
      120_000,
    );
    expect(result.code).toBe(3);
    // Given up soon after --max-outage: not the 20+ minutes of before.
    expect(ms).toBeGreaterThanOrEqual(20_000);
    expect(ms).toBeLessThan(60_000);
    const states = readLedger(ledger).states;
    expect(states.in_doubt ?? 0).toBeGreaterThanOrEqual(1);
    expect(states.in_doubt ?? 0).toBeLessThanOrEqual(2 * CONCURRENCY);
    // Once the breaker opened, only probes (validation) went out: the quotes seen are the healthy
    // ones and the few sent before it opened.
    expect(partner.received.quote).toBeLessThanOrEqual(20 + 2 * CONCURRENCY);
    expect(partner.received.validate).toBeGreaterThan(0);
    expect(result.stderr).toMatch(/warning: the partner looks down \(quotes\/leads\): \d+ requests in a row got no answer after they were sent .* the run gives up at \S+ \(--max-outage 20s\)/);
    // Probes hang past --timeout: the halt says no answer came within it (the partner answered
    // earlier, so the address is not in question).
    expect(result.stderr).toMatch(/error: halting: the partner did not recover within --max-outage \(20s; .*; last attempt sent and not answered within --timeout \(2s\)\)\n/);
    expect(result.stderr).toMatch(/warning: run finished: job not completed: the partner looks down/);
    expect(result.stdout).toMatch(/in doubt: they may have reached the partner/);
    expect(readLedger(ledger).runs.at(-1)?.status).toBe('halted');
    // Where the limit stood when the partner last answered, as `report` says it: not the window the
    // outage's failures and probes cut it to since.
    const allowed = /\nin flight {4}([\d.]+) requests allowed when the partner last answered \(median of (?:1 s|the last \d+ s) of answers\)/.exec(result.stdout);
    expect(allowed, result.stdout).not.toBeNull();
    const report = await startCli(['report', '--ledger', ledger, '--format', 'json'], { cwd: files.dir }).done;
    const partnerFigures = (JSON.parse(report.stdout) as { partner: { settled_limit: number } }).partner;
    expect(Number(allowed?.[1])).toBe(Math.round(partnerFigures.settled_limit * 10) / 10);
    expect(partner.duplicateLeads()).toEqual([]);
    expectNoSecrets('dead partner', [result], ledger);
  }, 150_000);
});

describe('a partner slower than --timeout from the first request', () => {
  let partner: MisbehavingPartner;
  afterAll(async () => {
    await partner.close();
  });

  it('the warning and the halt name --timeout, not only the address: the requests left and were never answered in time', async () => {
    partner = await startMisbehavingPartner(sandbox.url, () => ({ kind: 'hang' }));
    const ledger = files.path('slow.db');
    const { result } = await runMeasured(
      ['run', csv, '--mapping', MAPPING_CSV, '--base-url', partner.url, '--env', 'sandbox', '--ledger', ledger,
        '--concurrency', '4', '--timeout', '1000', '--max-outage', '3s'],
      60_000,
    );
    expect(result.code).toBe(3);
    const hint = `no request of this run has had an answer from ${partner.url} within --timeout (1s): if the partner is that slow, raise --timeout; if that address is wrong, fix --base-url (or --env)`;
    expect(result.stderr).toMatch(/warning: the partner looks down/);
    expect(result.stderr).toContain(`last attempt sent and not answered within --timeout (1s)); ${hint}`);
    expect(partner.received.quote).toBe(0);
    expect(readLedger(ledger).runs.at(-1)?.status).toBe('halted');
  }, 90_000);
});

describe('a partner whose validation answers while its quotes never do', () => {
  let partner: MisbehavingPartner;
  afterAll(async () => {
    await partner.close();
  });

  it('trial quotes after answered probes stay within 2 × concurrency in doubt, then the run halts (exit 3)', async () => {
    const CONCURRENCY = 4;
    partner = await startMisbehavingPartner(sandbox.url, (r) => (r.operation === 'quote' && r.n > 10 ? { kind: 'forward-then', then: 'hang' } : { kind: 'forward' }));
    const ledger = files.path('trials.db');
    const { result } = await runMeasured(
      ['run', csv, '--mapping', MAPPING_CSV, '--base-url', partner.url, '--env', 'sandbox', '--ledger', ledger, '--quiet',
        '--concurrency', String(CONCURRENCY), '--timeout', '1000', '--max-outage', '5m', '--rate', '50'],
      120_000,
    );
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/error: halting: 8 requests in doubt since the partner stopped answering quotes\/leads/);
    const states = readLedger(ledger).states;
    // A resumed run does not resend them: the advice says to settle them first, with their count.
    expect(result.stdout).toContain(`exit 3: job not completed: the partner stopped answering and ${states.in_doubt} row(s) are in doubt; check them with the partner (quote-batch export --ledger ${ledger} --job 1 --status in_doubt), settle them with \`quote-batch resolve --ledger ${ledger} --job 1 --rows <n,...> --as succeeded|pending\``);
    expect(states.in_doubt).toBeLessThanOrEqual(2 * CONCURRENCY);
    expect(partner.received.quote).toBe(10 + (states.in_doubt ?? 0));
    expect(partner.duplicateLeads()).toEqual([]);
  }, 150_000);

  it('Ctrl-C after its probes were answered and its quotes failed: the limit is where it stood when quotes were last answered', async () => {
    // Healthy for 60 quotes; then every quote is answered 503 while validations (the probes) answer.
    partner.setScript((r) => (r.operation === 'quote' && r.n > 60 ? { kind: 'answer', status: 503, body: '' } : { kind: 'forward' }));
    const ledger = files.path('probes-answered.db');
    const { child, done } = startCli(
      ['run', csv, '--mapping', MAPPING_CSV, '--base-url', partner.url, '--env', 'sandbox', '--ledger', ledger, '--concurrency', '8', '--max-consecutive-failures', '3'],
      { cwd: files.dir, env: { QUOTE_BATCH_API_KEY: CANARY_KEY }, timeoutMs: 60_000 },
    );
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    for (let waited = 0; waited < 30_000 && !/the partner looks down/.test(stderr); waited += 50) await new Promise((r) => setTimeout(r, 50));
    // Probes 1 s and 3 s after the breaker opened, each answered and followed by a trial quote that fails.
    await new Promise((r) => setTimeout(r, 4500));
    child.kill('SIGINT');
    const result = await done;
    expect(result.code, result.stderr).toBe(3);
    expect(partner.received.validate).toBeGreaterThanOrEqual(2);
    const allowed = /\nin flight {4}([\d.]+) requests allowed when the partner last answered \(median of (?:1 s|the last \d+ s) of answers\)/.exec(result.stdout);
    expect(allowed, result.stdout).not.toBeNull();
    const report = await startCli(['report', '--ledger', ledger, '--format', 'json'], { cwd: files.dir }).done;
    expect(Number(allowed?.[1])).toBe(Math.round((JSON.parse(report.stdout) as { partner: { settled_limit: number } }).partner.settled_limit * 10) / 10);
    expect(readLedger(ledger).runs.at(-1)?.status).toBe('interrupted');
  }, 90_000);

  it('Ctrl-C while the breaker is open and probing: the summary, exit 3, no stack trace, the run recorded as interrupted', async () => {
    partner.setScript((r) => (r.operation === 'validate' && r.n > 3 ? { kind: 'hang' } : r.operation === 'quote' && r.n > 5 ? { kind: 'answer', status: 503, body: '' } : { kind: 'forward' }));
    const ledger = files.path('interrupted.db');
    const { child, done } = startCli(
      ['run', csv, '--mapping', MAPPING_CSV, '--base-url', partner.url, '--env', 'sandbox', '--ledger', ledger, '--concurrency', '2', '--timeout', '1000', '--max-consecutive-failures', '3'],
      { cwd: files.dir, env: { QUOTE_BATCH_API_KEY: CANARY_KEY }, timeoutMs: 60_000 },
    );
    let stderr = '';
    child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    for (let waited = 0; waited < 30_000 && !/the partner looks down/.test(stderr); waited += 50) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 1500)); // a probe is on the wire now
    child.kill('SIGINT');
    const result = await done;
    expect(result.stderr).not.toMatch(/TypeError|internal error|at .*\.js:\d+/);
    expect(result.code).toBe(3);
    expect(result.stdout).toMatch(/exit 3: job not completed \(interrupted\)/);
    expect(readLedger(ledger).runs.at(-1)?.status).toBe('interrupted');
  }, 90_000);
});

describe('a partner that answers 50 MB to every quote', () => {
  let partner: MisbehavingPartner;
  afterAll(async () => {
    await partner.close();
  });

  it('reads 1 MiB of each, keeps RSS under 300 MB and the ledger under 50 MB, and records every row', async () => {
    partner = await startMisbehavingPartner(sandbox.url, (r) => (r.operation === 'quote' ? { kind: 'forward-then-big', bytes: 50 * 1024 * 1024 } : { kind: 'forward' }));
    const ledger = files.path('big.db');
    const { result, peakRssMb } = await runMeasured(
      ['run', csv, '--mapping', MAPPING_CSV, '--base-url', partner.url, '--env', 'sandbox', '--ledger', ledger, '--quiet', '--limit', '200', '--concurrency', '8'],
      120_000,
    );
    expect(result.stderr).not.toMatch(/internal error/);
    expect(result.code).toBe(3); // --limit: the job is not completed
    const view = readLedger(ledger);
    expect(view.rows).toHaveLength(200);
    expect(view.states.in_doubt ?? 0).toBe(0);
    expect(view.states.pending ?? 0).toBe(0);
    expect(peakRssMb).toBeGreaterThan(0);
    expect(peakRssMb).toBeLessThan(300);
    const ledgerMb = ['', '-wal', '-shm'].reduce((sum, suffix) => {
      try {
        return sum + statSync(ledger + suffix).size / 1024 / 1024;
      } catch {
        return sum;
      }
    }, 0);
    expect(ledgerMb).toBeLessThan(50);
  }, 150_000);
});
