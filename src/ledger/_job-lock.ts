/**
 * The job lock: one small SQLite file per job beside the ledger (`<ledger>.job-<id>.lock`, 0600),
 * held by an open `BEGIN EXCLUSIVE` transaction for as long as a process works on the job.
 *
 * Why this and not a pid in the ledger: SQLite locks the file with POSIX advisory locks, which
 * the kernel drops when the holding process dies, before it is even a zombie. So a killed run
 * (kill -9, OOM killer, a supervisor's group kill) frees its job at once, and neither a zombie,
 * a reused pid nor another container sharing the volume (same host, same kernel) is mistaken for
 * a live holder. Node has no flock(); better-sqlite3 gives us fcntl locks through SQLite.
 *
 * Three rules keep the lock sound:
 * - Never open the lock file with `fs` while this process may hold it: closing any descriptor of
 *   a file drops every POSIX lock the process holds on it. The file is only ever created with
 *   O_EXCL (no descriptor is opened when it exists).
 * - A lock file is deleted only by its holder (`prune`, for jobs it drops). A process that locked
 *   a file already unlinked holds nothing that others can see, so acquire() checks that the path
 *   still names the file it locked and otherwise tries again. (A lock file deleted by hand while
 *   held is caught by the ledger: see `Ledger.tryLockJob`.)
 * - A lock file this process may not write is refused: SQLite would open it read-only, and a
 *   read-only `BEGIN EXCLUSIVE` locks nothing.
 */
import { accessSync, closeSync, constants, openSync, statSync, unlinkSync, type Stats } from 'node:fs';
import Database from 'better-sqlite3';
import { QuoteBatchError } from '../errors.js';

/** A held job lock. */
export interface JobLock {
  readonly jobId: number;
  readonly path: string;
  /** When the lock file was created (its ctime), in ms since the epoch. */
  readonly fileCreatedMs: number;
  /** Releases the lock (safe to call twice). */
  release(): void;
  /** Deletes the lock file, then releases the lock (for a job that no longer exists). */
  remove(): void;
}

/** The lock file of job `jobId` of the ledger at `ledgerPath`. */
export function jobLockPath(ledgerPath: string, jobId: number): string {
  return `${ledgerPath}.job-${jobId}.lock`;
}

/** Attempts before giving up when the lock file keeps being replaced under us (a concurrent prune). */
const MAX_ATTEMPTS = 3;

/**
 * Takes the lock of `jobId` without waiting. Returns undefined when another live process (or
 * another ledger connection of this process) holds it.
 */
export function tryAcquireJobLock(ledgerPath: string, jobId: number): JobLock | undefined {
  const path = jobLockPath(ledgerPath, jobId);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt += 1) {
    createIfAbsent(path);
    const before = statOrUndefined(path);
    if (before === undefined) continue;
    assertWritable(path, before);
    let db: Database.Database;
    try {
      // timeout 0: a held lock fails at once (SQLITE_BUSY) instead of waiting.
      db = new Database(path, { fileMustExist: true, timeout: 0 });
    } catch (error) {
      // SQLite says only "cannot open": the file was deleted meanwhile (try again), or something else.
      if ((error as { code?: unknown }).code === 'SQLITE_CANTOPEN' && statOrUndefined(path) === undefined) continue;
      throw lockFileError(path, error);
    }
    try {
      db.exec('BEGIN EXCLUSIVE');
    } catch (error) {
      db.close();
      if ((error as { code?: unknown }).code === 'SQLITE_BUSY') return undefined;
      throw lockFileError(path, error);
    }
    const after = statOrUndefined(path);
    if (after !== undefined && after.ino === before.ino && after.dev === before.dev) return heldLock(jobId, path, after.ctimeMs, db);
    // The file was deleted (or replaced) while we locked it: the lock we hold protects nothing.
    db.close();
  }
  throw new QuoteBatchError('E_LEDGER', `cannot lock job ${jobId}: its lock file ${path} keeps being replaced`, {
    hint: 'another process is deleting lock files beside the ledger; lock files must stay while their job exists',
  });
}

function heldLock(jobId: number, path: string, fileCreatedMs: number, db: Database.Database): JobLock {
  const release = (): void => {
    // Closing the connection ends the transaction and drops the lock.
    if (db.open) db.close();
  };
  return {
    jobId,
    path,
    fileCreatedMs,
    release,
    remove: () => {
      if (!db.open) return;
      try {
        unlinkSync(path);
      } catch (error) {
        if (!isMissing(error)) throw lockFileError(path, error);
      } finally {
        release();
      }
    },
  };
}

function createIfAbsent(path: string): void {
  try {
    closeSync(openSync(path, 'wx', 0o600));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw lockFileError(path, error);
  }
}

function statOrUndefined(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw lockFileError(path, error);
  }
}

function isMissing(error: unknown): boolean {
  return (error as { code?: unknown }).code === 'ENOENT';
}

/**
 * A lock file this process may not write is refused. SQLite would open it read-only without a
 * word, and then its `BEGIN EXCLUSIVE` takes no lock at all: two processes would both "hold" the
 * job. `access(2)` opens no descriptor, so it cannot drop a lock this process holds (see above).
 */
function assertWritable(path: string, stats: Stats): void {
  try {
    accessSync(path, constants.R_OK | constants.W_OK);
  } catch (error) {
    if (isMissing(error)) return; // deleted meanwhile: opening it fails and the caller tries again
    const owner = process.getuid?.() === stats.uid ? '' : ` (it belongs to uid ${stats.uid}, mode ${(stats.mode & 0o777).toString(8).padStart(4, '0')})`;
    throw new QuoteBatchError('E_LEDGER', `cannot use the job lock file ${path}: permission denied${owner}`, {
      cause: error,
      hint: 'run quote-batch as the user that owns the ledger and its lock files, or give that user read and write access to them (chown/chmod)',
    });
  }
}

function lockFileError(path: string, error: unknown): QuoteBatchError {
  const code = (error as { code?: unknown }).code;
  const reason = code === 'EACCES' || code === 'EPERM' || code === 'EROFS' ? 'permission denied' : (error as Error).message;
  return new QuoteBatchError('E_LEDGER', `cannot use the job lock file ${path}: ${reason}`, {
    cause: error,
    hint: "the ledger's directory must be writable by quote-batch (it keeps one small lock file per job there)",
  });
}
