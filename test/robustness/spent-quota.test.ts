/**
 * A partner that refuses every quote with 429, as APIs do once a key's quota is spent (README, "When
 * the partner goes down"): the run halts with exit 3 once it has refused everything for
 * --max-outage, spends few requests meanwhile (the circuit breaker's probes), gives no row up as
 * `failed`, and a later run sends the rows once the partner takes them again. One loopback test per
 * kind of `Retry-After` (none, unreadable, 0), run side by side: each waits out its 30 s.
 */
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxHandle } from '../../src/sandbox/index.js';
import { runCli } from '../helpers/cli.js';
import { startMisbehavingPartner, type Behaviour, type MisbehavingPartner } from '../helpers/misbehaving-partner.js';
import { makeTempDir, type TempDir } from '../helpers/temp-dir.js';
import { generateLeads, MAPPING_CSV, readLedger } from '../pipeline/_setup.js';
import { CANARY_KEY, expectedStateOf, expectNoSecrets, startCanarySandbox } from './_shared.js';

const ROWS = 200;
const MESSAGE = /the partner has refused every request with 429 since \d\d:\d\d \((?:2\d|3\d)s; quotes\/leads\): its quota for this key may be spent; run again later/;

describe.concurrent('a partner that answers 429 to every quote (a spent quota)', () => {
  const opened: { sandbox: SandboxHandle; partner: MisbehavingPartner; tmp: TempDir }[] = [];
  let files: TempDir;
  let csv: string;
  let agents: string;

  beforeAll(() => {
    files = makeTempDir('quote-batch-quota-');
    ({ csv, agents } = generateLeads(files.dir, ROWS, 53));
  });
  afterAll(async () => {
    for (const { sandbox, partner, tmp } of opened) {
      await partner.close();
      await sandbox.close();
      tmp.cleanup();
    }
    files.cleanup();
  });

  it.each([
    ['no Retry-After', undefined, []],
    ['an unreadable Retry-After', 'tomorrow-ish', []],
    ['Retry-After: 0', '0', ['--json-log']],
  ] as const)('%s: exit 3 within a minute, at most 60 quote requests, no row failed; the next run sends them', async (_name, retryAfter, extra) => {
    const sandbox = await startCanarySandbox({}, 7, agents);
    const headers: Record<string, string> = retryAfter === undefined ? {} : { 'retry-after': retryAfter };
    const partner = await startMisbehavingPartner(sandbox.url, (r): Behaviour => (r.operation === 'quote'
      ? { kind: 'answer', status: 429, body: '{"message":"daily quota exceeded"}', headers }
      : { kind: 'forward' }));
    const tmp = makeTempDir('quote-batch-quota-run-');
    opened.push({ sandbox, partner, tmp });
    const ledger = tmp.path('quota.db');
    const args = ['run', csv, '--mapping', MAPPING_CSV, '--base-url', partner.url, '--env', 'sandbox', '--ledger', ledger];

    const started = Date.now();
    const result = await runCli([...args, '--max-outage', '30s', ...extra], { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: CANARY_KEY }, timeoutMs: 90_000 });
    const took = Date.now() - started;
    expect(result.code, result.stderr).toBe(3);
    expect(took).toBeLessThan(60_000);
    expect(took).toBeGreaterThanOrEqual(30_000); // it waited --max-outage, counted from the first refusal
    expect(partner.received.quote).toBeGreaterThan(0);
    expect(partner.received.quote).toBeLessThanOrEqual(60);
    expect(result.stdout).toMatch(new RegExp(`exit 3: job not completed: ${MESSAGE.source}`));
    if (extra.length === 0) {
      expect(result.stderr).toMatch(/warning: the partner refuses every request \(its quota for this key may be spent\) \(quotes\/leads\): \d+ requests in a row refused with 429 over \d+ s, none accepted/);
      expect(result.stderr).toMatch(new RegExp(`error: halting: ${MESSAGE.source}`));
    } else {
      const lines = result.stderr.trimEnd().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(lines.find((l) => l.event === 'halt')).toMatchObject({
        level: 'error', code: 'E_RATE_LIMITED', exit_code: 3, msg: expect.stringMatching(MESSAGE), hint: expect.stringMatching(/quota is renewed/), refused_since: expect.any(String),
      });
      expect(lines.find((l) => l.event === 'breaker_open')).toMatchObject({ level: 'warn', cause: 'refusals', operation: 'submit' });
    }
    const view = readLedger(ledger);
    expect(view.runs.at(-1)?.status).toBe('halted');
    // Rows not given up stay pending: refusals of a partner that takes nothing use no attempts up.
    expect(view.states.failed ?? 0).toBe(0);
    expect(view.states.in_doubt ?? 0).toBe(0);
    expect(view.states.pending ?? 0).toBeGreaterThan(0);
    const db = new Database(ledger, { readonly: true, fileMustExist: true });
    const refused = (db.prepare("SELECT COUNT(*) AS n FROM attempts WHERE kind = 'quote' AND http_status = 429").get() as { n: number }).n;
    db.close();
    expect(refused).toBe(partner.received.quote);
    expectNoSecrets('spent quota', [result], ledger);

    // The quota renewed: the same command resumes and sends each lead once.
    partner.setScript(() => ({ kind: 'forward' }));
    const again = await runCli(args, { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: CANARY_KEY }, timeoutMs: 90_000 });
    expect(again.code, again.stderr).toBe(1); // the generated file holds rows to fix
    for (const row of readLedger(ledger).rows) expect(`${row.row_number}:${row.state}`).toBe(`${row.row_number}:${expectedStateOf(row.row_number)}`);
    expect(partner.duplicateLeads()).toEqual([]);
  }, 150_000);
});
