/**
 * Fault suite (issue item 4), without the long outage (see outage.test.ts): the sandbox answers
 * 5xx, throttles with Retry-After, resets connections before and after processing, and hangs.
 * The run must end with every row either in a final state or, when its answer was lost after the
 * body was sent, `in_doubt` (never resent blindly: the README's outcomes); no lead twice; attempts bounded
 * and every one of them recorded; every Retry-After waited out.
 */
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SandboxHandle } from '../../src/sandbox/index.js';
import { runCli, type CliResult } from '../helpers/cli.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { generateLeads, MAPPING_CSV, readLedger } from '../pipeline/_setup.js';
import {
  CANARY_KEY, expectedStateOf, expectNoSecrets, expectPrivateLedger, startCanarySandbox,
} from './_shared.js';

interface AttemptRow {
  row_number: number | null;
  run_id: number;
  kind: string;
  started_at: string;
  duration_ms: number;
  http_status: number | null;
  error_code: string | null;
  outcome: string;
}

function readAttempts(ledgerPath: string): AttemptRow[] {
  const db = new Database(ledgerPath, { readonly: true, fileMustExist: true });
  try {
    return db.prepare('SELECT row_number, run_id, kind, started_at, duration_ms, http_status, error_code, outcome FROM attempts ORDER BY id').all() as AttemptRow[];
  } finally {
    db.close();
  }
}

function readRowErrors(ledgerPath: string, state: string): { row_number: number; error_code: string | null; attempts: number }[] {
  const db = new Database(ledgerPath, { readonly: true, fileMustExist: true });
  try {
    return db.prepare('SELECT row_number, error_code, attempts FROM rows WHERE state = ? ORDER BY row_number').all(state) as { row_number: number; error_code: string | null; attempts: number }[];
  } finally {
    db.close();
  }
}

/**
 * For every quote attempt answered 429, the gap until the same row's next attempt, in ms,
 * measured from the start or the end of the 429 attempt. Attempts of a row are in one call, so in id order.
 */
function gapsAfter429(attempts: readonly AttemptRow[], from: 'start' | 'end'): number[] {
  const gaps: number[] = [];
  const byCall = new Map<string, AttemptRow[]>();
  for (const a of attempts) {
    if (a.kind === 'agent_validate') continue; // agent calls are shared by rows: no per-row order
    const key = `${a.run_id}/${a.row_number ?? '-'}`;
    const list = byCall.get(key) ?? [];
    list.push(a);
    byCall.set(key, list);
  }
  for (const list of byCall.values()) {
    for (let i = 0; i + 1 < list.length; i += 1) {
      const a = list[i]!;
      if (a.http_status !== 429) continue;
      const next = list[i + 1]!;
      gaps.push(Date.parse(next.started_at) - Date.parse(a.started_at) - (from === 'end' ? a.duration_ms : 0));
    }
  }
  return gaps;
}

describe('faults', () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let sandbox: SandboxHandle | undefined;
  let csv: string;
  let agents: string;

  beforeEach(() => {
    tmp = makeTempDir('quote-batch-faults-');
    ({ csv, agents } = generateLeads(tmp.dir, 600, 23));
  });
  afterEach(async () => {
    await sandbox?.close();
    sandbox = undefined;
    tmp.cleanup();
  });

  const run = (ledgerPath: string, extra: string[] = []): Promise<CliResult> =>
    runCli(
      ['run', csv, '--mapping', MAPPING_CSV, '--base-url', sandbox!.url, '--env', 'sandbox', '--ledger', ledgerPath, '--concurrency', '8', '--json-log', ...extra],
      { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: CANARY_KEY }, timeoutMs: 150_000 },
    );

  it('20% 5xx, 5% 429, resets before and after the body, hangs: every answerable row ends final, no lead twice', async () => {
    sandbox = await startCanarySandbox({
      latencyMs: 2, jitterMs: 3, failRate: 0.2, throttleRate: 0.05, retryAfterSeconds: 1,
      resetBeforeRate: 0.02, resetAfterRate: 0.02, hangRate: 0.01,
    }, 4242, agents);
    const ledgerPath = tmp.path('faults.db');
    const maxAttempts = 5;
    const results: CliResult[] = [];
    // A row whose 5 attempts all met a fault ends `failed` and is resent by the next run: bounded.
    for (let i = 0; i < 3; i += 1) {
      const result = await run(ledgerPath, ['--timeout', '3000', '--max-attempts', String(maxAttempts)]);
      results.push(result);
      expect(result.stderr).not.toMatch(/internal error/);
      expect([1, 3]).toContain(result.code);
      const states = readLedger(ledgerPath).states;
      if ((states.failed ?? 0) + (states.pending ?? 0) === 0) break;
    }
    const ledger = readLedger(ledgerPath);
    const stats = sandbox.stats();
    expect(ledger.integrity).toBe('ok');
    expect(ledger.rows).toHaveLength(600);
    // Every row is final or in doubt; a final row is in the state its data calls for.
    for (const row of ledger.rows) {
      if (row.state !== 'in_doubt') expect(`${row.row_number}:${row.state}`).toBe(`${row.row_number}:${expectedStateOf(row.row_number)}`);
    }
    expect(ledger.states.failed ?? 0).toBe(0);
    expect(ledger.states.pending ?? 0).toBe(0);

    // Faults were really injected, and every request the sandbox saw is an attempt in the ledger.
    expect(stats.faults.failed500 + stats.faults.failed503).toBeGreaterThan(50);
    expect(stats.faults.throttled).toBeGreaterThan(5);
    expect(stats.faults.resetBefore).toBeGreaterThan(0);
    expect(stats.faults.resetAfter).toBeGreaterThan(0);
    expect(stats.faults.hung).toBeGreaterThan(0);
    const attempts = readAttempts(ledgerPath);
    expect(attempts.filter((a) => a.kind === 'quote')).toHaveLength(stats.operations.quote.received);
    expect(attempts.filter((a) => a.kind === 'agent_validate')).toHaveLength(stats.operations.validate.received);

    // A lost answer (reset or hang, before or after processing: after the whole body was sent the
    // client cannot tell) makes a quote row in_doubt; a validation call is a read and is retried.
    const lost = attempts.filter((a) => a.http_status === null);
    expect(lost).toHaveLength(stats.faults.resetBefore + stats.faults.resetAfter + stats.faults.hung);
    const lostQuotes = lost.filter((a) => a.kind === 'quote');
    const inDoubt = readRowErrors(ledgerPath, 'in_doubt');
    expect(inDoubt.map((r) => r.row_number)).toEqual(lostQuotes.map((a) => a.row_number).sort((x, y) => (x ?? 0) - (y ?? 0)));
    for (const a of lostQuotes) expect(a.outcome).toBe('in_doubt');
    expect(inDoubt.length).toBeGreaterThan(0);
    // Nothing was resent after the body left: no lead reached the partner twice.
    expect(stats.duplicateLeads).toEqual([]);

    // Retries bounded: per row and run, at most --max-attempts quote attempts.
    const perCall = new Map<string, number>();
    for (const a of attempts) if (a.kind === 'quote') perCall.set(`${a.run_id}/${a.row_number}`, (perCall.get(`${a.run_id}/${a.row_number}`) ?? 0) + 1);
    expect(Math.max(...perCall.values())).toBeLessThanOrEqual(maxAttempts);
    // Retry-After honoured: after a 429 the same row waited at least the second it was told.
    const gaps = gapsAfter429(attempts, 'end');
    expect(gaps.length).toBeGreaterThan(0);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(1000 - 2); // ms rounding of started_at/duration_ms

    // Once the partner behaves, --resend-in-doubt completes every row; only those leads may be seen twice.
    sandbox.setFaults({ failRate: 0, throttleRate: 0, resetBeforeRate: 0, resetAfterRate: 0, hangRate: 0 });
    const resend = await run(ledgerPath, ['--resend-in-doubt']);
    results.push(resend);
    expect(resend.code).toBe(1);
    const final = readLedger(ledgerPath);
    for (const row of final.rows) expect(`${row.row_number}:${row.state}`).toBe(`${row.row_number}:${expectedStateOf(row.row_number)}`);
    const inDoubtKeys = new Set(final.rows.filter((r) => inDoubt.some((d) => d.row_number === r.row_number)).map((r) => r.row_key));
    expect(sandbox.stats().duplicateLeads.filter((k) => !inDoubtKeys.has(k))).toEqual([]);
    expectNoSecrets('faults', results, ledgerPath);
    expectPrivateLedger('faults', ledgerPath);
  }, 300_000);

  it('after --fresh, a plain run goes by the newest job: an older unfinished one is not resumed (no lead sent again)', async () => {
    sandbox = await startCanarySandbox({}, 5, agents);
    const ledgerPath = tmp.path('fresh.db');
    const first = await run(ledgerPath, ['--limit', '100']);
    expect(first.code).toBe(3); // job 1 left unfinished
    const fresh = await run(ledgerPath, ['--fresh']);
    expect(fresh.code).toBe(1); // job 2 completed (the file's deliberate data rows)
    const received = sandbox.stats().operations.quote.received;
    const again = await run(ledgerPath);
    expect(again.stderr).toMatch(/job 2 already completed/);
    expect(again.code).toBe(1);
    expect(sandbox.stats().operations.quote.received).toBe(received); // job 1's 500 unread rows not sent again
    const jobs = new Database(ledgerPath, { readonly: true });
    try {
      expect(jobs.prepare('SELECT id, status FROM jobs ORDER BY id').all()).toEqual([
        { id: 1, status: 'interrupted' },
        { id: 2, status: 'completed' },
      ]);
    } finally {
      jobs.close();
    }
  }, 180_000);

  it('waits out Retry-After given as an HTTP date', async () => {
    sandbox = await startCanarySandbox({ throttleRate: 0.1, retryAfterSeconds: 1, retryAfterFormat: 'http-date' }, 99, agents);
    const ledgerPath = tmp.path('date.db');
    const result = await run(ledgerPath, ['--limit', '100', '--max-attempts', '10']);
    expect(result.stderr).not.toMatch(/internal error/);
    expect(result.code).toBe(3); // --limit: the job is not complete, but every row read is final
    const ledger = readLedger(ledgerPath);
    expect(ledger.rows).toHaveLength(100);
    for (const row of ledger.rows) expect(`${row.row_number}:${row.state}`).toBe(`${row.row_number}:${expectedStateOf(row.row_number)}`);
    expect(sandbox.stats().faults.throttled).toBeGreaterThan(3);
    const attempts = readAttempts(ledgerPath);
    const gaps = gapsAfter429(attempts, 'start');
    expect(gaps.length).toBeGreaterThan(0);
    // The sandbox dates its answer at least 1 s after the request arrived (rounded up to a whole
    // second), so the next attempt starts at least a second after the throttled one started.
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(1000 - 2);
    expect(sandbox.stats().duplicateLeads).toEqual([]);
    expectNoSecrets('retry-after date', [result], ledgerPath);
    expectPrivateLedger('retry-after date', ledgerPath);
  }, 180_000);
});
