/**
 * Processes that open a new ledger at the same moment (two cron runs, a run and a report): each
 * creates or migrates it once, and none fails on what another created meanwhile.
 */
import { spawn } from 'node:child_process';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { SCHEMA_VERSION } from '../../src/ledger/index.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { LEDGER_MODULE } from './_child.js';

const PROCESSES = 6;
const ROUNDS = 8;

/** Starts a process that opens `path` at `at` (ms since the epoch) and says how it went. */
function openAt(path: string, at: number): Promise<string> {
  const script = `
    const { Ledger } = await import(${JSON.stringify(LEDGER_MODULE)});
    while (Date.now() < ${at}) {}
    try {
      Ledger.open(${JSON.stringify(path)}).close();
      process.stdout.write('ok');
    } catch (error) {
      process.stdout.write(String(error.message));
    }`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  return new Promise((resolve) => child.once('close', () => resolve(out)));
}

describe('a new ledger opened by several processes at once', () => {
  const tmp = useTempDir('quote-batch-open-race-');

  it(`is created and migrated once, whichever gets there first (${PROCESSES} processes, ${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round += 1) {
      const path = tmp.path(`race-${round}.db`);
      const at = Date.now() + 700; // after every process has loaded the module
      const results = await Promise.all(Array.from({ length: PROCESSES }, () => openAt(path, at)));
      expect(results, `round ${round}`).toEqual(Array.from({ length: PROCESSES }, () => 'ok'));
      const db = new Database(path, { readonly: true });
      expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
      db.close();
    }
  }, 60_000);
});
