/**
 * Spawns the real CLI (`bin/quote-batch.js` → `dist/`), as users and cron do. `dist/` is built
 * once by vitest's global setup (`test/helpers/global-setup.ts`), never by a test file.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, cpSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const CLI = join(REPO_ROOT, 'bin', 'quote-batch.js');

let readableCopy: string | undefined;

/**
 * The CLI in a copy every user can read (mode 0755/0644, under the system's temporary directory), for
 * a test that runs it as another user: a checkout in a private directory (a `mktemp -d`, /root) is
 * readable by its owner alone. The copy holds what the bundled CLI loads: its launcher, dist/bundle/,
 * package.json and better-sqlite3 (the one package it does not bundle). Made once per process.
 */
export function cliReadableByAll(): string {
  if (readableCopy !== undefined) return readableCopy;
  const root = mkdtempSync(join(tmpdir(), 'quote-batch-cli-'));
  const copy = (path: string): void => cpSync(join(REPO_ROOT, path), join(root, path), { recursive: true });
  for (const path of ['package.json', 'bin', join('dist', 'bundle'), join('node_modules', 'bindings'), join('node_modules', 'file-uri-to-path')]) copy(path);
  for (const path of ['package.json', 'lib', join('build', 'Release', 'better_sqlite3.node')]) copy(join('node_modules', 'better-sqlite3', path));
  const open = (path: string): void => {
    const stat = statSync(path);
    chmodSync(path, stat.isDirectory() ? 0o755 : 0o644);
    if (stat.isDirectory()) for (const entry of readdirSync(path)) open(join(path, entry));
  };
  open(root);
  process.once('exit', () => rmSync(root, { recursive: true, force: true }));
  readableCopy = join(root, 'bin', 'quote-batch.js');
  return readableCopy;
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  cwd?: string;
  env?: Record<string, string | undefined>;
  /** Kill the process after this many ms (the test then fails on the code). */
  timeoutMs?: number;
}

/** Environment for a CLI process: no inherited key, no colour. */
export function cliEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' };
  delete env.QUOTE_BATCH_API_KEY;
  delete env.QUOTE_BATCH_UAT_URL;
  delete env.QUOTE_BATCH_PRODUCTION_URL;
  delete env.QUOTE_BATCH_SANDBOX_URL;
  delete env.QUOTE_BATCH_LEDGER;
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

/** Starts the CLI and returns the child plus a promise of its result. */
export function startCli(args: readonly string[], options: CliOptions = {}): { child: ChildProcess; done: Promise<CliResult> } {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: options.cwd ?? REPO_ROOT,
    env: cliEnv(options.env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
  const done = new Promise<CliResult>((resolveDone) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolveDone({ code, signal, stdout, stderr });
    });
  });
  return { child, done };
}

export function runCli(args: readonly string[], options: CliOptions = {}): Promise<CliResult> {
  return startCli(args, options).done;
}
