/**
 * Opening a ledger file: created 0600 when absent (and its -wal/-shm kept so), WAL mode, and
 * migrated to the schema this version writes; every way that can fail is an `E_LEDGER` with a hint.
 */
import { chmodSync, closeSync, existsSync, mkdtempSync, openSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import Database from 'better-sqlite3';
import { QuoteBatchError } from '../errors.js';
import { MIGRATIONS, SCHEMA_VERSION } from './schema.js';

/**
 * Opens (creating with mode 0600 when absent) and migrates the ledger database at `path`.
 * `readonly` opens an existing ledger for reports without writing it (an older one: an upgraded
 * copy); `mustExist` refuses to create one (for commands that change an existing ledger: `resolve`,
 * `prune`).
 */
export function openDatabase(path: string, options: { readonly?: boolean; mustExist?: boolean }): Database.Database {
  const readonly = options.readonly === true;
  if ((readonly || options.mustExist === true) && !existsSync(path)) {
    throw new QuoteBatchError('E_LEDGER', `ledger ${path} does not exist`, {
      hint: 'run `quote-batch run …` first, or pass --ledger <file>',
    });
  }
  if (isDirectory(path)) {
    throw new QuoteBatchError('E_LEDGER', `the ledger path ${path} is a directory`, {
      hint: 'pass --ledger <file> naming a file, e.g. --ledger /var/lib/quote-batch/leads.db',
    });
  }
  if (!readonly) createPrivateFile(path);
  let db: Database.Database;
  try {
    db = new Database(path, { readonly, fileMustExist: true });
    // Long enough to wait out another job's commits and checkpoints in the same file; a write
    // lock held longer (a `prune --vacuum`, a sqlite3 shell) is reported as busy (E_LEDGER).
    db.pragma('busy_timeout = 5000');
    if (!readonly) {
      enableWal(db);
      // NORMAL in WAL mode: a commit survives a process crash (SIGKILL) without an fsync. A power
      // loss may drop the last commits: the commits that mark rows in_flight are therefore made
      // with FULL (`Ledger.commitRowWrites`), and an outcome lost after its mark leaves the row
      // in_flight, which the next run records in_doubt (docs/ledger.md, "What survives").
      db.pragma('synchronous = NORMAL');
      // macOS: an fsync reaches the drive only as F_FULLFSYNC (elsewhere this does nothing).
      db.pragma('fullfsync = ON');
      db.pragma('foreign_keys = ON');
    }
  } catch (error) {
    throw new QuoteBatchError('E_LEDGER', `cannot open ledger ${path}: ${(error as Error).message}`, {
      cause: error,
      hint: 'quote-batch needs to read and write the ledger file and create files beside it (-wal, -shm, job locks)',
    });
  }
  try {
    db = migrate(db, path, readonly);
  } catch (error) {
    db.close();
    if (error instanceof QuoteBatchError) throw error;
    const code = (error as { code?: unknown }).code;
    if (readonly && typeof code === 'string' && code.startsWith('SQLITE_READONLY')) {
      // A WAL file is read with its -shm beside it, which SQLite creates when absent.
      throw new QuoteBatchError('E_LEDGER', `cannot read ledger ${path}: SQLite must create its -shm file beside it to read it, and may not write there (${code})`, {
        cause: error,
        hint: COPY_HINT,
      });
    }
    throw new QuoteBatchError('E_LEDGER', `cannot open ledger ${path}: ${(error as Error).message}`, {
      cause: error,
      hint: 'pass --ledger <file> naming a quote-batch ledger (a SQLite file written by `quote-batch run`)',
    });
  }
  if (!readonly) {
    // SQLite gives -wal/-shm the database file's mode; make sure of it once they exist.
    for (const suffix of ['-wal', '-shm']) {
      if (existsSync(path + suffix)) chmodSync(path + suffix, 0o600);
    }
  }
  return db;
}

function createPrivateFile(path: string): void {
  if (existsSync(path)) return;
  try {
    closeSync(openSync(path, 'a', 0o600));
    chmodSync(path, 0o600); // the umask may have narrowed it further; never widened
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const dir = dirname(path);
    const [reason, hint] =
      code === 'ENOENT'
        ? [`the directory ${dir} does not exist`, `create it, or pass --ledger <file> in an existing directory`]
        : code === 'EACCES' || code === 'EPERM' || code === 'EROFS'
          ? [`the directory ${dir} is not writable`, 'run quote-batch as a user that may write there, or pass --ledger <file> elsewhere']
          : [(error as Error).message, 'pass --ledger <file> naming a file quote-batch may create'];
    throw new QuoteBatchError('E_LEDGER', `cannot create ledger ${path}: ${reason}`, { cause: error, hint });
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** How long {@link enableWal} retries, and how long it sleeps between tries. */
const WAL_SWITCH_WAIT_MS = 5000;
const WAL_SWITCH_RETRY_MS = 20;

/**
 * Puts the file in WAL mode (it stays so). Switching needs the file to itself, and SQLite answers
 * "database is locked" at once, without its busy handler, while another process opening the same
 * new ledger holds it for a moment (two cron runs started together): try again for a while.
 */
function enableWal(db: Database.Database): void {
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  const deadline = Date.now() + WAL_SWITCH_WAIT_MS;
  for (;;) {
    try {
      db.pragma('journal_mode = WAL');
      return;
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'SQLITE_BUSY' || Date.now() >= deadline) throw error;
      Atomics.wait(sleeper, 0, 0, WAL_SWITCH_RETRY_MS);
    }
  }
}

/** How to read a ledger quote-batch may not write. */
const COPY_HINT = 'copy the ledger (with its -wal file, if there is one) into a directory you may write, and pass --ledger <the copy>';

/** Migrates `db` to {@link SCHEMA_VERSION}; returns the database to use (for a reader of an older ledger, an upgraded copy). */
function migrate(db: Database.Database, path: string, readonly: boolean): Database.Database {
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version > SCHEMA_VERSION) {
    throw new QuoteBatchError(
      'E_LEDGER',
      `ledger ${path} has schema version ${version}, newer than this quote-batch understands (${SCHEMA_VERSION})`,
      { hint: 'upgrade quote-batch, or use another --ledger file' },
    );
  }
  if (version === SCHEMA_VERSION) return db;
  if (readonly) return upgradedCopy(db);
  db.transaction(() => {
    // Read again under the write lock: another process opening the same new ledger at the same
    // moment (two cron runs) may have migrated it since.
    const current = db.pragma('user_version', { simple: true }) as number;
    for (let v = current; v < SCHEMA_VERSION; v++) db.exec(MIGRATIONS[v] as string);
    if (current < SCHEMA_VERSION) db.pragma(`user_version = ${SCHEMA_VERSION}`);
  }).immediate();
  return db;
}

/**
 * For a reader (`report`, `jobs`, `export`) of a ledger an older quote-batch wrote: a private copy,
 * upgraded, in place of `db` (closed). The file itself is left as it is: upgrading it would make the
 * older quote-batch that still runs the nightly jobs refuse it. The copy (`VACUUM INTO`, which reads
 * the WAL too) is made in a directory of its own (0700) and unlinked as soon as it is open: the lead
 * data in it is not left behind. Only `run`, `resolve` and `prune` upgrade the file.
 */
function upgradedCopy(db: Database.Database): Database.Database {
  const dir = mkdtempSync(join(tmpdir(), 'quote-batch-read-'));
  try {
    const copyPath = join(dir, 'ledger.db');
    db.prepare('VACUUM INTO ?').run(copyPath);
    db.close();
    const copy = new Database(copyPath, { fileMustExist: true });
    try {
      copy.pragma('journal_mode = MEMORY');
      migrate(copy, copyPath, false);
      copy.pragma('query_only = ON');
      return copy;
    } catch (error) {
      copy.close();
      throw error;
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
