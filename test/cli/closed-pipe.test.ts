/**
 * Output to a closed pipe (`quote-batch export … | head -1`) ends the command quietly with exit 0,
 * never a stack trace (README, --json-log); `run`, `resolve` and `prune` keep the exit code of the outcome
 * they recorded (`run … | true` in cron must not report an unfinished job as done).
 */
import { spawn } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { CLI, cliEnv, runCli } from '../helpers/cli.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { generateLeads, MAPPING_CSV } from '../pipeline/_setup.js';

interface Ended {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

/** Runs the CLI with a standard output whose reader is gone before the first write. */
function runIntoClosedPipe(args: readonly string[], cwd: string): Promise<Ended> {
  const child = spawn(process.execPath, [CLI, ...args], { cwd, env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.destroy();
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stderr });
    });
  });
}

describe('a closed standard output', () => {
  const tmp = useTempDir('quote-batch-pipe-', { per: 'file' });
  let csv: string;

  beforeAll(async () => {
    csv = generateLeads(tmp.dir, 2000, 3).csv;
    const run = await runCli(['run', csv, '--mapping', MAPPING_CSV, '--ledger', tmp.path('l.db'), '--quiet'], { cwd: tmp.dir, timeoutMs: 120_000 });
    expect(run.code, run.stderr).toBe(1);
  }, 150_000);

  it.each([
    ['export', () => ['export', '--ledger', tmp.path('l.db')]],
    ['export --format ndjson', () => ['export', '--ledger', tmp.path('l.db'), '--format', 'ndjson']],
    ['report', () => ['report', '--ledger', tmp.path('l.db')]],
    ['report --format json', () => ['report', '--ledger', tmp.path('l.db'), '--format', 'json']],
    ['jobs', () => ['jobs', '--ledger', tmp.path('l.db')]],
    ['preview', () => ['preview', csv, '--mapping', MAPPING_CSV, '--rows', '500']],
    ['check (1 when its output is read: some rows are invalid)', () => ['check', csv, '--mapping', MAPPING_CSV]],
  ])('%s: exit 0, no stack trace', async (_name, args) => {
    const ended = await runIntoClosedPipe(args(), tmp.dir);
    expect(ended.stderr).not.toMatch(/EPIPE|Error|internal error|\n\s+at /);
    expect([ended.code, ended.signal], ended.stderr).toEqual([0, null]);
  });

  it.each([
    ['a completed job with invalid rows: 1', () => ['run', csv, '--mapping', MAPPING_CSV, '--ledger', tmp.path('l.db'), '--quiet'], 1],
    ['a job left unfinished (--limit): 3', () => ['run', csv, '--mapping', MAPPING_CSV, '--ledger', tmp.path('limited.db'), '--limit', '20', '--quiet'], 3],
  ])('run keeps its own exit code, %s', async (_name, args, code) => {
    const ended = await runIntoClosedPipe(args(), tmp.dir);
    expect(ended.stderr).not.toMatch(/EPIPE|Error|internal error|\n\s+at /);
    expect([ended.code, ended.signal], ended.stderr).toEqual([code, null]);
  });

  it('`export | head -1` in a shell with pipefail: the header line, exit 0', async () => {
    const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn('/bin/bash', ['-c', 'set -o pipefail; "$@" | head -1', 'bash', process.execPath, CLI, 'export', '--ledger', tmp.path('l.db')], {
        cwd: tmp.dir, env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    expect(result.stdout).toMatch(/^row_number,row_key,state,/);
    expect(result.stdout.trimEnd().split('\n')).toHaveLength(1);
    expect(result.stderr).not.toMatch(/EPIPE|Error|\n\s+at /);
    // Not every row was read: the export does not claim it wrote them (it used to say 'exported 2000 rows').
    expect(result.stderr).not.toMatch(/exported \d+ rows/);
    expect(result.code, result.stderr).toBe(0);
  });
});
