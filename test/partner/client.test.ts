/**
 * The partner client over real loopback HTTP against the sandbox, with its faults switched on.
 * Timing assertions are lower bounds only (a wait is never shorter than asked), which a slow
 * machine cannot break.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startSandbox, type SandboxHandle } from '../../src/sandbox/index.js';
import {
  AdaptiveLimiter,
  createPartnerClient,
  type CallOutcome,
  type ConcurrencyLimiter,
  type ClientEvent,
  type PartnerClient,
  type PartnerClientOptions,
} from '../../src/partner/index.js';
import { startMisbehavingPartner } from '../helpers/misbehaving-partner.js';
import { findClosedPort, startScriptedServer } from './_scripted-server.js';

const CANARY = 'canary-key-7f3a9';
const fixture = (name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(new URL(`../fixtures/partner/${name}.json`, import.meta.url), 'utf8')) as Record<string, unknown>;
const VALID_QUOTE = fixture('valid-quote');
const STATE_AK = fixture('state-not-supported');

/** Everything the client handed back in this file, searched for the canary at the end. */
const seen: unknown[] = [];
const clients: PartnerClient[] = [];
let sandbox: SandboxHandle;

function makeClient(options: Partial<PartnerClientOptions> = {}): PartnerClient {
  const client = createPartnerClient({
    baseUrl: sandbox.url,
    apiKey: CANARY,
    backoffBaseMs: 5,
    backoffCapMs: 20,
    breakerCooldownMs: 20,
    timeoutMs: 5000,
    ...options,
  });
  clients.push(client);
  return client;
}

function keep<T>(outcome: CallOutcome<T>): CallOutcome<T> {
  seen.push(outcome);
  return outcome;
}

function quoteWithKey(clickId: string): Record<string, unknown> {
  return { ...VALID_QUOTE, tracking: { click_id: clickId } };
}

beforeAll(async () => {
  sandbox = await startSandbox({
    port: 0,
    apiKey: CANARY,
    seed: 7,
    agents: [
      { email: 'valid.agent@example.test', agentId: 'xyz-100000001', eligible: true },
      { email: 'ineligible.agent@example.test', agentId: 'xyz-100000002', eligible: false },
    ],
  });
});

beforeEach(() => {
  sandbox.setFaults({
    failRate: 0, throttleRate: 0, resetBeforeRate: 0, resetAfterRate: 0, hangRate: 0, outage: false, rpsCap: 0,
    upstreamErrorRate: 0, retryAfterSeconds: 1, retryAfterFormat: 'seconds', latencyMs: 0, jitterMs: 0,
  });
  sandbox.reset();
});

afterEach(() => {
  for (const client of clients.splice(0)) client.close();
});

afterAll(async () => {
  await sandbox.close();
});

describe('answers', () => {
  it('2xx → ok, parsed with the response schema', async () => {
    const outcome = keep(await makeClient().submit('quote', VALID_QUOTE));
    expect(outcome.kind).toBe('ok');
    expect(outcome.httpStatus).toBe(200);
    expect(outcome.parsed?.quote?.quote_number).toMatch(/^[A-Z0-9]{15}$/);
    expect(outcome.attempts).toHaveLength(1);
    expect(outcome.attempts[0]).toMatchObject({ kind: 'quote', httpStatus: 200, errorCode: null, outcome: 'ok' });
    expect(outcome.message).toBe(`POST ${sandbox.url}/partner/v2/policy/quote: 200 OK (Processed successfully.)`);
  });

  it("400 → rejected with the partner's error_code and message, not retried", async () => {
    const outcome = keep(await makeClient().submit('quote', STATE_AK));
    expect(outcome).toMatchObject({ kind: 'rejected', httpStatus: 400, errorCode: 'state_not_supported' });
    expect(outcome.message).toBe(
      `POST ${sandbox.url}/partner/v2/policy/quote: 400 Bad Request (state_not_supported: State AK is not supported.)`,
    );
    expect(sandbox.stats().operations.quote.received).toBe(1);
  });

  it('403 → forbidden after exactly one attempt, and the client halts: nothing else leaves', async () => {
    const client = createPartnerClient({ baseUrl: sandbox.url, apiKey: 'wrong-key' });
    clients.push(client);
    const outcome = keep(await client.submit('lead', VALID_QUOTE));
    expect(outcome).toMatchObject({ kind: 'forbidden', httpStatus: 403, errorCode: 'forbidden' });
    expect(outcome.halt).toMatch(/refused the API key \(403 Forbidden\)/);
    expect(outcome.attempts).toHaveLength(1);
    expect(sandbox.stats().operations.lead.received).toBe(1);
    expect(client.halted).toBe(true);
    const after = keep(await client.validateAgent('valid.agent@example.test'));
    expect(after).toMatchObject({ kind: 'retryable', errorCode: 'halted', attempts: [] });
    expect(sandbox.stats().operations.validate.received).toBe(0);

    const reader = createPartnerClient({ baseUrl: sandbox.url, apiKey: 'wrong-key' });
    clients.push(reader);
    const validate = keep(await reader.validateAgent('valid.agent@example.test'));
    expect(validate.kind).toBe('forbidden');
    expect(sandbox.stats().operations.validate.received).toBe(1);
  });

  it('agent validation: valid, not eligible, malformed e-mail', async () => {
    const client = makeClient();
    const valid = keep(await client.validateAgent('valid.agent@example.test'));
    expect(valid.kind).toBe('ok');
    expect(valid.parsed?.data).toEqual({ is_valid: true, agent_id: 'xyz-100000001' });
    const ineligible = keep(await client.validateAgent('ineligible.agent@example.test'));
    expect(ineligible.parsed?.data?.is_valid).toBe(false);
    expect(ineligible.parsed?.message).toBe('The specified user_type does not match the account.');
    const malformed = keep(await client.validateAgent('not-an-email'));
    expect(malformed).toMatchObject({ kind: 'rejected', httpStatus: 400 });
  });
});

describe('retries', () => {
  it('500/503 faults are retried and every attempt is counted', async () => {
    sandbox.setFaults({ failRate: 0.5 });
    const client = makeClient({ maxAttempts: 20 });
    let attemptsSeen = 0;
    for (let i = 0; i < 12; i += 1) {
      const outcome = keep(await client.submit('quote', quoteWithKey(`click-fail-${i}`), { onAttempt: () => { attemptsSeen += 1; } }));
      expect(outcome.kind).toBe('ok');
      expect(outcome.attempts.slice(0, -1).every((a) => a.outcome === 'retryable' && [500, 503].includes(a.httpStatus ?? 0))).toBe(true);
    }
    const stats = sandbox.stats();
    const injected = stats.faults.failed500 + stats.faults.failed503;
    expect(injected).toBeGreaterThan(0);
    expect(stats.operations.quote.received).toBe(attemptsSeen);
    expect(attemptsSeen).toBe(12 + injected);
    expect(stats.duplicateLeads).toEqual([]);
  });

  it('attempts used up → retryable with the last status', async () => {
    sandbox.setFaults({ failRate: 1 });
    const outcome = keep(await makeClient({ maxAttempts: 3 }).submit('quote', VALID_QUOTE));
    expect(outcome.kind).toBe('retryable');
    expect([500, 503]).toContain(outcome.httpStatus);
    expect(outcome.attempts).toHaveLength(3);
    expect(outcome.message).toMatch(/; 3 attempts$/);
    expect(sandbox.stats().operations.quote.received).toBe(3);
  });

  it('502 and 504 are retried; 501 on a write is in_doubt; a non-JSON body is kept as text', async () => {
    const server = await startScriptedServer([
      { status: 502, body: '<html>Bad gateway</html>', headers: { 'content-type': 'text/html' } },
      { status: 504, body: '' },
      { status: 501, body: 'Not Implemented' },
    ]);
    try {
      const client = createPartnerClient({ baseUrl: server.url, apiKey: CANARY, backoffBaseMs: 1, backoffCapMs: 5 });
      clients.push(client);
      const outcome = keep(await client.submit('quote', VALID_QUOTE));
      expect(outcome.attempts.map((a) => [a.httpStatus, a.outcome])).toEqual([
        [502, 'retryable'], [504, 'retryable'], [501, 'in_doubt'],
      ]);
      expect(outcome).toMatchObject({ kind: 'in_doubt', httpStatus: 501, body: 'Not Implemented', errorCode: 'http_501' });
      expect(server.requests).toHaveLength(3);
    } finally {
      await server.close();
    }
  });

  it('a redirect is not followed: misrouted, and the client halts', async () => {
    const server = await startScriptedServer([{ status: 302, headers: { location: 'http://127.0.0.1:9/elsewhere' } }]);
    try {
      const client = createPartnerClient({ baseUrl: server.url, apiKey: CANARY });
      clients.push(client);
      const outcome = keep(await client.submit('quote', VALID_QUOTE));
      expect(outcome).toMatchObject({ kind: 'misrouted', httpStatus: 302, errorCode: 'unexpected_redirect' });
      expect(outcome.halt).toMatch(/the base URL or the endpoint is wrong/);
      expect(client.halted).toBe(true);
      expect(server.requests).toHaveLength(1);
    } finally {
      await server.close();
    }
  });

  it('connection refused before anything answered → the client halts at once: the base URL is wrong, not down', async () => {
    const port = await findClosedPort();
    const events: ClientEvent[] = [];
    const client = createPartnerClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: CANARY, maxAttempts: 3, backoffBaseMs: 1, onEvent: (e) => events.push(e) });
    clients.push(client);
    const outcome = keep(await client.submit('quote', VALID_QUOTE));
    expect(outcome).toMatchObject({ kind: 'retryable', httpStatus: null, errorCode: 'ECONNREFUSED' });
    expect(outcome.attempts.map((a) => a.errorCode)).toEqual(['ECONNREFUSED']);
    expect(client.haltKind).toBe('unreachable');
    expect(client.haltReason).toBe(`the base URL http://127.0.0.1:${port} has not answered once in this run: 127.0.0.1:${port} refused the connection (ECONNREFUSED)`);
    expect(events.at(-1)).toMatchObject({ type: 'halt', kind: 'unreachable', hint: expect.stringMatching(new RegExp(`^check the port of 127\\.0\\.0\\.1:${port} `)) });
  });

  it('connection refused once the partner has answered → retried, then retryable (an outage, not a wrong address)', async () => {
    const server = await startScriptedServer([{ status: 200, body: '{"status":"success"}' }]);
    const client = createPartnerClient({ baseUrl: server.url, apiKey: CANARY, maxAttempts: 3, backoffBaseMs: 1 });
    clients.push(client);
    expect(keep(await client.submit('quote', VALID_QUOTE)).kind).toBe('ok');
    await server.close();
    const outcome = keep(await client.submit('quote', VALID_QUOTE));
    expect(outcome).toMatchObject({ kind: 'retryable', httpStatus: null, errorCode: 'ECONNREFUSED' });
    // The first attempt may meet the kept-alive socket the server just closed (a reset before sending).
    expect(outcome.attempts).toHaveLength(3);
    expect(outcome.attempts.slice(1).map((a) => a.errorCode)).toEqual(['ECONNREFUSED', 'ECONNREFUSED']);
    expect(client.halted).toBe(false);
  });

  it('a reset after the body was sent → in_doubt, exactly one request seen, not resent', async () => {
    sandbox.setFaults({ resetAfterRate: 1 });
    const outcome = keep(await makeClient().submit('quote', quoteWithKey('click-reset-after')));
    expect(outcome).toMatchObject({ kind: 'in_doubt', httpStatus: null, errorCode: 'ECONNRESET' });
    expect(outcome.attempts).toHaveLength(1);
    expect(outcome.message).toContain('the partner may have processed it');
    const stats = sandbox.stats();
    expect(stats.operations.quote.received).toBe(1);
    expect(stats.leads['click-reset-after']).toEqual({ received: 1, processed: 1 });
  });

  it('a reset before processing is still in_doubt for a write (the body had left), retried for a read', async () => {
    sandbox.setFaults({ resetBeforeRate: 1 });
    const client = makeClient({ maxAttempts: 3 });
    const write = keep(await client.submit('lead', quoteWithKey('click-reset-before')));
    expect(write.kind).toBe('in_doubt');
    expect(sandbox.stats().operations.lead.received).toBe(1);
    const read = keep(await client.validateAgent('valid.agent@example.test'));
    expect(read).toMatchObject({ kind: 'retryable', errorCode: 'ECONNRESET' });
    expect(read.attempts).toHaveLength(3);
    expect(sandbox.stats().operations.validate.received).toBe(3);
  });

  it('a hang → the time-out fires → in_doubt for a write, retried for a read', async () => {
    sandbox.setFaults({ hangRate: 1 });
    const client = makeClient({ timeoutMs: 800, maxAttempts: 2 });
    const write = keep(await client.submit('quote', quoteWithKey('click-hang')));
    expect(write).toMatchObject({ kind: 'in_doubt', errorCode: 'ETIMEDOUT' });
    expect(write.message).toMatch(/time-out in the '(response|request)' phase/);
    expect(write.attempts).toHaveLength(1);
    expect(sandbox.stats().operations.quote.received).toBe(1);
    const read = keep(await client.validateAgent('valid.agent@example.test'));
    expect(read).toMatchObject({ kind: 'retryable', errorCode: 'ETIMEDOUT' });
    expect(sandbox.stats().operations.validate.received).toBe(2);
  });

  it('an answer whose headers come but whose body stalls → the whole-request time-out fires → classified by its status (200: ok, with a warning)', async () => {
    let requests = 0;
    const server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        requests += 1;
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
        res.write('{"quote_number":'); // then nothing more: the socket stays open
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const client = makeClient({ baseUrl: `http://127.0.0.1:${port}`, timeoutMs: 400, maxAttempts: 2 });
      const started = performance.now();
      const write = keep(await client.submit('quote', quoteWithKey('click-stalled-body')));
      // The status line arrived: the partner answered, only its body is missing.
      expect(write).toMatchObject({ kind: 'ok', httpStatus: 200, errorCode: null });
      expect(write.warning).toBe('the partner answered 200, but the body did not arrive in time (time-out after the status line): recorded as succeeded without its details');
      expect(write.message).toMatch(/200 OK, body not readable: the body did not arrive in time/);
      expect(write.attempts).toHaveLength(1);
      expect(requests).toBe(1);
      // A lower bound only: the time-out cannot fire before --timeout.
      expect(performance.now() - started).toBeGreaterThanOrEqual(390);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('Retry-After', () => {
  it.each(['seconds', 'http-date'] as const)('honours Retry-After in %s form', async (format) => {
    sandbox.setFaults({ throttleRate: 1, retryAfterSeconds: 1, retryAfterFormat: format });
    const sentAt: number[] = [];
    const outcome = keep(
      await makeClient().submit('quote', VALID_QUOTE, {
        beforeSend: () => void sentAt.push(performance.now()),
        onAttempt: () => sandbox.setFaults({ throttleRate: 0 }),
      }),
    );
    expect(outcome.kind).toBe('ok');
    expect(outcome.attempts.map((a) => a.httpStatus)).toEqual([429, 200]);
    expect(outcome.attempts[0]?.errorCode).toBe('rate_limited');
    // Lower bound only; 5 ms of slack for wall clock (HTTP-date) vs monotonic clock.
    expect((sentAt[1] ?? 0) - (sentAt[0] ?? 0)).toBeGreaterThanOrEqual(995);
  });

  it('a gateway\'s 429 (an HTML page, no Retry-After) is retried after a back-off, and the limiter is told it was a 429', async () => {
    sandbox.setFaults({ rpsCap: 1, rpsMode: 'bucket', rpsBurst: 1, rpsCapAnswer: 'html' });
    const told: string[] = [];
    const inner = new AdaptiveLimiter({ ceiling: 4 });
    const limiter: ConcurrencyLimiter = {
      get limit() { return inner.limit; },
      get inFlight() { return inner.inFlight; },
      get rate() { return inner.rate; },
      takeInFlight: () => inner.takeInFlight(),
      acquire: async (signals) => {
        const slot = await inner.acquire(signals);
        return slot === 'aborted' ? slot : { sent: () => slot.sent(), release: (sample) => { told.push(sample.signal); slot.release(sample); } };
      },
    };
    try {
      // The first uses the bucket's one token; the second is the gateway's.
      keep(await makeClient({ limiter }).submit('quote', quoteWithKey('click-gateway-1')));
      const outcome = keep(await makeClient({ limiter, backoffBaseMs: 600, backoffCapMs: 600 }).submit('quote', quoteWithKey('click-gateway-2')));
      expect(outcome.kind).toBe('ok');
      expect(outcome.attempts[0]?.httpStatus).toBe(429);
      expect(outcome.attempts.at(-1)?.httpStatus).toBe(200);
      expect(told).toContain('throttled');
      expect(told.at(-1)).toBe('ok');
    } finally {
      sandbox.setFaults({ rpsCap: 0, rpsMode: 'window', rpsBurst: 0, rpsCapAnswer: 'json' });
    }
  });

  it('tells the caller of each attempt it will send again, before its wait begins, and of no other', async () => {
    sandbox.setFaults({ throttleRate: 1, retryAfterSeconds: 1 });
    const events: string[] = [];
    let hookEnd = 0;
    let secondSend = 0;
    const outcome = await makeClient().submit('quote', VALID_QUOTE, {
      beforeSend: (attempt) => {
        events.push(`send ${attempt}`);
        if (attempt === 2) secondSend = performance.now();
      },
      beforeRetry: async (record) => {
        events.push(`retry after ${record.httpStatus}`);
        // Longer than the Retry-After: a hook not awaited would let the second send leave before it ends.
        await new Promise((resolve) => setTimeout(resolve, 1500));
        sandbox.setFaults({ throttleRate: 0 });
        hookEnd = performance.now();
      },
    });
    expect(outcome.kind).toBe('ok');
    expect(events).toEqual(['send 1', 'retry after 429', 'send 2']);
    // The Retry-After wait begins once the hook is done.
    expect(secondSend - hookEnd).toBeGreaterThanOrEqual(995);
  });

  it('a 429 delays only the request it came with: the others keep going', async () => {
    sandbox.setFaults({ throttleRate: 1, retryAfterSeconds: 1 });
    const client = makeClient();
    let throttledAt = 0;
    let other: Promise<CallOutcome> | undefined;
    let otherSentAt = 0;
    let firstRetriedAt = 0;
    const first = client.submit('quote', VALID_QUOTE, {
      beforeSend: (attempt) => { if (attempt === 2) firstRetriedAt = performance.now(); },
      onAttempt: (attempt) => {
        if (attempt.httpStatus !== 429 || other !== undefined) return;
        throttledAt = performance.now();
        sandbox.setFaults({ throttleRate: 0 });
        other = client.submit('quote', quoteWithKey('click-other'), { beforeSend: () => { otherSentAt = performance.now(); } });
      },
    });
    keep(await first);
    expect(other).toBeDefined();
    const second = keep(await (other as unknown as Promise<CallOutcome>));
    expect(second.kind).toBe('ok');
    expect(second.attempts).toHaveLength(1);
    // The other request left long before the throttled one's Retry-After was over.
    expect(otherSentAt - throttledAt).toBeLessThan(900);
    expect(firstRetriedAt - throttledAt).toBeGreaterThanOrEqual(990);
  });

  it('a Retry-After beyond --max-retry-after halts the client with the time to come back', async () => {
    sandbox.setFaults({ throttleRate: 1, retryAfterSeconds: 36_000 });
    const events: ClientEvent[] = [];
    const client = makeClient({ maxRetryAfterMs: 300_000, onEvent: (e) => events.push(e) });
    const before = Date.now();
    const outcome = keep(await client.submit('quote', VALID_QUOTE));
    expect(outcome).toMatchObject({ kind: 'retryable', httpStatus: 429 });
    expect(outcome.attempts).toHaveLength(1);
    expect(outcome.halt).toMatch(/^the partner asks to wait 10h00m \(Retry-After, over --max-retry-after 5m00s\); run again after \d{4}-\d\d-\d\dT/);
    const at = Date.parse(/run again after (\S+)$/.exec(outcome.halt ?? '')?.[1] ?? '');
    expect(at - before).toBeGreaterThanOrEqual(36_000_000 - 1000);
    expect(client.halted).toBe(true);
    expect(client.haltReason).toBe(outcome.halt);
    // The halt event says what kind of halt it is and when the partner may be asked again.
    expect(events).toEqual([{ type: 'halt', kind: 'retry_after', reason: outcome.halt, retryAfter: new Date(at) }]);
    const later = keep(await client.submit('quote', quoteWithKey('click-later')));
    expect(later).toMatchObject({ kind: 'retryable', errorCode: 'halted', attempts: [] });
    expect(sandbox.stats().operations.quote.received).toBe(1);
  });

  it('an abort while waiting returns retryable/aborted without sending again', async () => {
    sandbox.setFaults({ throttleRate: 1, retryAfterSeconds: 30 });
    const controller = new AbortController();
    const outcome = keep(
      await makeClient().submit('quote', VALID_QUOTE, { signal: controller.signal, onAttempt: () => controller.abort() }),
    );
    expect(outcome).toMatchObject({ kind: 'retryable', errorCode: 'aborted', httpStatus: 429 });
    expect(outcome.attempts).toHaveLength(1);
    expect(sandbox.stats().operations.quote.received).toBe(1);
  });
});

describe('rate cap and circuit breaker', () => {
  it('--rate spaces attempts across concurrent calls', async () => {
    const client = makeClient({ rate: 20 });
    const sentAt: number[] = [];
    const outcomes = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        client.submit('quote', quoteWithKey(`click-rate-${i}`), { beforeSend: () => void sentAt.push(performance.now()) }),
      ),
    );
    outcomes.forEach(keep);
    expect(outcomes.every((o) => o.kind === 'ok')).toBe(true);
    // 6 slots at 50 ms intervals: the last leaves at least 250 ms after the first.
    expect(Math.max(...sentAt) - Math.min(...sentAt)).toBeGreaterThanOrEqual(245);
  });

  it('opens after --max-consecutive-failures, probes with agent validation only, and halts after --max-outage', async () => {
    sandbox.setFaults({ outage: true, retryAfterSeconds: 0 });
    const events: ClientEvent[] = [];
    const client = makeClient({ maxAttempts: 10, maxConsecutiveFailures: 3, breakerCooldownMs: 50, maxOutageMs: 600, onEvent: (e) => events.push(e) });
    const started = performance.now();
    const outcome = keep(await client.submit('quote', VALID_QUOTE));
    expect(performance.now() - started).toBeGreaterThanOrEqual(590);
    expect(outcome).toMatchObject({ kind: 'retryable', errorCode: 'halted' });
    expect(outcome.attempts).toHaveLength(3);
    expect(outcome.message).toMatch(/: 503 Service Unavailable \(service_unavailable: .*\); not retried: the partner did not recover within --max-outage/);
    expect(client.halted).toBe(true);
    // Probes are reads: no quote left after the breaker opened.
    const stats = sandbox.stats();
    expect(stats.operations.quote.received).toBe(3);
    expect(stats.operations.validate.received).toBeGreaterThanOrEqual(2);
    expect(events[0]).toMatchObject({ type: 'breaker_open', operation: 'submit', reason: '3 consecutive transient failures (last: service_unavailable)' });
    expect((events[0] as { giveUpAt: Date }).giveUpAt).toBeInstanceOf(Date);
    expect(events.filter((e) => e.type === 'probe').length).toBe(stats.operations.validate.received);
    expect(events.at(-1)).toMatchObject({ type: 'halt', kind: 'outage' });
    // Every answer was a 503 with Retry-After, the probes' too: an outage, not a rate limit. The
    // metrics count them all as errors, none as throttled (a 429), and the limiter never paced.
    const sample = client.takeSample();
    expect(sample.attempts).toBe(3 + stats.operations.validate.received);
    expect(sample).toMatchObject({ throttled: 0, errors: sample.attempts, paceRate: null });

    const later = keep(await client.validateAgent('valid.agent@example.test'));
    expect(later).toMatchObject({ kind: 'retryable', errorCode: 'halted', attempts: [], httpStatus: null });
    expect(later.message).toMatch(/\/account\/v1\/agent\/validate: not sent: the partner did not recover/);
  });

  it('an answered probe lets one trial quote through, whose success closes it', async () => {
    const events: ClientEvent[] = [];
    const client = makeClient({ maxAttempts: 20, maxConsecutiveFailures: 3, breakerCooldownMs: 30, onEvent: (e) => events.push(e) });
    sandbox.setFaults({ outage: true });
    const outcome = keep(
      await client.submit('quote', VALID_QUOTE, {
        onAttempt: (a) => {
          if (a.httpStatus === 503 && client.breakerState() === 'open') sandbox.setFaults({ outage: false });
        },
      }),
    );
    expect(outcome.kind).toBe('ok');
    expect(client.breakerState()).toBe('closed');
    expect(events.map((e) => e.type)).toContain('breaker_closed');
    expect(client.halted).toBe(false);
  });

  it('as many sends in a row in doubt as the concurrency open it: a hanging partner costs few quotes', async () => {
    sandbox.setFaults({ hangRate: 1 });
    const events: ClientEvent[] = [];
    const client = makeClient({ concurrency: 4, timeoutMs: 300, maxOutageMs: 1500, breakerCooldownMs: 100, onEvent: (e) => events.push(e) });
    const outcomes = await Promise.all(Array.from({ length: 20 }, (_, i) => client.submit('quote', quoteWithKey(`click-hang-${i}`))));
    outcomes.forEach(keep);
    const inDoubt = outcomes.filter((o) => o.kind === 'in_doubt').length;
    expect(inDoubt).toBeGreaterThanOrEqual(4);
    expect(inDoubt).toBeLessThanOrEqual(8); // at most 2 × concurrency
    expect(outcomes.filter((o) => o.errorCode === 'halted').length).toBe(20 - inDoubt);
    expect(sandbox.stats().operations.quote.received).toBe(inDoubt);
    expect(events[0]).toMatchObject({ type: 'breaker_open', reason: expect.stringMatching(/^4 requests in a row got no answer after they were sent/) });
  });
});

describe('outages through a misbehaving partner', () => {
  it('a failed trial opens the breaker again and probing goes on until a trial succeeds', async () => {
    const partner = await startMisbehavingPartner(sandbox.url, (r) => (r.operation === 'quote' && r.n <= 4 ? { kind: 'answer', status: 500, body: '{"message":"down"}' } : { kind: 'forward' }));
    try {
      const events: ClientEvent[] = [];
      const client = createPartnerClient({ baseUrl: partner.url, apiKey: CANARY, maxAttempts: 20, maxConsecutiveFailures: 3, breakerCooldownMs: 20, backoffBaseMs: 1, backoffCapMs: 5, onEvent: (e) => events.push(e) });
      clients.push(client);
      const outcome = keep(await client.submit('quote', VALID_QUOTE));
      expect(outcome.kind).toBe('ok');
      expect(outcome.attempts.map((a) => a.httpStatus)).toEqual([500, 500, 500, 500, 200]);
      expect(partner.received.quote).toBe(5); // 3 that opened it, a failed trial, a good trial
      expect(events.filter((e) => e.type === 'probe').length).toBeGreaterThanOrEqual(2);
      expect(events.at(-1)).toMatchObject({ type: 'breaker_closed', operation: 'submit' });
      expect(client.halted).toBe(false);
    } finally {
      await partner.close();
    }
  });

  it('while the breaker is open no quote leaves but the trials; a partner that takes quotes and never answers costs at most 2 × concurrency', async () => {
    const quoteArrivals: number[] = [];
    const partner = await startMisbehavingPartner(sandbox.url, (r) => {
      if (r.operation !== 'quote') return { kind: 'forward' };
      quoteArrivals.push(performance.now());
      return { kind: 'forward-then', then: 'hang' };
    });
    try {
      const events: { at: number; event: ClientEvent }[] = [];
      const client = createPartnerClient({
        baseUrl: partner.url, apiKey: CANARY, concurrency: 4, rate: 40, timeoutMs: 300, maxOutageMs: 20_000, breakerCooldownMs: 50,
        onEvent: (event) => events.push({ at: performance.now(), event }),
      });
      clients.push(client);
      await client.validateAgent('valid.agent@example.test');
      const outcomes = await Promise.all(Array.from({ length: 40 }, (_, i) => client.submit('quote', quoteWithKey(`click-dead-${i}`))));
      outcomes.forEach(keep);
      const inDoubt = outcomes.filter((o) => o.kind === 'in_doubt').length;
      expect(inDoubt).toBeLessThanOrEqual(8);
      expect(partner.received.quote).toBe(inDoubt);
      expect(client.haltReason).toMatch(/^8 requests in doubt since the partner stopped answering quotes\/leads/);
      const openedAt = events.find((e) => e.event.type === 'breaker_open')?.at ?? Number.POSITIVE_INFINITY;
      const probes = events.filter((e) => e.event.type === 'probe' && e.event.answered).length;
      // After it opened, only trials: at most one per answered probe.
      expect(quoteArrivals.filter((t) => t > openedAt).length).toBeLessThanOrEqual(probes);
    } finally {
      await partner.close();
    }
  });
});

describe('the API key', () => {
  it('a partner that echoes the key does not make the client return it', async () => {
    const server = await startScriptedServer([
      (headers) => ({ status: 400, body: JSON.stringify({ message: `bad key ${String(headers['x-api-key'])}`, error_code: 'x' }) }),
    ]);
    try {
      const client = createPartnerClient({ baseUrl: server.url, apiKey: CANARY });
      clients.push(client);
      const outcome = keep(await client.submit('quote', VALID_QUOTE));
      expect(server.requests[0]?.['x-api-key']).toBe(CANARY);
      expect(outcome.message).toContain('bad key [redacted]');
    } finally {
      await server.close();
    }
  });

  it('appears in no outcome, message or attempt of this file', () => {
    expect(seen.length).toBeGreaterThan(20);
    const text = JSON.stringify(seen);
    expect(text).toContain('attempts');
    expect(text).not.toContain(CANARY);
  });
});
