/** What the report, export and jobs commands share: finding the ledger and writing `--out` files. */
import { closeSync, fsyncSync, openSync, realpathSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { resolve } from 'node:path';
import { QuoteBatchError } from '../errors.js';
import { openLedger, readJobFiles, type AnyLedger, type SqlDb } from '../ledger/index.js';

/**
 * Opens a ledger read-only (an analyst may read while a run writes; WAL lets both go on).
 * A missing or unreadable ledger is an `E_LEDGER` error with a hint.
 */
export function openReportLedger(path: string): Promise<AnyLedger> {
  return openLedger(path, { readonly: true });
}

/**
 * Refuses an `--out` naming a file the output would destroy (the rename replaces it whole): the
 * ledger itself or its -wal/-shm (the record of what was sent, which keeps a lead from going
 * twice), or the input or mapping file of one of its jobs (the leads themselves). Files are
 * compared by identity (device and inode), so another spelling of the same path is caught too.
 */
export async function refuseProtectedOut(outPath: string, ledgerPath: string, db: SqlDb): Promise<void> {
  const out = identity(outPath);
  if (out === undefined) return;
  const same = (path: string): boolean => identity(path) === out;
  // SQLite keeps -wal and -shm beside the file a symbolic link names.
  const real = realPath(ledgerPath);
  if ([ledgerPath, `${real}-wal`, `${real}-shm`, `${ledgerPath}-wal`, `${ledgerPath}-shm`].some(same)) {
    throw new QuoteBatchError('E_USAGE', `--out ${outPath} is the ledger ${ledgerPath}: writing there would destroy the record of what was sent`, {
      hint: 'name another file, e.g. --out report.html or --out rows.csv',
    });
  }
  for (const job of await readJobFiles(db)) {
    for (const [what, path] of [['input', job.input_path], ['mapping', job.mapping_path]] as const) {
      if (same(resolve(path))) {
        throw new QuoteBatchError('E_USAGE', `--out ${outPath} is the ${what} file of job ${job.id}: writing there would replace it`, {
          hint: 'name another file, e.g. --out to-fix.csv',
        });
      }
    }
  }
}

function realPath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/** `device:inode` of an existing file, or undefined. */
function identity(path: string): string | undefined {
  try {
    const stat = statSync(path, { bigint: true });
    return `${stat.dev}:${stat.ino}`;
  } catch {
    return undefined;
  }
}

/** Gives a producer the chunks' way into the output. */
export type WriteChunk = (chunk: string | Uint8Array) => void;

/**
 * Writes an output file produced chunk by chunk by `produce`, atomically: to a temporary file
 * beside it (mode 0600: exports hold lead data), then renamed, so a reader never sees half a file
 * and a failed export leaves no partial file behind.
 */
export function writeOutput<T>(path: string, produce: (write: WriteChunk) => T): T {
  const out = openTemp(path);
  try {
    const result = produce(out.write);
    out.finish();
    return result;
  } catch (error) {
    out.abandon();
    throw error;
  }
}

/** {@link writeOutput} for a producer that reads as it goes (awaits between chunks). */
export async function writeOutputAsync<T>(path: string, produce: (write: WriteChunk) => Promise<T>): Promise<T> {
  const out = openTemp(path);
  try {
    const result = await produce(out.write);
    out.finish();
    return result;
  } catch (error) {
    out.abandon();
    throw error;
  }
}

function openTemp(path: string): { write: WriteChunk; finish(): void; abandon(): void } {
  const temp = `${path}.${process.pid}.tmp`;
  let fd: number;
  try {
    fd = openSync(temp, 'w', 0o600);
  } catch (error) {
    throw new QuoteBatchError('E_USAGE', `cannot write ${path}: ${(error as Error).message}`, { cause: error });
  }
  return {
    write: (chunk) => {
      if (typeof chunk === 'string') {
        writeSync(fd, chunk);
        return;
      }
      for (let done = 0; done < chunk.length;) done += writeSync(fd, chunk, done);
    },
    finish: () => {
      fsyncSync(fd);
      closeSync(fd);
      renameSync(temp, path);
    },
    abandon: () => {
      try {
        closeSync(fd);
      } catch {
        // already closed
      }
      rmSync(temp, { force: true });
    },
  };
}
