// GET /__sandbox/stats, POST /__sandbox/reset, duplicate detection, and start-up options.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { QuoteBatchError } from '../../src/errors.js';
import { startSandbox, type SandboxHandle, type SandboxStats } from '../../src/sandbox/index.js';
import { AGENTS_FILE, KEY, LEAD, post, QUOTE, readFixture, VALIDATE } from './_client.js';

let sandbox: SandboxHandle;
let dir: string;

beforeAll(async () => {
  sandbox = await startSandbox({ apiKey: KEY, agentsFile: AGENTS_FILE });
  dir = mkdtempSync(join(tmpdir(), 'quote-batch-sandbox-'));
});
afterAll(async () => {
  await sandbox.close();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(async () => {
  const reply = await fetch(`${sandbox.url}/__sandbox/reset`, { method: 'POST' });
  expect(reply.status).toBe(200);
  await reply.text();
});

async function fetchStats(): Promise<SandboxStats> {
  const reply = await fetch(`${sandbox.url}/__sandbox/stats`);
  expect(reply.status).toBe(200);
  return (await reply.json()) as SandboxStats;
}

function withClickId(fixture: string, clickId: string | undefined): Record<string, unknown> {
  const request = readFixture(fixture) as { tracking: { click_id?: string } };
  if (clickId === undefined) delete request.tracking.click_id;
  else request.tracking.click_id = clickId;
  return request;
}

describe('stats', () => {
  it('counts requests per operation and answers per status, without a key', async () => {
    await post(sandbox.url, VALIDATE, { email: 'valid.agent@example.com' });
    await post(sandbox.url, VALIDATE, { email: 'valid.agent@example.com' }, null);
    await post(sandbox.url, QUOTE, readFixture('quote-valid'));
    await post(sandbox.url, QUOTE, readFixture('state-not-supported'));
    await post(sandbox.url, LEAD, readFixture('lead-valid'));
    const stats = await fetchStats();
    expect(stats.operations).toEqual({
      validate: { received: 2, statuses: { 200: 1, 403: 1 } },
      quote: { received: 2, statuses: { 200: 1, 400: 1 } },
      lead: { received: 1, statuses: { 200: 1 } },
    });
    expect(stats.statuses).toEqual({ 200: 3, 400: 1, 403: 1 });
    expect(stats).toEqual(sandbox.stats());
  });

  it('reports since when it counts, per-second quote/lead endings, latency per operation and the engine load', async () => {
    const before = Date.now();
    sandbox.reset();
    await post(sandbox.url, VALIDATE, { email: 'valid.agent@example.com' });
    await post(sandbox.url, QUOTE, readFixture('quote-valid'));
    await post(sandbox.url, QUOTE, readFixture('state-not-supported'));
    await post(sandbox.url, LEAD, readFixture('lead-valid'), 'wrong-key');
    const stats = await fetchStats();
    expect(Date.parse(stats.since)).toBeGreaterThanOrEqual(before - 1);
    expect(Date.parse(stats.since)).toBeLessThanOrEqual(Date.now());
    // Quote and lead only; 400 and 403 are errors. Four requests in a row fit in a second or two.
    const totals = stats.perSecond.reduce(
      (sum, s) => ({ received: sum.received + s.received, accepted: sum.accepted + s.accepted, throttled: sum.throttled + s.throttled, errors: sum.errors + s.errors }),
      { received: 0, accepted: 0, throttled: 0, errors: 0 },
    );
    expect(totals).toEqual({ received: 3, accepted: 1, throttled: 0, errors: 2 });
    expect(stats.perSecond.map((s) => s.second)).toEqual(stats.perSecond.map((_, i) => i));
    expect(stats.latencyMs.validate.count).toBe(1);
    expect(stats.latencyMs.quote.count).toBe(2);
    expect(stats.latencyMs.lead.count).toBe(1);
    expect(stats.latencyMs.quote.p50).toBeGreaterThan(0);
    expect(stats.latencyMs.quote.p99).toBeLessThanOrEqual(stats.latencyMs.quote.max);
    expect(stats.capacity).toEqual({ busy: 0, queued: 0, peakBusy: 1, peakQueued: 0 });
    sandbox.reset();
    const cleared = await fetchStats();
    expect(cleared.perSecond).toEqual([]);
    expect(cleared.latencyMs.quote).toEqual({ count: 0, mean: 0, p50: 0, p90: 0, p99: 0, max: 0 });
  });

  it('counts per lead key: click_id, else channel.channel_lead_id; duplicates are processed more than once', async () => {
    await post(sandbox.url, QUOTE, withClickId('quote-valid', 'lead-a'));
    await post(sandbox.url, QUOTE, withClickId('quote-valid', 'lead-a'));
    await post(sandbox.url, QUOTE, withClickId('quote-valid', 'lead-b'));
    // A 400 is processed too (the partner looked at it).
    await post(sandbox.url, QUOTE, withClickId('no-eligible-vehicle', 'lead-c'));
    // A 403 is not: the partner did nothing.
    await post(sandbox.url, QUOTE, withClickId('quote-valid', 'lead-d'), 'wrong-key');
    // No click_id: the deprecated channel.channel_lead_id is the key.
    await post(sandbox.url, LEAD, withClickId('lead-valid', undefined));
    const stats = await fetchStats();
    expect(stats.leads).toEqual({
      'lead-a': { received: 2, processed: 2 },
      'lead-b': { received: 1, processed: 1 },
      'lead-c': { received: 1, processed: 1 },
      'lead-d': { received: 1, processed: 0 },
      '1b4e28ba-2fa1-11d2-883f-0016d3cca427': { received: 1, processed: 1 },
    });
    expect(stats.duplicateLeads).toEqual(['lead-a']);
  });

  it('reset clears every counter', async () => {
    await post(sandbox.url, QUOTE, readFixture('quote-valid'));
    expect((await fetchStats()).operations.quote.received).toBe(1);
    const reply = await fetch(`${sandbox.url}/__sandbox/reset`, { method: 'POST' });
    expect(await reply.json()).toEqual({ status: 'ok' });
    const stats = await fetchStats();
    expect(stats.operations.quote).toEqual({ received: 0, statuses: {} });
    expect(stats.leads).toEqual({});
    expect(stats.statuses).toEqual({});
    await post(sandbox.url, QUOTE, readFixture('quote-valid'));
    sandbox.reset();
    expect(sandbox.stats().operations.quote.received).toBe(0);
  });

  it('counts unknown routes apart from the operations', async () => {
    const reply = await fetch(`${sandbox.url}/nothing-here`);
    expect(reply.status).toBe(404);
    await reply.text();
    const stats = await fetchStats();
    expect(stats.unknownRoutes).toBe(1);
    expect(stats.statuses).toEqual({});
  });

  it('re-seeds the fault draws on reset, so a test sees the same faults whatever ran before', async () => {
    const faulty = await startSandbox({ apiKey: KEY, seed: 5, faults: { failRate: 0.5 } });
    try {
      const run = async (): Promise<number[]> => {
        const statuses: number[] = [];
        for (let i = 0; i < 12; i += 1) statuses.push((await post(faulty.url, QUOTE, readFixture('quote-valid'))).status);
        return statuses;
      };
      const first = await run();
      faulty.reset();
      expect(await run()).toEqual(first);
    } finally {
      await faulty.close();
    }
  });
});

describe('start-up options', () => {
  it('refuses a host that is not loopback', async () => {
    await expect(startSandbox({ host: '0.0.0.0' })).rejects.toMatchObject({ code: 'E_USAGE' });
    await expect(startSandbox({ host: '192.0.2.1' })).rejects.toBeInstanceOf(QuoteBatchError);
  });

  it('gives the url without a trailing slash and the port it picked', async () => {
    expect(sandbox.url).toBe(`http://127.0.0.1:${sandbox.port}`);
    expect(sandbox.port).toBeGreaterThan(0);
  });

  it('accepts sandbox-key by default and in-memory agents', async () => {
    const other = await startSandbox({ agents: [{ email: 'mem@example.com', agentId: 'xyz-42', eligible: true }] });
    try {
      const reply = await post(other.url, VALIDATE, { email: 'mem@example.com' }, 'sandbox-key');
      expect(reply.json).toStrictEqual({ status: 'success', message: 'User verification success', data: { is_valid: true, agent_id: 'xyz-42' } });
    } finally {
      await other.close();
    }
  });

  it.each([
    ['missing-column', 'email,agent_id\na@example.com,xyz-1\n', /missing column\(s\) eligible/],
    ['bad-eligible', 'email,agent_id,eligible\na@example.com,xyz-1,maybe\n', /line 2: eligible must be true or false/],
    ['eligible-without-id', 'email,agent_id,eligible\na@example.com,,true\n', /line 2: an eligible agent needs an agent_id/],
  ])('refuses a bad agents file (%s) with E_SANDBOX', async (name, text, message) => {
    const file = join(dir, `${name}.csv`);
    writeFileSync(file, text);
    const error = await startSandbox({ agentsFile: file }).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(QuoteBatchError);
    expect((error as QuoteBatchError).code).toBe('E_SANDBOX');
    expect((error as QuoteBatchError).message).toMatch(message);
  });

  it('refuses a missing agents file with E_SANDBOX naming it', async () => {
    const file = join(dir, 'absent.csv');
    await expect(startSandbox({ agentsFile: file })).rejects.toMatchObject({ code: 'E_SANDBOX', message: expect.stringContaining(file) });
  });

  it('refuses a port already in use with E_SANDBOX', async () => {
    await expect(startSandbox({ port: sandbox.port })).rejects.toMatchObject({ code: 'E_SANDBOX' });
  });
});
