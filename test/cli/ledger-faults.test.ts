/**
 * A ledger SQLite cannot write (here: busy, its write lock held by another connection for longer
 * than quote-batch waits) is reported in one line naming the ledger, with a hint: exit 2 when
 * nothing was sent, 3 once requests may have left (run again) — never "internal error" and a stack.
 * Each case waits out the ledger's busy timeout (5 s, up to three times), so the file takes about 30 s.
 */
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ledger } from '../../src/ledger/index.js';
import type { SandboxHandle } from '../../src/sandbox/index.js';
import { startCli, type CliResult } from '../helpers/cli.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { KEY, MAPPING_CSV, readLedger, SAMPLE_CSV, startTestSandbox, waitFor } from '../pipeline/_setup.js';

describe('a ledger that cannot be written', () => {
  const tmp = useTempDir('quote-batch-faults-');
  let sandbox: SandboxHandle;

  beforeAll(async () => {
    // Slow answers: a run is still sending when the test takes the ledger's write lock.
    sandbox = await startTestSandbox({ faults: { latencyMs: 300 } });
  });
  afterAll(() => sandbox.close());

  const start = (args: readonly string[]) => startCli(args, { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: KEY }, timeoutMs: 90_000 });
  const runArgs = (ledger: string) => ['run', SAMPLE_CSV, '--mapping', MAPPING_CSV, '--base-url', sandbox.url, '--env', 'sandbox', '--ledger', ledger, '--concurrency', '2', '--no-adaptive', '--quiet'];

  /** Holds the ledger's write lock from another connection until `done` settles. */
  async function whileLocked(path: string, done: Promise<CliResult>): Promise<CliResult> {
    const db = new Database(path);
    db.exec('BEGIN IMMEDIATE');
    try {
      return await done;
    } finally {
      db.exec('ROLLBACK');
      db.close();
    }
  }

  function expectOneLine(result: CliResult, code: number, path: string): void {
    expect(result.stderr).not.toMatch(/internal error|\n\s+at /);
    const errors = result.stderr.split('\n').filter((line) => line.startsWith('error: '));
    expect(errors, result.stderr).toEqual([expect.stringMatching(new RegExp(`^error: ledger ${path.replaceAll('.', '\\.')} is busy: another process kept it locked`))]);
    expect(result.stderr).toMatch(/\nhint: another quote-batch \(a `prune --vacuum`\) or a tool such as sqlite3 .* holds a write transaction on it; run again once that is done\n/);
    expect(result.code, result.stderr).toBe(code);
  }

  it('prune: exit 2', async () => {
    const path = tmp.path('l.db');
    Ledger.open(path).close();
    const result = await whileLocked(path, start(['prune', '--ledger', path, '--older-than', '1s', '--include-unfinished', '--vacuum']).done);
    expectOneLine(result, 2, path);
  });

  it('run, before anything was sent: exit 2', async () => {
    const path = tmp.path('l.db');
    Ledger.open(path).close();
    const received = sandbox.stats().operations.quote.received;
    const result = await whileLocked(path, start(runArgs(path)).done);
    expectOneLine(result, 2, path);
    expect(sandbox.stats().operations.quote.received).toBe(received);
  });

  it('run, once requests have left: exit 3, the ledger intact', async () => {
    const path = tmp.path('l.db');
    const received = sandbox.stats().operations.quote.received;
    const { done } = start([...runArgs(path), '--limit', '40']);
    await waitFor(() => sandbox.stats().operations.quote.received > received, 60_000);
    expectOneLine(await whileLocked(path, done), 3, path);
    expect(readLedger(path).integrity).toBe('ok');
  });
});
