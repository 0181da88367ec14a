import { statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { Ledger } from '../../src/ledger/index.js';
import { useTempDir } from '../helpers/temp-dir.js';

const newJob = {
  input_path: '/tmp/in.csv', input_sha256: 'a'.repeat(64), input_format: 'csv', mapping_path: 'm.yaml',
  mapping_sha256: 'b'.repeat(64), environment: 'sandbox', operation: 'quote', base_url: 'http://127.0.0.1:1',
} as const;
const PAGE = 4096;
/** A request body as large as a real one: each write of a row rewrites a page or two. */
const REQUEST = JSON.stringify({ note: 'x'.repeat(2000) });

/** Opens a ledger with `rows` pending rows of one job. */
function ledgerWithRows(path: string, rows: number): { ledger: Ledger; jobId: number } {
  const ledger = Ledger.open(path);
  const job = ledger.createJob(newJob);
  ledger.startRun(job.id, '{}', 'test');
  ledger.insertRows(job.id, Array.from({ length: rows }, (_, i) => ({ rowNumber: i + 1, rowKey: `k${i + 1}`, agentEmail: null, state: 'pending' as const })));
  return { ledger, jobId: job.id };
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 1));

describe('background WAL checkpoints', () => {
  const tmp = useTempDir();

  it('keep the WAL from growing while the writer commits, and lose no write', async () => {
    const path = tmp.path('l.db');
    const { ledger, jobId } = ledgerWithRows(path, 3000);
    const checkpoints = ledger.checkpointInBackground({ intervalMs: 10 });
    // The writer's own checkpoints are off (a safety net far above SQLite's 1000 pages).
    expect(ledger.db.pragma('wal_autocheckpoint', { simple: true })).toBeGreaterThan(1000);
    let written = 0;
    // One row per event-loop turn, as the pipeline commits; bounded, and long enough for rounds.
    for (let row = 1; row <= 3000 && (checkpoints.rounds < 5 || row <= 1500); row += 1) {
      ledger.db.transaction(() => ledger.markInFlight(jobId, row, null, REQUEST))();
      written = row;
      await nextTurn();
    }
    expect(checkpoints.rounds, 'checkpoint rounds while writing').toBeGreaterThanOrEqual(5);
    // Without a checkpoint to its end the WAL would hold a page (at least) per commit.
    expect(statSync(`${path}-wal`).size).toBeLessThan((written * PAGE) / 2);
    await checkpoints.stop();
    expect(ledger.db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    ledger.close();

    const db = new Database(path, { readonly: true });
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    expect(db.prepare(`SELECT COUNT(*) FROM rows WHERE state = 'in_flight' AND request_json = ?`).pluck().get(REQUEST)).toBe(written);
    db.close();
  }, 60_000);

  it('stop() waits for the worker; closing the ledger without it stops the worker too', async () => {
    const first = ledgerWithRows(tmp.path('a.db'), 10);
    const checkpoints = first.ledger.checkpointInBackground({ intervalMs: 5 });
    first.ledger.markInFlight(first.jobId, 1, null, REQUEST);
    await checkpoints.stop();
    await checkpoints.stop(); // twice is harmless
    first.ledger.close();

    const second = ledgerWithRows(tmp.path('b.db'), 10);
    second.ledger.checkpointInBackground({ intervalMs: 5 });
    second.ledger.markInFlight(second.jobId, 1, null, REQUEST);
    second.ledger.close();
    const db = new Database(tmp.path('b.db'), { readonly: true });
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    expect(db.prepare(`SELECT state FROM rows WHERE row_number = 1`).pluck().get()).toBe('in_flight');
    db.close();
  });
});
