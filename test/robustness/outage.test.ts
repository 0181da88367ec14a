/**
 * Fault suite, the long case (issue item 4): a 60-second outage of the partner in the middle of a
 * run. Its own file so that it waits in one test worker while the other runs the rest. The run
 * must neither flood the partner nor halt (the default --max-consecutive-failures 50 is not
 * reached: the breaker probes at growing intervals), and must complete once the partner is back.
 */
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SandboxHandle } from '../../src/sandbox/index.js';
import { startCli, type CliResult } from '../helpers/cli.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { countState, generateLeads, MAPPING_CSV, readLedger, waitFor } from '../pipeline/_setup.js';
import {
  CANARY_KEY, expectedStateOf, expectNoSecrets, expectPrivateLedger, startCanarySandbox,
} from './_shared.js';

const OUTAGE_MS = 60_000;
const ROWS = 400;

describe('a 60-second outage', () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let sandbox: SandboxHandle | undefined;

  beforeEach(() => {
    tmp = makeTempDir('quote-batch-outage-');
  });
  afterEach(async () => {
    await sandbox?.close();
    sandbox = undefined;
    tmp.cleanup();
  });

  it('pauses behind the circuit breaker with a few probes, then completes without a duplicate', async () => {
    const { csv, agents } = generateLeads(tmp.dir, ROWS, 31);
    sandbox = await startCanarySandbox({ latencyMs: 5, jitterMs: 5 }, 5, agents);
    const ledgerPath = tmp.path('outage.db');
    // --rate keeps the run going long enough for the outage to land in its middle.
    const { child, done } = startCli(
      ['run', csv, '--mapping', MAPPING_CSV, '--base-url', sandbox.url, '--env', 'sandbox', '--ledger', ledgerPath, '--rate', '20', '--json-log'],
      { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: CANARY_KEY }, timeoutMs: 240_000 },
    );
    let result: CliResult | undefined;
    void done.then((r) => (result = r));
    try {
      await waitFor(() => result !== undefined || countState(ledgerPath, 'succeeded') >= 40, 60_000);
      expect(result, 'the run ended before the outage began').toBeUndefined();
      const before = sandbox.stats();
      sandbox.setFaults({ outage: true });
      await new Promise((r) => setTimeout(r, OUTAGE_MS));
      const during = sandbox.stats();
      sandbox.setFaults({ outage: false });
      const outageEnd = Date.now();
      expect(result, 'the run stopped during the outage').toBeUndefined();
      result = await done;

      // Not a flood: a handful of requests that were under way, then one probe per cool-down.
      const requestsDuring = during.operations.quote.received + during.operations.validate.received
        - before.operations.quote.received - before.operations.validate.received;
      expect(during.faults.outage).toBe(requestsDuring);
      expect(requestsDuring).toBeGreaterThan(0);
      expect(requestsDuring).toBeLessThan(40); // without the breaker: ~8 senders × 60 s of back-off ≈ hundreds

      // The probes spread out: the breaker's cool-down doubles (1, 2, 4, 8 … 30 s).
      const db = new Database(ledgerPath, { readonly: true, fileMustExist: true });
      const failedStarts = (db.prepare("SELECT started_at FROM attempts WHERE http_status = 503 ORDER BY started_at").all() as { started_at: string }[])
        .map((a) => Date.parse(a.started_at));
      const afterOutage = (db.prepare('SELECT COUNT(*) AS n FROM attempts WHERE http_status = 200 AND started_at > ?').get(new Date(outageEnd).toISOString()) as { n: number }).n;
      db.close();
      expect(failedStarts.length).toBe(requestsDuring);
      const gaps = failedStarts.slice(1).map((t, i) => t - failedStarts[i]!);
      expect(Math.max(...gaps)).toBeGreaterThanOrEqual(8_000);
      // ... and it closed again: rows were quoted after the outage.
      expect(afterOutage).toBeGreaterThan(0);

      // The run did not halt and completed: every row final, none in doubt, no lead twice.
      expect(result.stderr).not.toMatch(/internal error|circuit breaker open/);
      const ledger = readLedger(ledgerPath);
      expect(ledger.runs.map((r) => r.status)).toEqual(['completed']);
      expect(ledger.rows).toHaveLength(ROWS);
      for (const row of ledger.rows) expect(`${row.row_number}:${row.state}`).toBe(`${row.row_number}:${expectedStateOf(row.row_number)}`);
      expect(result.code).toBe(1);
      expect(ledger.jobs[0]?.status).toBe('completed');
      expect(sandbox.stats().duplicateLeads).toEqual([]);
      expect(ledger.integrity).toBe('ok');
      expectNoSecrets('outage', [result], ledgerPath);
      expectPrivateLedger('outage', ledgerPath);
    } finally {
      if (result === undefined) child.kill('SIGKILL');
      await done;
    }
  }, 300_000);
});
