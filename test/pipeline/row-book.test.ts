/**
 * The row book when the ledger refuses a commit (busy: another connection holds its write lock):
 * nothing is lost or inserted twice, and a later commit records everything once the ledger is free.
 */
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { Ledger, type NewRow, type RowState, type RowWrite } from '../../src/ledger/index.js';
import { RowBook } from '../../src/pipeline/row-book.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { STOPPED } from '../../src/pipeline/row-state.js';

const newJob = {
  input_path: '/tmp/in.csv', input_sha256: 'a'.repeat(64), input_format: 'csv', mapping_path: 'm.yaml',
  mapping_sha256: 'b'.repeat(64), environment: 'sandbox', operation: 'quote', base_url: 'http://127.0.0.1:1',
} as const;

const row = (rowNumber: number): NewRow => ({ rowNumber, rowKey: `K${rowNumber}`, agentEmail: null, state: 'pending' });
const mark = (rowNumber: number): RowWrite => ({ kind: 'mark', rowNumber, agentId: null, requestJson: null, requestSha256: null });

describe('RowBook when a commit fails', () => {
  const tmp = useTempDir('quote-batch-row-book-');

  it.each([
    ['the insert itself', 'insert'],
    ['a write after the insert', 'write'],
  ] as const)('fails at %s: the rows wait again, once, with their keys, and the next commit records them', async (_label, failAt) => {
    const path = tmp.path(`${failAt}.db`);
    const ledger = Ledger.open(path);
    ledger.db.pragma('busy_timeout = 0');
    const job = ledger.createJob(newJob);
    const { run } = ledger.startRun(job.id, '{}', 'test', STOPPED);
    const book = new RowBook(ledger, job.id, run.id, undefined);
    for (const n of [1, 2, 3]) book.record(undefined, row(n));

    const other = new Database(path);
    let committed: Promise<unknown>;
    if (failAt === 'insert') {
      other.exec('BEGIN IMMEDIATE'); // the commit's first write, the rows' insert, finds the ledger busy
      committed = book.write(mark(1));
    } else {
      // A state the schema refuses: the write after the insert fails.
      const bad = { kind: 'outcome', rowNumber: 2, change: { state: 'no_such_state' as RowState }, attempts: [] } as const;
      committed = Promise.all([book.write(mark(1)), book.write(bad)]);
    }
    await expect(committed).rejects.toThrow();
    if (failAt === 'insert') other.exec('ROLLBACK');
    other.close();
    expect(ledger.countsByState(job.id).pending).toBe(0); // rolled back: no row recorded
    expect(book.hasRowKey('K2')).toBe(true); // still known, so a later row with this key is a duplicate

    await book.write(mark(2));
    book.flushInserts();
    const rows = ledger.db.prepare('SELECT row_number, state FROM rows WHERE job_id = ? ORDER BY row_number').all(job.id);
    expect(rows).toEqual([
      { row_number: 1, state: 'pending' },
      { row_number: 2, state: 'in_flight' },
      { row_number: 3, state: 'pending' },
    ]);
    ledger.close();
  });
});

describe('RowBook commits', () => {
  const tmp = useTempDir('quote-batch-row-book-timing-');

  it("commits the turn's first write a request waits for once the running promise jobs are done, with the writes they queued; later ones at the end of the turn", async () => {
    const ledger = Ledger.open(tmp.path('urgent.db'));
    const job = ledger.createJob(newJob);
    const { run } = ledger.startRun(job.id, '{}', 'test', STOPPED);
    const book = new RowBook(ledger, job.id, run.id, undefined);
    for (const n of [1, 2, 3, 4]) book.record(undefined, row(n));
    book.flushInserts();
    let commits = 0;
    const commit = ledger.commitRowWrites.bind(ledger);
    ledger.commitRowWrites = (...args) => {
      commits += 1;
      return commit(...args);
    };
    /** Whether the end of the turn (an I/O callback queued when it began) has come, by the time a write is committed. */
    const endOfTurn = (): (() => boolean) => {
      let ended = false;
      setImmediate(() => {
        ended = true;
      });
      return () => ended;
    };
    const ended = (turn: () => boolean, written: Promise<unknown>): Promise<boolean> => written.then(turn);

    let turn = endOfTurn();
    // An answer's outcome (not urgent) and, a few promise jobs later, the next row's mark (urgent).
    const outcome = ended(turn, book.write(mark(1)));
    await Promise.resolve();
    await Promise.resolve();
    expect(await ended(turn, book.write(mark(2), true))).toBe(false);
    expect(await outcome).toBe(false);
    expect(commits).toBe(1); // one commit for both
    expect(ledger.countsByState(job.id).in_flight).toBe(2);
    // The turn's second one waits for the turn's end: a turn of many answers commits once.
    expect(await ended(turn, book.write(mark(4), true))).toBe(true);
    expect(commits).toBe(2);

    // Without an urgent write, the turn's writes wait for its end.
    await new Promise((resolve) => setImmediate(resolve));
    turn = endOfTurn();
    expect(await ended(turn, book.write(mark(3)))).toBe(true);
    expect(commits).toBe(3);
    // A new turn has its early commit again.
    await new Promise((resolve) => setImmediate(resolve));
    turn = endOfTurn();
    expect(await ended(turn, book.write(mark(1), true))).toBe(false);
    ledger.close();
  });
});
