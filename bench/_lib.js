// Helpers of the benchmark suite (bench/run.js): the sandbox as its own process, a measured child
// process (wall, CPU, peak RSS, RSS samples), reading a run's ledger, machine facts.
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, freemem, loadavg, release, tmpdir, totalmem, type as osType } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const BIN = join(ROOT, 'bin', 'quote-batch.js');
export const API_KEY = 'sandbox-key';
const CLOCK_TICKS = 100; // USER_HZ on Linux
const TIME_BIN = '/usr/bin/time';

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
export const round = (value, digits = 0) => (Number.isFinite(value) ? Number(value.toFixed(digits)) : null);

/** CPU seconds (user + system) a live process has used, from /proc; NaN when it is gone. */
export function cpuSecondsOf(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}

/** VmRSS and VmHWM (peak) of a live process in KiB; undefined when it is gone. */
function memoryOf(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rss = /VmRSS:\s+(\d+)/.exec(status);
    const hwm = /VmHWM:\s+(\d+)/.exec(status);
    return rss && hwm ? { rssKb: Number(rss[1]), hwmKb: Number(hwm[1]) } : undefined;
  } catch {
    return undefined;
  }
}

/** The first child of `pid` (the node process under /usr/bin/time), or undefined. */
function childOf(pid) {
  try {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
    return children.length > 0 ? Number(children[0]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Starts `quote-batch sandbox` as its own process (with `latencyMs`, and any other sandbox `flags`,
 * e.g. a partner profile's); resolves once it prints its address.
 */
export async function startSandbox({ agentsFile, latencyMs = 0, flags = [] }) {
  const args = [BIN, 'sandbox', '--port', '0', '--agents', agentsFile, ...flags];
  if (latencyMs > 0) args.push('--latency-ms', String(latencyMs));
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, QUOTE_BATCH_API_KEY: API_KEY, NO_COLOR: '1' },
  });
  let output = '';
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the sandbox did not start in 30 s:\n${output}`)), 30_000);
    const onData = (chunk) => {
      output += chunk;
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`the sandbox exited with ${code}:\n${output}`)));
  });
  child.removeAllListeners('exit');
  // Keep the sandbox's last output: if it dies during a scenario, the error says why.
  child.stdout.on('data', (chunk) => (output = (output + chunk).slice(-4000)));
  child.stderr.on('data', (chunk) => (output = (output + chunk).slice(-4000)));
  let exitStatus = null;
  child.once('exit', (code, signal) => (exitStatus = { code, signal }));
  const checkAlive = () => {
    if (exitStatus !== null) throw new Error(`the sandbox (pid ${child.pid}) exited (${JSON.stringify(exitStatus)}); its last output:\n${output}`);
  };
  return {
    url,
    pid: child.pid,
    cpuSeconds: () => cpuSecondsOf(child.pid),
    /** Operation counters only (the per-lead map is dropped: it holds one entry per lead). */
    async stats() {
      const body = await this.statsBody();
      return { operations: body.operations, statuses: body.statuses, faults: body.faults };
    },
    /** The whole `GET /__sandbox/stats` answer (per-second counts, latency percentiles, …). */
    async statsBody() {
      checkAlive();
      return (await fetch(`${url}/__sandbox/stats`)).json();
    },
    async reset() {
      checkAlive();
      await fetch(`${url}/__sandbox/reset`, { method: 'POST' });
    },
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/**
 * Runs `node <args>` as a child and measures it: wall seconds (from spawn to exit), user+system
 * CPU seconds and peak RSS (from GNU time when /usr/bin/time exists, else from /proc samples),
 * and RSS samples every `sampleMs` (with `probe()`'s answer at that moment, e.g. rows done).
 * After `timeoutS` the process gets SIGTERM (a `run` then stops reading, finishes what is in
 * flight, records it and exits 3): the result says `timedOut`.
 */
export async function measureNode(args, { env = {}, timeoutS = 3600, sampleMs = 500, probe } = {}) {
  const useTime = existsSync(TIME_BIN);
  const dir = mkdtempSync(join(tmpdir(), 'qb-bench-time-'));
  const timeFile = join(dir, 'time.txt');
  const command = useTime ? TIME_BIN : process.execPath;
  const commandArgs = useTime ? ['-f', '%e %U %S %M', '-o', timeFile, process.execPath, ...args] : args;
  const startedAt = Date.now();
  const t0 = performance.now();
  const child = spawn(command, commandArgs, {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, QUOTE_BATCH_API_KEY: API_KEY, NO_COLOR: '1', ...env },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  // The wall time ends when the process exits, not when the sampler next wakes (up to `sampleMs` later).
  let exitedAt = NaN;
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => {
    exitedAt = performance.now();
    resolve({ code, signal });
  }));

  const samples = [];
  let last;
  let nodePid = useTime ? undefined : child.pid;
  let timedOut = false;
  let done = false;
  const timer = setTimeout(() => {
    timedOut = true;
    const pid = nodePid ?? childOf(child.pid);
    if (pid !== undefined) process.kill(pid, 'SIGTERM');
  }, timeoutS * 1000);
  const sampler = (async () => {
    while (!done) {
      nodePid ??= childOf(child.pid);
      if (nodePid !== undefined) {
        const memory = memoryOf(nodePid);
        const cpu = cpuSecondsOf(nodePid);
        if (memory !== undefined) {
          last = { ...memory, cpu };
          const sample = { t: round((performance.now() - t0) / 1000, 2), rssMb: round(memory.rssKb / 1024, 1), peakMb: round(memory.hwmKb / 1024, 1) };
          if (probe !== undefined) sample.probe = probe();
          samples.push(sample);
        }
      }
      await sleep(sampleMs);
    }
  })();
  const { code, signal } = await exited;
  done = true;
  clearTimeout(timer);
  await sampler;
  const wallS = (exitedAt - t0) / 1000;
  let cpuS = last?.cpu ?? NaN;
  let peakRssMb = last ? last.hwmKb / 1024 : NaN;
  let exitCode = code;
  if (useTime && existsSync(timeFile)) {
    // GNU time writes "Command exited with non-zero status N" first when the status is not 0.
    const lines = readFileSync(timeFile, 'utf8').trim().split('\n');
    const exitLine = lines.find((line) => line.startsWith('Command exited'));
    if (exitLine) exitCode = Number(/status (\d+)/.exec(exitLine)?.[1] ?? code);
    const [, user, system, maxRssKb] = (lines.at(-1) ?? '').split(' ').map(Number);
    cpuS = user + system;
    peakRssMb = maxRssKb / 1024;
  }
  rmSync(dir, { recursive: true, force: true });
  return { exitCode, signal, timedOut, startedAt, wallS, cpuS, peakRssMb, samples, stdout, stderr, measuredWith: useTime ? 'GNU time' : '/proc samples' };
}

/** What a `run` left in its ledger: states, the runs, the windows of its attempts. */
export function readLedger(file) {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const job = db.prepare('SELECT * FROM jobs ORDER BY id DESC LIMIT 1').get();
    const states = Object.fromEntries(
      db.prepare('SELECT state, count(*) AS n FROM rows WHERE job_id = ? GROUP BY state').all(job.id).map((r) => [r.state, r.n]),
    );
    const runs = db.prepare('SELECT id, started_at, finished_at, status FROM runs WHERE job_id = ? ORDER BY id').all(job.id);
    const windows = db
      .prepare(
        `SELECT run_id, kind, count(*) AS n, min(started_at) AS first_start,
                max((julianday(started_at) - 2440587.5) * 86400000.0 + duration_ms) AS last_end_ms
           FROM attempts WHERE job_id = ? GROUP BY run_id, kind`,
      )
      .all(job.id);
    const distinctAgents = db.prepare('SELECT count(DISTINCT agent_email) AS n FROM rows WHERE job_id = ? AND agent_email IS NOT NULL').get(job.id).n;
    const rows = Object.values(states).reduce((sum, n) => sum + n, 0);
    return { job, states, rows, runs, windows, distinctAgents };
  } finally {
    db.close();
  }
}

/** A function giving the highest row number recorded so far in a ledger being written (or null). */
export function createRowProbe(file) {
  let db;
  return () => {
    try {
      db ??= existsSync(file) ? new Database(file, { readonly: true, fileMustExist: true }) : undefined;
      return db?.prepare('SELECT max(row_number) AS n FROM rows').get().n ?? null;
    } catch {
      return null;
    }
  };
}

/** Machine facts for the results file. */
export function describeMachine() {
  const list = cpus();
  let commit = null;
  let dirty = null;
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: ROOT, encoding: 'utf8' }).trim() !== '';
  } catch {
    // not a git checkout
  }
  return {
    cpuModel: list[0]?.model ?? null,
    cpus: list.length,
    cpuMhz: list[0]?.speed ?? null,
    memoryTotalMb: Math.round(totalmem() / 2 ** 20),
    memoryFreeMbAtStart: Math.round(freemem() / 2 ** 20),
    os: `${osType()} ${release()}`,
    node: process.version,
    commit,
    srcModifiedSinceCommit: dirty,
    loadAverageAtStart: loadavg().map((n) => round(n, 2)),
  };
}

export function createTempDir(prefix) {
  return mkdtempSync(join(tmpdir(), prefix));
}
