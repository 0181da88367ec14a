// Seeded fault injection: each fault, reproducible sequences, the rps cap, outages at run time, close().
import { afterEach, describe, expect, it } from 'vitest';
import { createRandom, drawFaults } from '../../src/sandbox/faults.js';
import { startSandbox, type SandboxFaults, type SandboxHandle } from '../../src/sandbox/index.js';
import { AGENTS_FILE, KEY, LEAD, post, QUOTE, readFixture, VALIDATE } from './_client.js';

const opened: SandboxHandle[] = [];

async function open(faults: Partial<SandboxFaults>, seed = 7): Promise<SandboxHandle> {
  const sandbox = await startSandbox({ apiKey: KEY, agentsFile: AGENTS_FILE, seed, faults });
  opened.push(sandbox);
  return sandbox;
}

afterEach(async () => {
  await Promise.all(opened.splice(0).map((sandbox) => sandbox.close()));
});

/** Sends `count` quotes one after another; returns each status, or 'reset' when the connection was dropped. */
async function sendSequentially(sandbox: SandboxHandle, count: number): Promise<(number | 'reset')[]> {
  const outcomes: (number | 'reset')[] = [];
  for (let i = 0; i < count; i += 1) {
    const request = readFixture('quote-valid') as { tracking: { click_id: string } };
    request.tracking.click_id = `click-${i}`;
    try {
      outcomes.push((await post(sandbox.url, QUOTE, request)).status);
    } catch {
      outcomes.push('reset');
    }
  }
  return outcomes;
}

function isResetError(error: unknown): boolean {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return error instanceof TypeError && cause !== undefined && (cause.code === 'ECONNRESET' || cause.code === 'UND_ERR_SOCKET');
}

describe('fail rate', () => {
  it('answers the seeded share of requests 500 or 503, exactly as the seeded draws say', async () => {
    const sandbox = await open({ failRate: 0.3 }, 42);
    const outcomes = await sendSequentially(sandbox, 120);
    const random = createRandom(42);
    const expected = outcomes.map(() => {
      const draws = drawFaults(random);
      return draws.fail < 0.3 ? (draws.failKind < 0.5 ? 500 : 503) : 200;
    });
    expect(outcomes).toEqual(expected);
    const failed = outcomes.filter((status) => status !== 200).length;
    expect(failed).toBeGreaterThan(15);
    expect(failed).toBeLessThan(60);
    const stats = sandbox.stats();
    expect(stats.faults.failed500 + stats.faults.failed503).toBe(failed);
    expect(stats.faults.failed500).toBeGreaterThan(0);
    expect(stats.faults.failed503).toBeGreaterThan(0);
  });

  it('reproduces the same sequence with the same seed and another with another seed', async () => {
    const a = await sendSequentially(await open({ failRate: 0.5 }, 3), 40);
    const b = await sendSequentially(await open({ failRate: 0.5 }, 3), 40);
    const c = await sendSequentially(await open({ failRate: 0.5 }, 4), 40);
    expect(b).toEqual(a);
    expect(c).not.toEqual(a);
  });

  it('keeps one fault sequence when another fault is switched on', async () => {
    const alone = await sendSequentially(await open({ failRate: 0.3 }, 11), 40);
    const withThrottle = await sendSequentially(await open({ failRate: 0.3, throttleRate: 0.2 }, 11), 40);
    // Every request that failed alone still fails the same way (failures are decided before throttling).
    alone.forEach((status, i) => {
      if (status !== 200) expect(withThrottle[i]).toBe(status);
    });
    expect(withThrottle.filter((status) => status === 429).length).toBeGreaterThan(0);
  });

  it('answers the operation error shapes', async () => {
    const sandbox = await open({ failRate: 1 }, 1);
    const seen = new Map<number, unknown>();
    const bodies = new Map<number, unknown>();
    for (let i = 0; i < 20 && seen.size < 2; i += 1) {
      const quote = await post(sandbox.url, QUOTE, readFixture('quote-valid'));
      seen.set(quote.status, quote.json);
      const validate = await post(sandbox.url, VALIDATE, { email: 'valid.agent@example.com' });
      bodies.set(validate.status, validate.json);
    }
    expect(seen.get(500)).toStrictEqual({ status: 'failed', message: 'Internal server error', error_code: 'server_error' });
    expect(seen.get(503)).toStrictEqual({ status: 'failed', message: 'Service unavailable', error_code: 'service_unavailable' });
    expect(bodies.get(500) ?? bodies.get(503)).toStrictEqual(
      expect.objectContaining({ status: 'error', message: expect.stringMatching(/Internal server error|Service unavailable/) }),
    );
  });
});

describe('throttling', () => {
  it('answers 429 with Retry-After in seconds', async () => {
    const sandbox = await open({ throttleRate: 1, retryAfterSeconds: 2 });
    const reply = await post(sandbox.url, QUOTE, readFixture('quote-valid'));
    expect(reply.status).toBe(429);
    expect(reply.headers.get('retry-after')).toBe('2');
    expect(reply.json).toStrictEqual({ status: 'failed', message: 'Too many requests', error_code: 'rate_limited' });
    expect(sandbox.stats().faults.throttled).toBe(1);
  });

  it('answers 429 with Retry-After as an HTTP date', async () => {
    const sandbox = await open({ throttleRate: 1, retryAfterSeconds: 3, retryAfterFormat: 'http-date' });
    const before = Date.now();
    const reply = await post(sandbox.url, LEAD, readFixture('lead-valid'));
    expect(reply.status).toBe(429);
    const header = reply.headers.get('retry-after') ?? '';
    expect(header).toMatch(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
    expect(Date.parse(header)).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 3000);
  });

  it('caps requests per second across clients', async () => {
    const sandbox = await open({ rpsCap: 5 });
    const started = Date.now();
    const replies = await Promise.all(
      Array.from({ length: 20 }, () => post(sandbox.url, VALIDATE, { email: 'valid.agent@example.com' })),
    );
    const finished = Date.now();
    // Fixed one-second windows: the batch may straddle a boundary, so allow one cap per window spanned.
    const windows = Math.floor(finished / 1000) - Math.floor(started / 1000) + 1;
    const admitted = replies.filter((reply) => reply.status === 200).length;
    const capped = replies.filter((reply) => reply.status === 429);
    expect(admitted + capped.length).toBe(20);
    expect(admitted).toBeGreaterThanOrEqual(Math.min(5, 20));
    expect(admitted).toBeLessThanOrEqual(5 * windows);
    expect(capped.length).toBeGreaterThanOrEqual(20 - 5 * windows);
    for (const reply of capped) {
      expect(reply.headers.get('retry-after')).toBe('1');
      expect(reply.json).toStrictEqual({ status: 'error', message: 'Too many requests' });
    }
    expect(sandbox.stats().faults.rpsCapped).toBe(capped.length);
  });
});

describe('latency', () => {
  it('delays answers by at least latencyMs', async () => {
    const sandbox = await open({ latencyMs: 120, jitterMs: 30 });
    const started = performance.now();
    const reply = await post(sandbox.url, QUOTE, readFixture('quote-valid'));
    expect(reply.status).toBe(200);
    // A lower bound only: a slow machine may take longer, never shorter (timers may round by ~1 ms).
    expect(performance.now() - started).toBeGreaterThanOrEqual(115);
  });
});

describe('connection resets and hangs', () => {
  it('resets before processing: the caller sees a reset and the lead is not processed', async () => {
    const sandbox = await open({ resetBeforeRate: 1 });
    const error = await post(sandbox.url, QUOTE, readFixture('quote-valid')).then(() => undefined, (e: unknown) => e);
    expect(isResetError(error)).toBe(true);
    const stats = sandbox.stats();
    expect(stats.faults.resetBefore).toBe(1);
    expect(stats.operations.quote.received).toBe(1);
    expect(stats.leads['click-0001']).toEqual({ received: 1, processed: 0 });
  });

  it('resets after processing: the caller sees a reset but the lead was processed', async () => {
    const sandbox = await open({ resetAfterRate: 1 });
    const error = await post(sandbox.url, QUOTE, readFixture('quote-valid')).then(() => undefined, (e: unknown) => e);
    expect(isResetError(error)).toBe(true);
    const stats = sandbox.stats();
    expect(stats.faults.resetAfter).toBe(1);
    expect(stats.leads['click-0001']).toEqual({ received: 1, processed: 1 });
    expect(stats.statuses).toEqual({});
  });

  it('hangs after processing until the sandbox closes, and close() ends the hung connection', async () => {
    const sandbox = await startSandbox({ apiKey: KEY, faults: { hangRate: 1 } });
    const pending = post(sandbox.url, QUOTE, readFixture('quote-valid')).then(() => 'answered', () => 'dropped');
    // Bounded wait until the sandbox has the request (no timing assertion).
    for (let i = 0; i < 200 && sandbox.stats().faults.hung === 0; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(sandbox.stats().faults.hung).toBe(1);
    expect(sandbox.stats().leads['click-0001']).toEqual({ received: 1, processed: 1 });
    await sandbox.close();
    expect(await pending).toBe('dropped');
  });

  it('close() also ends a request waiting for its latency, and idle keep-alive connections', async () => {
    const sandbox = await startSandbox({ apiKey: KEY, faults: { latencyMs: 60_000 } });
    const pending = post(sandbox.url, QUOTE, readFixture('quote-valid')).then(() => 'answered', () => 'dropped');
    for (let i = 0; i < 200 && sandbox.stats().operations.quote.received === 0; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await sandbox.close();
    expect(await pending).toBe('dropped');
  });
});

describe('outage at run time', () => {
  it('answers 503 on every operation while the outage is on, and recovers when it ends', async () => {
    const sandbox = await open({});
    const setFaults = async (faults: Record<string, unknown>): Promise<Response> =>
      fetch(`${sandbox.url}/__sandbox/faults`, { method: 'POST', body: JSON.stringify(faults) });

    const on = await setFaults({ outage: true });
    expect(on.status).toBe(200);
    expect(((await on.json()) as SandboxFaults).outage).toBe(true);
    const validate = await post(sandbox.url, VALIDATE, { email: 'valid.agent@example.com' });
    const quote = await post(sandbox.url, QUOTE, readFixture('quote-valid'));
    const lead = await post(sandbox.url, LEAD, readFixture('lead-valid'));
    expect([validate.status, quote.status, lead.status]).toEqual([503, 503, 503]);
    expect(quote.headers.get('retry-after')).toBe('1');
    expect(validate.json).toStrictEqual({ status: 'error', message: 'Service unavailable' });
    expect(sandbox.stats().leads['click-0001']).toEqual({ received: 2, processed: 0 });

    await (await setFaults({ outage: false })).text();
    expect((await post(sandbox.url, QUOTE, readFixture('quote-valid'))).status).toBe(200);
    expect(sandbox.stats().faults.outage).toBe(3);
  });

  it('refuses a bad fault setting with 400 and keeps the old ones', async () => {
    const sandbox = await open({ failRate: 0.1 });
    for (const body of ['{"failRate": 2}', '{"nope": 1}', 'not json', '{"retryAfterFormat": "minutes"}']) {
      const reply = await fetch(`${sandbox.url}/__sandbox/faults`, { method: 'POST', body });
      expect(reply.status).toBe(400);
      await reply.text();
    }
    expect(sandbox.faults().failRate).toBe(0.1);
    expect(() => sandbox.setFaults({ hangRate: -1 })).toThrow(/hangRate/);
  });
});
