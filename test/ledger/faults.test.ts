/** Which SQLite failures the CLI reports as the machine's (one line naming the ledger), by code. */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { ledgerFault } from '../../src/ledger/faults.js';

const fault = (code: unknown) => ledgerFault(Object.assign(new Error('x'), { code }), '/var/lib/qb/leads.db');

describe('ledgerFault', () => {
  it.each([
    ['SQLITE_BUSY', /^ledger \/var\/lib\/qb\/leads\.db is busy: .*\(SQLITE_BUSY\)$/, /prune --vacuum/],
    ['SQLITE_BUSY_SNAPSHOT', /is busy/, /run again once that is done/],
    ['SQLITE_READONLY', /^cannot write to ledger \/var\/lib\/qb\/leads\.db: it is read-only \(SQLITE_READONLY\)$/, /owner and mode/],
    ['SQLITE_READONLY_DBMOVED', /it is read-only \(SQLITE_READONLY_DBMOVED\)$/, /owner and mode/],
    ['SQLITE_FULL', /^cannot write to ledger .*: the disk is full \(SQLITE_FULL\)$/, /prune --older-than 30d --vacuum/],
    ['SQLITE_IOERR', /^cannot read or write ledger .*: input\/output error \(SQLITE_IOERR\)$/, /dmesg/],
    ['SQLITE_IOERR_WRITE', /input\/output error \(SQLITE_IOERR_WRITE\)$/, /dmesg/],
  ])('%s: E_LEDGER, one line and a hint', (code, message, hint) => {
    const error = fault(code);
    expect(error?.code).toBe('E_LEDGER');
    expect(error?.message).toMatch(message);
    expect(error?.message).not.toContain('\n');
    expect(error?.hint).toMatch(hint);
  });

  it.each([['SQLITE_CONSTRAINT_PRIMARYKEY'], ['SQLITE_ERROR'], ['ENOENT'], [42], [undefined]])('%s is not one of them (a bug, or another kind of error)', (code) => {
    expect(fault(code)).toBeUndefined();
  });

  it('reads the code better-sqlite3 gives, and says "the ledger" when its path is not known', () => {
    const db = new Database(':memory:');
    let thrown: unknown;
    try {
      db.pragma('query_only = 1');
      db.exec('CREATE TABLE t (x)');
    } catch (error) {
      thrown = error;
    }
    db.close();
    expect(ledgerFault(thrown, undefined)?.message).toMatch(/^cannot write to the ledger: it is read-only \(SQLITE_READONLY\)$/);
    expect(ledgerFault(null, undefined)).toBeUndefined();
  });
});
