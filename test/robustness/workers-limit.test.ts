/**
 * The workers of one job share the partner's limit (PostgreSQL ledger, docs/ledger.md): the real CLI
 * against the sandbox on loopback. A worker that joins starts from its share of the pace the others
 * learned, not from a cold start, and together they keep to the partner's cap; a Retry-After one
 * worker is given holds the others too.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { SandboxHandle } from '../../src/sandbox/index.js';
import { startCli, type CliResult } from '../helpers/cli.js';
import { createTestDatabase, queryLedger } from '../helpers/postgres.js';
import { makeTempDir } from '../helpers/temp-dir.js';
import { generateLeads, KEY, MAPPING_CSV, startTestSandbox, waitFor } from '../pipeline/_setup.js';

const ROWS = 900;
const CAP = 30;

type LogLine = Record<string, unknown>;
const logLines = (r: CliResult): LogLine[] => r.stderr.trimEnd().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as LogLine);

describe('the partner\'s limit, shared by the workers of a job', () => {
  const tmp = makeTempDir('quote-batch-workers-limit-');
  let leads: { csv: string; agents: string };
  let sandbox: SandboxHandle | undefined;
  beforeAll(() => {
    leads = generateLeads(tmp.dir, ROWS, 23);
  });
  afterAll(async () => {
    await sandbox?.close();
    tmp.cleanup();
  });

  const worker = (ledger: string, url: string): ReturnType<typeof startCli> => startCli(
    ['run', leads.csv, '--mapping', MAPPING_CSV, '--env', 'sandbox', '--base-url', url, '--ledger', ledger,
      '--concurrency', '16', '--lease', '5s', '--quiet', '--json-log'],
    { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: KEY }, timeoutMs: 120_000 },
  );

  it('a worker that joins starts at its share of the pace the others learned; together they keep to the cap', async () => {
    sandbox = await startTestSandbox({ agentsFile: leads.agents, faults: { latencyMs: 50, jitterMs: 10, rpsCap: CAP, rpsMode: 'window', retryAfterSeconds: 1 } });
    const ledger = await createTestDatabase(inject('postgresUrl'));
    const first = [worker(ledger, sandbox.url), worker(ledger, sandbox.url)];
    // Both pacing (they met the cap's 429s): what they learned is published.
    let paces: number[] = [];
    await waitFor(async () => {
      // Until the first worker has created the schema, there is nothing to read.
      const [row] = await queryLedger<{ state_json: string }>(ledger, 'SELECT state_json FROM partner_limits').catch(() => []);
      const entries = row === undefined ? [] : Object.values(JSON.parse(row.state_json) as Record<string, { pace: number | null }>);
      paces = entries.map((e) => e.pace ?? 0);
      return paces.length === 2 && paces.every((p) => p > 0);
    }, 30_000, 200);
    const third = worker(ledger, sandbox.url);
    const results = await Promise.all([...first, third].map((w) => w.done));
    for (const r of results) expect([0, 1], r.stderr).toContain(r.code);

    const joined = logLines(results[2] as CliResult).find((l) => l.event === 'warm_start');
    expect(joined, (results[2] as CliResult).stderr).toMatchObject({ from: 'workers', warm: true, workers: 3 });
    // A third of what the two paced at together, give or take what they learned meanwhile: not a cold start, not a whole cap more.
    expect(joined?.pace as number).toBeGreaterThan(CAP / 3 / 2);
    expect(joined?.pace as number).toBeLessThan(CAP * 0.6);

    const [job] = await queryLedger<{ status: string }>(ledger, 'SELECT status FROM jobs');
    expect(job?.status).toBe('completed');
    const stats = sandbox.stats();
    expect(stats.duplicateLeads).toEqual([]);
    // Near the cap together. A short run's start costs one client 12-16% (docs/adaptive.md); a joiner
    // adding its own pace to the others' would have a third of the quotes refused from then on.
    expect(stats.faults.rpsCapped / stats.operations.quote.received).toBeLessThan(0.25);
    await sandbox.close();
    sandbox = undefined;
  });

  it('a Retry-After one worker is given holds the others until it ends', async () => {
    // 429s at random with a Retry-After of 2 s: each worker is told by some, and holds when another is.
    sandbox = await startTestSandbox({ agentsFile: leads.agents, faults: { latencyMs: 50, jitterMs: 10, throttleRate: 0.02, retryAfterSeconds: 2 } });
    const ledger = await createTestDatabase(inject('postgresUrl'));
    const results = await Promise.all([worker(ledger, sandbox.url), worker(ledger, sandbox.url)].map((w) => w.done));
    for (const r of results) expect([0, 1], r.stderr).toContain(r.code);
    const held = results.flatMap(logLines).filter((l) => l.event === 'retry_after_held');
    expect(held.length).toBeGreaterThan(0);
    expect(held[0]?.msg).toMatch(/^the partner asked a worker of this job to wait until /);
    const [job] = await queryLedger<{ status: string; paused: boolean }>(ledger, 'SELECT status, paused_until IS NOT NULL AS paused FROM jobs');
    expect(job).toEqual({ status: 'completed', paused: true });
    expect(sandbox.stats().duplicateLeads).toEqual([]);
  });
});
