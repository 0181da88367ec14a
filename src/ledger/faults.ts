/**
 * SQLite failures that are the machine's, not quote-batch's: the ledger busy for longer than a
 * connection waits, read-only, its disk full, an I/O error. better-sqlite3 throws them as
 * `SqliteError`, with SQLite's (extended) result code in `code`. A leaf module (no SQLite import),
 * so that the CLI edge can use it.
 */
import { QuoteBatchError } from '../errors.js';

/**
 * The one-line `E_LEDGER` error, with a hint, for a SQLite failure of the machine's on the ledger
 * at `ledgerPath` (undefined: not known); undefined for any other error.
 */
export function ledgerFault(error: unknown, ledgerPath: string | undefined): QuoteBatchError | undefined {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  if (typeof code !== 'string') return undefined;
  const described = describe(code, ledgerPath === undefined ? 'the ledger' : `ledger ${ledgerPath}`);
  if (described === undefined) return undefined;
  return new QuoteBatchError('E_LEDGER', described[0], { cause: error, hint: described[1] });
}

function describe(code: string, ledger: string): [string, string] | undefined {
  if (code.startsWith('SQLITE_BUSY')) {
    return [
      `${ledger} is busy: another process kept it locked for longer than quote-batch waits (${code})`,
      'another quote-batch (a `prune --vacuum`) or a tool such as sqlite3 or DBeaver holds a write transaction on it; run again once that is done',
    ];
  }
  if (code.startsWith('SQLITE_READONLY')) {
    return [
      `cannot write to ${ledger}: it is read-only (${code})`,
      'quote-batch must be able to write the ledger, its -wal and -shm files and its directory: check their owner and mode, and that the file system is not mounted read-only',
    ];
  }
  if (code.startsWith('SQLITE_FULL')) {
    return [
      `cannot write to ${ledger}: the disk is full (${code})`,
      'free space on its file system (`quote-batch prune --older-than 30d --vacuum` drops old jobs and returns their space), then run again',
    ];
  }
  if (code.startsWith('SQLITE_IOERR')) {
    return [
      `cannot read or write ${ledger}: input/output error (${code})`,
      'check the disk and the file system that hold the ledger (e.g. `dmesg`), then run again',
    ];
  }
  return undefined;
}
