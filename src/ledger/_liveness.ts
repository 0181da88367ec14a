/**
 * Whether the process of a run the ledger still marks `running` may be alive, from the run's own
 * signs of life: its pid when it ran on this host, and its heartbeat (a run writes one every 10 s).
 *
 * The job lock (`_job-lock.ts`) is what decides whether a job may be taken. This is for what cannot
 * take the lock: a read-only `jobs` or `report` must not hold a job's lock even for a moment (a run
 * starting then would find the job taken and exit 4), and the ledger's check of a lock file deleted
 * by hand (`Ledger.mayHoldDeletedLock`, which lets the pid alone decide on this host). A zombie is
 * dead; a pid reused by another process reads as alive: that error falls on the side of `running`.
 */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';

/** A run that wrote no heartbeat for this long (the pipeline writes one every 10 s) is dead. */
export const STALE_HEARTBEAT_MS = 60_000;

/** What a run records of its process (columns of `runs`). */
export interface RunSignsOfLife {
  pid: number | null;
  hostname: string | null;
  heartbeat_at: string | null;
}

/**
 * True when process `pid` runs on this host: it exists (signal 0 checks without sending anything)
 * and, where /proc tells, is not a zombie (a killed run its parent has not reaped yet).
 */
export function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: it exists, under another user.
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  return !isZombie(pid);
}

/** True when /proc says `pid` is a zombie (state Z) or dead (X); false where there is no /proc. */
function isZombie(pid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return false;
  }
  // "pid (comm) S …": the command may hold spaces and parentheses, the state follows the last ')'.
  const state = stat.charAt(stat.lastIndexOf(')') + 2);
  return state === 'Z' || state === 'X';
}

/** True when the run wrote a heartbeat less than {@link STALE_HEARTBEAT_MS} before `nowMs`. */
export function heartbeatIsFresh(run: RunSignsOfLife, nowMs: number = Date.now()): boolean {
  if (run.heartbeat_at === null) return false;
  const beat = Date.parse(run.heartbeat_at);
  return Number.isFinite(beat) && nowMs - beat < STALE_HEARTBEAT_MS;
}

/** True when the run ran on this host and recorded a pid that can be checked (0 or less would signal a group). */
export function ranHere(run: RunSignsOfLife, thisHost: string = hostname()): run is RunSignsOfLife & { pid: number } {
  return run.hostname === thisHost && run.pid !== null && Number.isInteger(run.pid) && run.pid > 0;
}

/**
 * True when the run's process may still be alive: its pid runs on this host (a pid reused by another
 * program counts), or it wrote a heartbeat in the last {@link STALE_HEARTBEAT_MS}. The heartbeat
 * counts on this host too: a process in another container that shares the host's name (`--network
 * host`) has a pid this one cannot see. So a killed run reads as gone one minute after its last
 * heartbeat (50–60 s after the kill), and stays `running` for good only while its pid is reused.
 */
export function runMayBeAlive(
  run: RunSignsOfLife,
  nowMs: number = Date.now(),
  thisHost: string = hostname(),
  exists: (pid: number) => boolean = pidExists,
): boolean {
  return (ranHere(run, thisHost) && exists(run.pid)) || heartbeatIsFresh(run, nowMs);
}
