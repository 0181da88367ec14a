/**
 * Contract §5's answer table over real loopback HTTP, one row at a time, for quote and for agent
 * validation: the real CLI runs a generated lead file against a misbehaving partner of the suite's
 * own (test/helpers/misbehaving-partner.ts, a proxy in front of a real sandbox). Each class must end
 * in the state and exit code the table gives, no lead may reach the partner twice (also after the
 * partner recovers and the job is run again), and nothing may follow a redirect.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxHandle } from '../../src/sandbox/index.js';
import { runCli, type CliResult } from '../helpers/cli.js';
import { startMisbehavingPartner, type Behaviour, type MisbehavingPartner, type RequestInfo } from '../helpers/misbehaving-partner.js';
import { makeTempDir, type TempDir } from '../helpers/temp-dir.js';
import { generateLeads, MAPPING_CSV, readLedger, SAMPLE_CSV } from '../pipeline/_setup.js';
import { CANARY_KEY, expectedStateOf, expectNoSecrets, startCanarySandbox } from './_shared.js';

const ROWS = 30;
/** Rows of the generated file that are sent (the others are invalid, duplicates or blocked agents). */
const SENT_STATES = new Set(['succeeded', 'rejected']);

let files: TempDir;
let csv: string;
let sandbox: SandboxHandle;
let partner: MisbehavingPartner | undefined;
let trap: { server: Server; url: string; hits: number };
let tmp: TempDir;
let runs = 0;

beforeAll(async () => {
  files = makeTempDir('quote-batch-answers-');
  const generated = generateLeads(files.dir, ROWS, 41);
  csv = generated.csv;
  sandbox = await startCanarySandbox({}, 7, generated.agents);
  // Where redirects point: it must never be reached.
  const server = createServer((_req, res) => {
    trap.hits += 1;
    res.end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  trap = { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits: 0 };
});

afterAll(async () => {
  await sandbox.close();
  await new Promise<void>((resolve) => trap.server.close(() => resolve()));
  files.cleanup();
});

afterEach(async () => {
  await partner?.close();
  partner = undefined;
  tmp?.cleanup();
});

/** A fresh partner (proxy) and ledger for one test. */
async function setUp(script: (request: RequestInfo) => Behaviour): Promise<{ ledger: string }> {
  tmp = makeTempDir('quote-batch-answers-run-');
  sandbox.reset();
  trap.hits = 0;
  partner = await startMisbehavingPartner(sandbox.url, script);
  return { ledger: tmp.path(`run-${(runs += 1)}.db`) };
}

function run(ledger: string, extra: readonly string[] = []): Promise<CliResult> {
  if (partner === undefined) throw new Error('no partner');
  return runCli(
    ['run', csv, '--mapping', MAPPING_CSV, '--base-url', partner.url, '--env', 'sandbox', '--ledger', ledger, '--quiet', '--concurrency', '1', ...extra],
    { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: CANARY_KEY }, timeoutMs: 90_000 },
  );
}

interface Row {
  row_number: number;
  state: string;
  error_code: string | null;
  error_message: string | null;
  http_status: number | null;
  input_issues_json: string | null;
  row_key: string | null;
}

function rows(ledger: string): Row[] {
  const db = new Database(ledger, { readonly: true, fileMustExist: true });
  try {
    return db.prepare('SELECT row_number, state, error_code, error_message, http_status, input_issues_json, row_key FROM rows ORDER BY row_number').all() as Row[];
  } finally {
    db.close();
  }
}

/** The rows whose quote is sent. */
const sentRows = Array.from({ length: ROWS }, (_, i) => i + 1).filter((n) => SENT_STATES.has(expectedStateOf(n)));

/** The ledger's rows by row key (a lead's key is its row key), to find what became of a request the partner saw. */
function rowsByKey(ledger: string): Map<string, Row> {
  return new Map(rows(ledger).map((r) => [r.row_key ?? '', r]));
}

/**
 * Gives each of the first distinct leads of a script its own behaviour (by arrival order), and
 * remembers which lead got which: assertions then go by key, whatever the order rows were sent in.
 */
function byFirstLeads(behaviours: readonly Behaviour[]): { script: (r: RequestInfo) => Behaviour; keys: string[] } {
  const keys: string[] = [];
  return {
    keys,
    script: (r) => {
      if (r.operation !== 'quote' || r.leadKey === undefined) return { kind: 'forward' };
      let i = keys.indexOf(r.leadKey);
      if (i < 0 && keys.length < behaviours.length) i = keys.push(r.leadKey) - 1;
      return i < 0 ? { kind: 'forward' } : (behaviours[i] as Behaviour);
    },
  };
}

/** After the partner recovers: the job completes, every row in its expected state, no lead twice. */
async function expectRecovery(ledger: string): Promise<void> {
  if (partner === undefined) throw new Error('no partner');
  partner.setScript(() => ({ kind: 'forward' }));
  const again = await run(ledger);
  expect(again.stderr).not.toMatch(/internal error/);
  expect(again.code).toBe(1); // the generated file holds rows to fix
  for (const row of rows(ledger)) expect(`${row.row_number}:${row.state}`).toBe(`${row.row_number}:${expectedStateOf(row.row_number)}`);
  expect(partner.duplicateLeads()).toEqual([]);
  expect(sandbox.stats().duplicateLeads).toEqual([]);
  expect(readLedger(ledger).jobs.at(-1)?.status).toBe('completed');
}

describe('quote answers (README, "Outcomes, resume and the ledger")', () => {
  it('2xx: success, an unreadable body (succeeded, with a warning), status failed/error (rejected with the message)', async () => {
    const { script, keys } = byFirstLeads([
      { kind: 'forward-then-answer', status: 200, body: '<html><body>OK</body></html>', headers: { 'content-type': 'text/html' } },
      { kind: 'forward-then-answer', status: 200, body: '{"status":"failed","message":"Lead refused by the rules engine","error_code":"rules_refused"}' },
      { kind: 'forward-then-answer', status: 201, body: '{"status":"error","message":"Duplicate lead"}' },
      { kind: 'forward-then-answer', status: 200, body: '' },
    ]);
    const { ledger } = await setUp(script);
    const result = await run(ledger, ['--json-log']);
    expect(result.code).toBe(1);
    // Not silently: the two succeeded rows whose answer could not be read are counted, at warn level too.
    const seeThem = `quote-batch export --ledger ${ledger} --job 1 --status succeeded`;
    expect(result.stdout.replace(/\s+/g, ' ')).toContain(`Of the succeeded rows, 2 got an answer that could not be read (empty, not JSON, or cut): the partner took them, but no quote number or premium was recorded; check them with the partner: ${seeThem} lists them`);
    const warn = result.stderr.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>).find((line) => line.event === 'unreadable_answers');
    expect(warn).toMatchObject({ level: 'warn', rows: 2, job: 1 });
    const summary = result.stderr.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>).find((line) => line.event === 'summary');
    expect(summary).toMatchObject({ unreadable_answers: 2 });
    const report = await runCli(['report', '--ledger', ledger, '--format', 'json'], { cwd: tmp.dir, timeoutMs: 30_000 });
    expect((JSON.parse(report.stdout) as { rows: { unreadable_answers: number } }).rows.unreadable_answers).toBe(2);
    const table = await runCli(['report', '--ledger', ledger], { cwd: tmp.dir, timeoutMs: 30_000 });
    expect(table.stdout.replace(/\s+/g, ' ')).toContain(`of succeeded, 2 got an answer that could not be read`);
    const byKey = rowsByKey(ledger);
    const [unreadable, failed, errored, empty] = keys.map((k) => byKey.get(k));
    expect(unreadable).toMatchObject({ state: 'succeeded', http_status: 200 });
    expect(unreadable?.input_issues_json).toMatch(/unreadable_answer/);
    expect(empty).toMatchObject({ state: 'succeeded' });
    expect(empty?.input_issues_json).toMatch(/unreadable_answer/);
    expect(failed).toMatchObject({ state: 'rejected', error_code: 'rules_refused', error_message: 'Lead refused by the rules engine' });
    expect(errored).toMatchObject({ state: 'rejected', error_code: 'answer_error', error_message: 'Duplicate lead' });
    expect(partner?.duplicateLeads()).toEqual([]);
    expect(readLedger(ledger).jobs[0]?.status).toBe('completed');
  });

  it('400, 409, 413, 422 and another 4xx: rejected, the run goes on and completes (exit 1)', async () => {
    const statuses = [400, 409, 413, 422, 418];
    const { script, keys } = byFirstLeads(statuses.map((status) => ({ kind: 'answer', status, body: `{"status":"failed","message":"refused with ${status}"}` })));
    const { ledger } = await setUp(script);
    const result = await run(ledger);
    expect(result.code).toBe(1);
    const byKey = rowsByKey(ledger);
    statuses.forEach((status, i) => expect(byKey.get(keys[i] ?? '')).toMatchObject({ state: 'rejected', http_status: status }));
    expect(partner?.received.quote).toBe(sentRows.length);
    expect(readLedger(ledger).jobs[0]?.status).toBe('completed');
  });

  it.each([
    [401, {}], [403, {}], [404, {}], [405, { allow: 'GET' }], [301, {}], [302, {}], [307, {}], [308, {}],
  ] as const)('%i: the row stays pending, the run halts at once (exit 3), nothing follows a redirect; a later run completes', async (status, headers) => {
    const location: Record<string, string> = status >= 300 && status < 400 ? { location: `${trap.url}/partner/v2/policy/quote` } : {};
    let refused: string | undefined;
    const { ledger } = await setUp((r): Behaviour => {
      if (r.operation !== 'quote' || r.n !== 3) return { kind: 'forward' };
      refused = r.leadKey;
      return { kind: 'answer', status, body: status === 403 ? '{"message":"Forbidden"}' : '<html>gateway</html>', headers: { ...headers, ...location } };
    });
    const result = await run(ledger);
    expect(result.code).toBe(3);
    expect(result.stderr).toMatch(/error: halting: the partner (refused the API key|answered \d{3})/);
    expect(partner?.received.quote).toBe(3);
    expect(trap.hits).toBe(0);
    const byKey = rowsByKey(ledger);
    expect(byKey.get(refused ?? '')).toMatchObject({ state: 'pending', http_status: status });
    expect(readLedger(ledger).states.succeeded).toBe(2); // the two quotes answered before
    expect([...byKey.values()].filter((r) => r.state === 'rejected')).toEqual([]);
    expect(readLedger(ledger).runs.at(-1)?.status).toBe('halted');
    await expectRecovery(ledger);
  });

  it('a key revoked mid-run: the first rows succeed, the rest stay pending, and the next run sends only those', async () => {
    const { ledger } = await setUp((r) => (r.operation === 'quote' && r.n >= 6 ? { kind: 'answer', status: 403, body: '{"message":"Forbidden"}' } : { kind: 'forward' }));
    const result = await run(ledger);
    expect(result.code).toBe(3);
    expect(result.stdout).toMatch(/exit 3: job not completed: the partner refused the API key/);
    const states = readLedger(ledger).states;
    expect(states.succeeded).toBe(5);
    expect(states.rejected ?? 0).toBe(0);
    await expectRecovery(ledger);
    expect(partner?.received.quote).toBe(sentRows.length + 1); // the refused one, then each lead once
  });

  it('429, 500, 502, 503, 504: retried (honouring Retry-After), then the row succeeds', async () => {
    const statuses = [429, 500, 502, 503, 504];
    const firstTry = new Set<string>();
    const { ledger } = await setUp((r): Behaviour => {
      if (r.operation !== 'quote') return { kind: 'forward' };
      const i = firstTry.size;
      if (i < statuses.length && !firstTry.has(r.body)) {
        firstTry.add(r.body);
        const status = statuses[i] as number;
        return { kind: 'answer', status, body: '{"status":"failed","message":"try later"}', headers: status === 429 ? { 'retry-after': '1' } : {} };
      }
      return { kind: 'forward' };
    });
    const result = await run(ledger, ['--max-attempts', '3']);
    expect(result.code).toBe(1);
    const db = new Database(ledger, { readonly: true, fileMustExist: true });
    const retried = db.prepare("SELECT http_status FROM attempts WHERE kind = 'quote' AND http_status != 200 AND http_status != 400 ORDER BY id").all() as { http_status: number }[];
    db.close();
    expect(retried.map((a) => a.http_status).sort()).toEqual([...statuses].sort());
    expect(partner?.duplicateLeads()).toEqual([]);
    for (const row of rows(ledger)) expect(row.state).toBe(expectedStateOf(row.row_number));
  });

  it('a 429 with Retry-After delays only its own request: with every sender throttled once, the others keep going', async () => {
    const arrivals: number[] = [];
    const throttled = new Set<string>();
    const { ledger } = await setUp((r): Behaviour => {
      if (r.operation !== 'quote') return { kind: 'forward' };
      arrivals.push(performance.now());
      if (throttled.size < 2 && !throttled.has(r.body)) {
        throttled.add(r.body);
        return { kind: 'answer', status: 429, body: '{"message":"slow down"}', headers: { 'retry-after': '4' } };
      }
      return { kind: 'forward' };
    });
    const result = await run(ledger, ['--concurrency', '2', '--no-adaptive']);
    expect(result.code).toBe(1);
    // The two throttled requests wait 4 s; the third request must not.
    expect((arrivals[2] ?? 0) - (arrivals[0] ?? 0)).toBeLessThan(2000);
    for (const row of rows(ledger)) expect(row.state).toBe(expectedStateOf(row.row_number));
    expect(partner?.duplicateLeads()).toEqual([]);
  });

  it('retryable failures that outlast the attempts leave the row failed (exit 3); the next run sends it again', async () => {
    const failing = new Set<string>();
    const { ledger } = await setUp((r) => {
      if (r.operation !== 'quote') return { kind: 'forward' };
      const key = /"click_id":"([^"]+)"/.exec(r.body)?.[1] ?? '';
      if (failing.size < 3 && !failing.has(key) && r.n % 4 === 0) failing.add(key);
      return failing.has(key) ? { kind: 'answer', status: 503, body: '{"message":"busy"}' } : { kind: 'forward' };
    });
    const result = await run(ledger, ['--max-attempts', '2']);
    expect(result.code).toBe(3);
    expect(readLedger(ledger).states.failed).toBe(3);
    for (const row of rows(ledger).filter((r) => r.state === 'failed')) expect(row).toMatchObject({ http_status: 503 });
    await expectRecovery(ledger);
  });

  // The last two from broken gateways (-1 as an unsigned 64-bit number; the latest date there is): read as 100 years, not a crash.
  it.each(['36000', 'Fri, 31 Dec 2100 23:59:59 GMT', '18446744073709551615', 'Sat, 13 Sep 275760 00:00:00 GMT'])('a Retry-After of %s, over --max-retry-after, halts with the time to come back', async (retryAfter) => {
    const { script, keys } = byFirstLeads([{ kind: 'forward' }, { kind: 'answer', status: 429, body: '{"message":"slow down"}', headers: { 'retry-after': retryAfter } }]);
    const { ledger } = await setUp(script);
    const started = Date.now();
    const result = await run(ledger);
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(result.code).toBe(3);
    expect(result.stdout).toMatch(/job not completed: the partner asks to wait \d+[dh]\d\d[hm] \(Retry-After, over --max-retry-after 5m00s\); run again after \d{4}-\d\d-\d\dT/);
    expect(partner?.received.quote).toBe(2);
    expect(rowsByKey(ledger).get(keys[1] ?? '')?.state).toBe('pending');
    // Run again at once (a wrapper that retries on exit 3): the partner is not called before its time.
    const validatesBefore = partner?.received.validate;
    const early = await run(ledger);
    expect(early.code).toBe(3);
    expect(early.stdout).toMatch(/\nstopped {6}the partner asked run 1 \(job 1\) to wait until \d{4}-\d\d-\d\dT[\d:.]+Z, \d+[dh]\d\d[hm] from now \(over --max-retry-after 5m00s\): nothing sent; run again after /);
    expect(partner?.received.quote).toBe(2);
    expect(partner?.received.validate).toBe(validatesBefore);
    // Once that time has passed (moved back here), the job completes.
    const db = new Database(ledger);
    db.prepare(`UPDATE runs SET retry_after_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-1 second') WHERE retry_after_at IS NOT NULL`).run();
    db.close();
    await expectRecovery(ledger);
  });

  it('a run started again before a Retry-After that halted the last one is over waits for it, then sends', async () => {
    const arrivals: number[] = [];
    let refused = false;
    const { ledger } = await setUp((r): Behaviour => {
      if (r.operation !== 'quote') return { kind: 'forward' };
      arrivals.push(Date.now());
      if (refused) return { kind: 'forward' };
      refused = true;
      return { kind: 'answer', status: 429, body: '{"message":"slow down"}', headers: { 'retry-after': '4' } };
    });
    const first = await run(ledger, ['--max-retry-after', '1s']);
    expect(first.code).toBe(3);
    const until = Date.parse(/run again after (\S+Z)/.exec(first.stdout)?.[1] ?? '');
    expect(until).toBeGreaterThan(Date.now());
    arrivals.length = 0;
    const second = await run(ledger, ['--max-retry-after', '1m']);
    expect(second.stderr).toMatch(/warning: the partner asked run 1 \(job 1\) to wait until \S+Z: no request leaves before then/);
    expect(second.code).toBe(1);
    expect(arrivals.length).toBeGreaterThan(0);
    expect(Math.min(...arrivals)).toBeGreaterThanOrEqual(until);
    for (const row of rows(ledger)) expect(`${row.row_number}:${row.state}`).toBe(`${row.row_number}:${expectedStateOf(row.row_number)}`);
    expect(partner?.duplicateLeads()).toEqual([]);
  });

  it('odd Retry-After values (negative, fractional, words, empty) are read as none: retried after a back-off', async () => {
    const odd = ['-1', '1.5', 'soon', ''];
    const throttled = new Set<string>();
    const { ledger } = await setUp((r): Behaviour => {
      if (r.operation !== 'quote' || throttled.size >= odd.length || throttled.has(r.body)) return { kind: 'forward' };
      throttled.add(r.body);
      return { kind: 'answer', status: 429, body: '', headers: { 'retry-after': odd[throttled.size - 1] ?? '' } };
    });
    const result = await run(ledger, ['--max-attempts', '3']);
    expect(result.code).toBe(1);
    for (const row of rows(ledger)) expect(row.state).toBe(expectedStateOf(row.row_number));
  });

  it.each([
    ['a reset after the body was sent', { kind: 'forward-then', then: 'reset' } as const, 'ECONNRESET'],
    ['a time-out after the body was sent', { kind: 'forward-then', then: 'hang' } as const, 'ETIMEDOUT'],
  ])('%s (no status line): in_doubt, never resent blindly', async (_name, behaviour, code) => {
    const { script, keys } = byFirstLeads([{ kind: 'forward' }, behaviour]);
    const { ledger } = await setUp(script);
    const result = await run(ledger, ['--timeout', '1500']);
    expect(result.code).toBe(3);
    const doubtful = rows(ledger).filter((r) => r.state === 'in_doubt');
    expect(doubtful.map((r) => r.row_key)).toEqual([keys[1]]);
    expect(doubtful[0]?.error_code).toBe(code);
    const again = await run(ledger);
    expect(again.code).toBe(3);
    expect(partner?.received.quote).toBe(sentRows.length);
    expect(partner?.duplicateLeads()).toEqual([]);
  });

  it('an answer cut short after its status line (200): succeeded with the unreadable-answer warning, not in doubt', async () => {
    const { script, keys } = byFirstLeads([{ kind: 'forward' }, { kind: 'forward-then', then: 'cut' }]);
    const { ledger } = await setUp(script);
    const result = await run(ledger, ['--timeout', '1500']);
    expect(result.code, result.stderr).toBe(1);
    const cut = rowsByKey(ledger).get(keys[1] ?? '');
    expect(cut).toMatchObject({ state: 'succeeded', http_status: 200 });
    expect(JSON.parse(cut?.input_issues_json ?? '[]')).toEqual([
      { severity: 'warning', type: 'unreadable_answer', message: 'the partner answered 200, but the body was cut short after the headers (ECONNRESET): recorded as succeeded without its details' },
    ]);
    expect(rows(ledger).filter((r) => r.state === 'in_doubt')).toEqual([]);
    expect(partner?.received.quote).toBe(sentRows.length);
    expect(partner?.duplicateLeads()).toEqual([]);
  });
});

describe('agent validation answers (README, "Outcomes, resume and the ledger")', () => {
  it('a 200 that is not a readable result (not JSON, status error, no data) is retried, never stored as "not valid"', async () => {
    const bad = ['<html>maintenance</html>', '{"status":"error","message":"upstream timeout","data":{"is_valid":false}}', '{"status":"success","message":"ok"}'];
    const { ledger } = await setUp((r) => {
      const body = r.operation === 'validate' && r.n <= bad.length ? bad[r.n - 1] : undefined;
      return body === undefined ? { kind: 'forward' } : { kind: 'answer', status: 200, body };
    });
    const result = await run(ledger, ['--max-attempts', '5']);
    expect(result.code).toBe(1);
    for (const row of rows(ledger)) expect(row.state).toBe(expectedStateOf(row.row_number));
    const db = new Database(ledger, { readonly: true, fileMustExist: true });
    const agents = db.prepare('SELECT email, is_valid, message FROM agents').all() as { email: string; is_valid: number; message: string }[];
    db.close();
    expect(agents.map((a) => a.message)).not.toContain('upstream timeout');
    expect(agents.filter((a) => a.is_valid === 0).every((a) => /not match|not found/.test(a.message))).toBe(true);
  });

  it('an agent whose answers stay unreadable: its rows are failed (retried next run), not agent_invalid; a healthy partner then quotes them', async () => {
    const { ledger } = await setUp((r) => (r.operation === 'validate' ? { kind: 'answer', status: 200, body: '{"status":"success","message":"ok"}' } : { kind: 'forward' }));
    const result = await run(ledger, ['--max-attempts', '2', '--max-consecutive-failures', '1000']);
    expect(result.code).toBe(3);
    const states = readLedger(ledger).states;
    expect(states.agent_invalid ?? 0).toBe(0);
    expect(states.failed).toBeGreaterThan(0);
    expect(partner?.received.quote).toBe(0);
    await expectRecovery(ledger);
  });

  it('is_valid true without agent_id: valid; quotes are sent without channel.agent_id, with a warning', async () => {
    const { ledger } = await setUp((r) =>
      r.operation === 'validate' && !r.body.includes('casey.hold') && !r.body.includes('unknown')
        ? { kind: 'forward-then-answer', status: 200, body: '{"status":"success","message":"User verification success","data":{"is_valid":true}}' }
        : { kind: 'forward' },
    );
    const result = await run(ledger);
    expect(result.stderr).toMatch(/warning: an agent is valid but the partner gave no agent id/);
    const quotes = partner?.requests.filter((r) => r.operation === 'quote') ?? [];
    expect(quotes.length).toBeGreaterThan(0);
    expect(quotes.every((q) => (q.body as { channel?: { agent_id?: unknown } }).channel?.agent_id === undefined)).toBe(true);
    expect(rows(ledger).filter((r) => r.error_message === 'User verification success')).toEqual([]);
    expect(result.code).toBe(1);
  });

  it('400: the row is invalid', async () => {
    const { ledger } = await setUp((r) => (r.operation === 'validate' && r.n === 1 ? { kind: 'answer', status: 400, body: '{"status":"error","message":"email is not valid"}' } : { kind: 'forward' }));
    const result = await run(ledger);
    expect(result.code).toBe(1);
    const invalid = rows(ledger).filter((r) => r.state === 'invalid' && r.http_status === 400);
    expect(invalid.length).toBeGreaterThan(0);
    expect(invalid[0]?.error_message).toMatch(/email is not valid/);
  });

  it('a halt while the last row waits for room: the file was read to the end, so the total is the file\'s', async () => {
    // 5 rows at --concurrency 1: rows 1–4 fill the queue and row 5 waits for room when row 1's quote is refused.
    const { ledger } = await setUp((r) => (r.operation === 'quote' ? { kind: 'answer', status: 403, body: '{"message":"Forbidden"}' } : { kind: 'forward' }));
    const five = tmp.path('five.csv');
    writeFileSync(five, `${readFileSync(csv, 'utf8').split('\n').slice(0, 6).join('\n')}\n`);
    const result = await runCli(
      ['run', five, '--mapping', MAPPING_CSV, '--base-url', partner!.url, '--env', 'sandbox', '--ledger', ledger, '--quiet', '--concurrency', '1'],
      { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: CANARY_KEY }, timeoutMs: 90_000 },
    );
    expect(result.code).toBe(3);
    expect(partner?.received.quote).toBe(1);
    expect(readLedger(ledger).jobs.at(-1)?.total_rows).toBe(5);
    expect(result.stdout).toMatch(/\n {2}total +5\n/);
  });

  it.each([401, 403, 404, 405, 302])('%i: the run halts before any quote; rows stay pending; a later run completes', async (status) => {
    const headers: Record<string, string> = status === 302 ? { location: trap.url } : {};
    const { ledger } = await setUp((r): Behaviour =>
      r.operation === 'validate' ? { kind: 'answer', status, body: '{"status":"error","message":"Forbidden"}', headers } : { kind: 'forward' },
    );
    const result = await run(ledger);
    expect(result.code).toBe(3);
    // The closing advice follows the kind of halt: the key, or the address.
    expect(result.stdout).toContain(status === 401 || status === 403
      ? 'exit 3: job not completed: the partner refused the API key; fix QUOTE_BATCH_API_KEY'
      : 'exit 3: job not completed: the partner says the endpoint is wrong; check --base-url / --env');
    expect(partner?.received.quote).toBe(0);
    expect(trap.hits).toBe(0);
    // The summary counts the rows read ahead, and says the input may hold more.
    const recorded = Object.values(readLedger(ledger).states).reduce((a, b) => a + b, 0);
    expect(recorded).toBeLessThan(ROWS);
    expect(result.stdout).toMatch(new RegExp(`\\n  total +${recorded}  \\(rows read before the run stopped; the input may hold more\\)\\n`));
    // Only rows read ahead are recorded: pending, or invalid when they could not be mapped.
    expect(Object.keys(readLedger(ledger).states).filter((s) => s !== 'pending' && s !== 'invalid')).toEqual([]);
    expect(readLedger(ledger).runs.at(-1)?.status).toBe('halted');
    await expectRecovery(ledger);
  });

  it('500 and resets are retried, then the rows succeed', async () => {
    const { ledger } = await setUp((r) => {
      if (r.operation !== 'validate' || r.n > 2) return { kind: 'forward' };
      return r.n === 1 ? { kind: 'answer', status: 500, body: '{"status":"error","message":"Internal server error"}' } : { kind: 'forward-then', then: 'reset' };
    });
    const result = await run(ledger);
    expect(result.code).toBe(1);
    for (const row of rows(ledger)) expect(row.state).toBe(expectedStateOf(row.row_number));
  });
});

describe('answers whose body cannot be decoded, on the samples (README, "Outcomes, resume and the ledger")', () => {
  let samples: SandboxHandle;
  beforeAll(async () => {
    samples = await startCanarySandbox();
  });
  afterAll(async () => {
    await samples.close();
  });

  it.each([
    ['not the gzip it claims', 'gzip', 'the body is not the gzip or deflate its Content-Encoding says (Z_DATA_ERROR)'],
    ['not the deflate it claims', 'deflate', 'the body is not the gzip or deflate its Content-Encoding says (Z_DATA_ERROR)'],
    ['in a charset nobody knows', 'charset', 'its charset "x-klingon" cannot be decoded'],
  ] as const)('a 200 whose body is %s: every row sent succeeded with the warning, exit 1, no halt', async (_name, how, why) => {
    tmp = makeTempDir('quote-batch-answers-run-');
    samples.reset();
    partner = await startMisbehavingPartner(samples.url, (r) => (r.operation === 'quote' ? { kind: 'forward-then-garbled', how } : { kind: 'forward' }));
    const ledger = tmp.path('garbled.db');
    const result = await runCli(
      ['run', SAMPLE_CSV, '--mapping', MAPPING_CSV, '--base-url', partner.url, '--env', 'sandbox', '--ledger', ledger, '--quiet'],
      { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: CANARY_KEY }, timeoutMs: 90_000 },
    );
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).not.toMatch(/looks down|halting/);
    const all = rows(ledger);
    const succeeded = all.filter((r) => r.state === 'succeeded');
    expect(succeeded).toHaveLength(176); // every row the samples mean to succeed (samples/README.md)
    for (const row of succeeded) {
      expect(row.http_status).toBe(200);
      expect(JSON.parse(row.input_issues_json ?? '[]')).toEqual([
        { severity: 'warning', type: 'unreadable_answer', message: `the partner answered 200, but ${why}: recorded as succeeded without its details` },
      ]);
    }
    // The sandbox's 400s keep their class though their bodies could not be read either.
    expect(all.filter((r) => r.state === 'rejected').every((r) => r.http_status === 400)).toBe(true);
    expect(all.filter((r) => r.state === 'in_doubt' || r.state === 'failed' || r.state === 'pending')).toEqual([]);
    expect(readLedger(ledger).runs.at(-1)?.status).toBe('completed');
    expect(partner.duplicateLeads()).toEqual([]);
    expect(result.stdout.replace(/\s+/g, ' ')).toContain('Of the succeeded rows, 176 got an answer that could not be read');
  });
});

describe('the key echoed back', () => {
  it.each(['raw', 'json-escaped', 'url-encoded', 'hex-spaced', 'base64-lower-case', 'url-encoded-twice', 'html-escaped', 'utf16-hex', 'all'] as const)('%s: in no ledger byte, log line, summary, report or export', async (form) => {
    const { ledger } = await setUp((r) =>
      r.operation === 'quote' && r.n % 2 === 0
        ? { kind: 'forward-then-echo-key', form }
        : r.operation === 'validate' ? { kind: 'forward-then-echo-key', form } : { kind: 'forward' },
    );
    const result = await run(ledger);
    expect(result.code).toBe(1);
    const outputs = [result];
    for (const args of [['report', '--format', 'json'], ['report', '--format', 'html'], ['report', '--format', 'csv'], ['report'], ['export'], ['export', '--format', 'ndjson']]) {
      const out = await runCli([...args, '--ledger', ledger], { cwd: tmp.dir });
      expect(out.code, args.join(' ')).toBe(0);
      outputs.push(out);
    }
    expect(outputs.some((o) => o.stdout.includes('[redacted]'))).toBe(true);
    const encoded = [
      encodeURIComponent(CANARY_KEY).toLowerCase(),
      [...CANARY_KEY].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join(''),
      [...Buffer.from(CANARY_KEY)].map((b) => `%${b.toString(16).padStart(2, '0')}`).join(''),
      [...Buffer.from(CANARY_KEY)].map((b) => b.toString(16).padStart(2, '0').toUpperCase()).join(' '),
      Buffer.from(CANARY_KEY.toLowerCase()).toString('base64').slice(4, -4),
      encodeURIComponent([...Buffer.from(CANARY_KEY)].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('')),
      [...CANARY_KEY].map((c) => `&#${c.charCodeAt(0)};`).join(''),
      [...CANARY_KEY].map((c) => c.charCodeAt(0).toString(16).padStart(4, '0')).join(''),
    ];
    expectNoSecrets(form, outputs, ledger, encoded);
    for (const o of outputs) expect(o.stdout.toLowerCase() + o.stderr.toLowerCase()).not.toContain(CANARY_KEY.toLowerCase());
  });
});
