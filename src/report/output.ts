/** What the report, export and jobs commands share: finding the ledger and writing `--out` files. */
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadConfig } from '../config/index.js';
import { QuoteBatchError } from '../errors.js';
import { Ledger } from '../ledger/index.js';

/** The ledger `run` writes by default, relative to the working directory. */
export const DEFAULT_LEDGER_FILE = 'quote-batch.db';

export function resolveLedgerPath(cwd: string, flag: string | undefined): string {
  // The same ledger `run` writes: --ledger, else the config file's defaults.ledger, else ./quote-batch.db.
  return resolve(cwd, flag ?? loadConfig(undefined, cwd).file.defaults?.ledger ?? DEFAULT_LEDGER_FILE);
}

/**
 * Opens a ledger read-only (an analyst may read while a run writes; WAL lets both go on).
 * A missing or unreadable ledger is an `E_LEDGER` error with a hint.
 */
export function openReportLedger(path: string): Ledger {
  return Ledger.open(path, { readonly: true });
}

/**
 * Writes an output file produced chunk by chunk by `produce`, atomically: to a temporary file
 * beside it (mode 0600: exports hold lead data), then renamed, so a reader never sees half a file
 * and a failed export leaves no partial file behind.
 */
export function writeOutput<T>(path: string, produce: (write: (chunk: string) => void) => T): T {
  const temp = `${path}.${process.pid}.tmp`;
  let fd: number;
  try {
    fd = openSync(temp, 'w', 0o600);
  } catch (error) {
    throw new QuoteBatchError('E_USAGE', `cannot write ${path}: ${(error as Error).message}`, { cause: error });
  }
  try {
    const result = produce((chunk) => {
      writeSync(fd, chunk);
    });
    fsyncSync(fd);
    closeSync(fd);
    renameSync(temp, path);
    return result;
  } catch (error) {
    try {
      closeSync(fd);
    } catch {
      // already closed
    }
    rmSync(temp, { force: true });
    throw error;
  }
}
