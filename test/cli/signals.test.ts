/**
 * Signals for unattended runs (issue 9 items 6 and 7): SIGTERM is honoured within about a second
 * by every command, even in a file that yields no row; a SIGTERM delivered twice (to the process
 * and to its group, as GNU timeout does) is one request; a second Ctrl-C exits at once; and every
 * stderr line of a --json-log run with faults, a halt, a lock refusal or a SIGTERM is JSON.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createWriteStream, existsSync, readdirSync, readlinkSync, writeFileSync } from 'node:fs';
import { createGzip } from 'node:zlib';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxHandle } from '../../src/sandbox/index.js';
import { CLI, cliEnv, runCli, startCli, type CliResult } from '../helpers/cli.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { countState, generateLeads, MAPPING_CSV, MAPPING_NDJSON, readLedger, waitFor } from '../pipeline/_setup.js';
import { CANARY_KEY, startCanarySandbox } from '../robustness/_shared.js';

const BLANK_MB = 64;

/** Starts the CLI in its own process group; resolves with its end and how long after `signalAt()` it came. */
function startGroup(args: readonly string[], cwd: string, env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [CLI, ...args], { cwd, env: cliEnv(env), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
  const done = new Promise<CliResult>((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
  return { child, done };
}

async function secondsToEnd(done: Promise<CliResult>, signalled: () => void): Promise<{ result: CliResult; seconds: number }> {
  const at = Date.now();
  signalled();
  const result = await done;
  return { result, seconds: (Date.now() - at) / 1000 };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Waits until process `pid` has `path` open: its command is then running (start-up is over). */
async function waitUntilReading(pid: number, path: string): Promise<void> {
  await waitFor(() => {
    try {
      return readdirSync(`/proc/${pid}/fd`).some((fd) => {
        try {
          return readlinkSync(`/proc/${pid}/fd/${fd}`) === path;
        } catch {
          return false;
        }
      });
    } catch {
      return false;
    }
  }, 30_000, 20);
}

describe.skipIf(!existsSync('/proc/self/fd'))('SIGTERM in commands that read a file of blank lines', () => {
  const tmp = useTempDir('quote-batch-signals-', { per: 'file' });

  beforeAll(async () => {
    // Millions of blank lines: no row ever comes to check a stop flag at.
    const block = Buffer.alloc(1 << 20, 0x0a);
    writeFileSync(tmp.path('blank.ndjson'), Buffer.concat(Array.from({ length: BLANK_MB }, () => block)));
    const gzip = createGzip({ level: 1 });
    const written = once(gzip.pipe(createWriteStream(tmp.path('blank.ndjson.gz'))), 'finish');
    for (let i = 0; i < 4 * BLANK_MB; i += 1) if (!gzip.write(block)) await once(gzip, 'drain');
    gzip.end();
    await written;
  });

  it.each(['blank.ndjson', 'blank.ndjson.gz'])('check %s stops within about a second, with its partial summary (exit 3)', async (file) => {
    const { child, done } = startGroup(['check', tmp.path(file), '--mapping', MAPPING_NDJSON], tmp.dir);
    await waitUntilReading(child.pid as number, tmp.path(file));
    await sleep(300);
    const { result, seconds } = await secondsToEnd(done, () => child.kill('SIGTERM'));
    expect(result.code, result.stderr).toBe(3);
    expect(result.stdout).toMatch(/interrupted: the counts cover the rows read so far/);
    expect(seconds).toBeLessThan(2.5); // loose: a shared machine; reading the whole file takes far longer
  });

  it('preview stops within about a second on SIGTERM, as interrupted (exit 3)', async () => {
    const { child, done } = startGroup(['preview', tmp.path('blank.ndjson.gz'), '--mapping', MAPPING_NDJSON, '--row', '999999999'], tmp.dir);
    await waitUntilReading(child.pid as number, tmp.path('blank.ndjson.gz'));
    await sleep(300);
    const { result, seconds } = await secondsToEnd(done, () => child.kill('SIGTERM'));
    expect(result.signal ?? result.code, result.stderr).toBe(3);
    expect(result.stderr).toMatch(/SIGTERM: finishing the work in hand, then stopping \(send SIGTERM or SIGINT again, 2 s or more after this one, to exit at once\)/);
    expect(result.stdout).toBe(''); // no partial preview printed as if it were the answer
    expect(seconds).toBeLessThan(2.5);
  });
});

describe('SIGTERM and SIGINT during a run', () => {
  const tmp = useTempDir('quote-batch-run-signals-', { per: 'file' });
  let csv: string;
  let agents: string;
  let sandbox: SandboxHandle | undefined;

  beforeAll(() => {
    ({ csv, agents } = generateLeads(tmp.dir, 1000, 9));
  });
  afterEach(async () => {
    await sandbox?.close();
    sandbox = undefined;
  });

  const runArgs = (ledger: string, url: string, extra: readonly string[] = []): string[] =>
    ['run', csv, '--mapping', MAPPING_CSV, '--base-url', url, '--env', 'sandbox', '--ledger', ledger, '--concurrency', '4', ...extra];

  /** Every stderr line parsed as JSON (the test fails on the first that is not). */
  function jsonLines(stderr: string): Record<string, unknown>[] {
    return stderr.split('\n').filter((line) => line !== '').map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        throw new Error(`not a JSON line: ${line}`);
      }
    });
  }

  it('takes a SIGTERM to the process and then to its group as one request: summary, exit 3, nothing in flight; JSON lines only', async () => {
    // Slow answers: the requests in flight outlast the second signal.
    sandbox = await startCanarySandbox({ latencyMs: 600, failRate: 0.2 }, 3, agents);
    const ledger = tmp.path('term.db');
    const { child, done } = startGroup(runArgs(ledger, sandbox.url, ['--json-log']), tmp.dir, { QUOTE_BATCH_API_KEY: CANARY_KEY });
    await waitFor(() => countState(ledger, 'succeeded') >= 8, 60_000, 20);
    const { result } = await secondsToEnd(done, () => {
      process.kill(child.pid as number, 'SIGTERM');
      setTimeout(() => {
        try {
          process.kill(-(child.pid as number), 'SIGTERM');
        } catch {
          // ended already: the assertions below then fail on the missing repeat line
        }
      }, 100);
    });
    expect(result.code, result.stderr).toBe(3);
    expect(result.stdout).toMatch(/exit 3: job not completed/);
    const lines = jsonLines(result.stderr);
    expect(lines.filter((l) => l.event === 'signal').map((l) => [l.level, l.repeat ?? false])).toEqual([['warn', false], ['info', true]]);
    expect(lines.at(-1)).toMatchObject({ event: 'summary', end: 'interrupted', exit_code: 3 });
    const view = readLedger(ledger);
    expect(view.states.in_flight ?? 0).toBe(0);
    expect(view.runs.map((r) => r.status)).toEqual(['interrupted']);
  });

  it('exits at once on a second Ctrl-C', async () => {
    sandbox = await startCanarySandbox({ latencyMs: 20, hangRate: 0.05 }, 4, agents);
    const ledger = tmp.path('int.db');
    const { child, done } = startGroup(runArgs(ledger, sandbox.url, ['--quiet', '--timeout', '60000']), tmp.dir, { QUOTE_BATCH_API_KEY: CANARY_KEY });
    await waitFor(() => countState(ledger, 'succeeded') >= 30, 60_000, 20);
    child.kill('SIGINT');
    await sleep(600);
    const { result, seconds } = await secondsToEnd(done, () => child.kill('SIGINT'));
    expect(result.code, result.stderr).toBe(3);
    expect(result.stderr).toMatch(/SIGINT: finishing the work in hand[\s\S]*SIGINT again: exiting now/);
    expect(seconds).toBeLessThan(2.5);
  });

  it('keeps stderr pure JSON when the run halts (403) and when the job is locked (exit 4)', async () => {
    sandbox = await startCanarySandbox({ latencyMs: 20 }, 5, agents);
    const halted = await runCli(runArgs(tmp.path('halt.db'), sandbox.url, ['--json-log']), { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: 'not-the-key' } });
    expect(halted.code, halted.stderr).toBe(3);
    expect(jsonLines(halted.stderr).some((l) => l.level === 'error' && /403/.test(String(l.msg)))).toBe(true);

    const ledger = tmp.path('lock.db');
    const first = startCli(runArgs(ledger, sandbox.url, ['--quiet']), { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: CANARY_KEY } });
    try {
      await waitFor(() => countState(ledger, 'succeeded') >= 5, 60_000, 20);
      const locked = await runCli(runArgs(ledger, sandbox.url, ['--json-log']), { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: CANARY_KEY } });
      expect(locked.code).toBe(4);
      expect(jsonLines(locked.stderr).at(-1)).toMatchObject({ level: 'error', code: 'E_JOB_LOCKED', exit_code: 4, hint: expect.stringMatching(/wait for that run/) });
    } finally {
      first.child.kill('SIGKILL');
      await first.done;
    }
  });
});
