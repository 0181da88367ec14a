/** The breaker's rules as a table of event sequences, with an injected clock (no real waiting but the give-up timer). */
import { afterEach, describe, expect, it } from 'vitest';
import { CircuitBreaker, FixedLimiter, RateLimiter, type BreakerPermit } from '../../src/partner/index.js';

const made: CircuitBreaker[] = [];
afterEach(() => {
  for (const b of made.splice(0)) b.dispose();
});

function makeBreaker(overrides: Partial<ConstructorParameters<typeof CircuitBreaker>[0]> = {}) {
  let now = 0;
  const breaker = new CircuitBreaker({
    openAfterFailures: 3, openAfterInDoubt: 2, cooldownMs: 1000, maxCooldownMs: 4000, maxOutageMs: 0, now: () => now, ...overrides,
  });
  made.push(breaker);
  return { breaker, advance: (ms: number) => { now += ms; }, now: () => now };
}

async function permitOf(breaker: CircuitBreaker): Promise<BreakerPermit> {
  const permit = await breaker.acquire();
  if (typeof permit === 'string') throw new Error(`expected a permit, got ${permit}`);
  return permit;
}

/** True when acquire() would wait (checked without blocking the test: an aborted wait says 'aborted'). */
async function blocks(breaker: CircuitBreaker): Promise<boolean> {
  const controller = new AbortController();
  const attempt = breaker.acquire([controller.signal]);
  controller.abort();
  const got = await attempt;
  if (typeof got !== 'string') breaker.release(got);
  return got === 'aborted';
}

describe('CircuitBreaker', () => {
  it.each([
    // events (f = failure, d = in-doubt failure, s = success), state after, consecutive failures
    ['f f', 'closed', 2],
    ['f f f', 'open', 3],
    ['f f s f f', 'closed', 2],
    ['d d', 'open', 2], // as many sends in doubt in a row as the concurrency
    ['d f d', 'open', 3], // in-doubt sends count as failures too
    ['d s d', 'closed', 1],
  ] as const)('%s → %s', async (events, state, failures) => {
    const { breaker } = makeBreaker();
    for (const e of events.split(' ')) {
      const permit = await permitOf(breaker);
      if (e === 's') breaker.recordSuccess(permit);
      else breaker.recordFailure(permit, { inDoubt: e === 'd' });
      if (breaker.state !== 'closed') break;
    }
    expect(breaker.state).toBe(state);
    expect(breaker.consecutiveFailures).toBe(failures);
  });

  it('says once why it opened, blocks every call while open, and ignores late failures of calls that left before', async () => {
    const { breaker } = makeBreaker();
    const before = await permitOf(breaker);
    const openings = [];
    for (let i = 0; i < 3; i += 1) openings.push(breaker.recordFailure(await permitOf(breaker), { detail: 'http_500' }));
    expect(openings.slice(0, 2)).toEqual([null, null]);
    expect(openings[2]?.reason).toBe('3 consecutive transient failures (last: http_500)');
    expect(await blocks(breaker)).toBe(true);
    expect(breaker.recordFailure(before)).toBeNull();
    expect(breaker.consecutiveFailures).toBe(3);
    expect(breaker.allows(before)).toBe(false);
  });

  it('a late success of a call that left before it opened closes it: the partner answers', async () => {
    const { breaker } = makeBreaker();
    const before = await permitOf(breaker);
    for (let i = 0; i < 3; i += 1) breaker.recordFailure(await permitOf(breaker));
    expect(breaker.recordSuccess(before)).not.toBeNull();
    expect(breaker.state).toBe('closed');
    expect(await blocks(breaker)).toBe(false);
  });

  it('an answered probe lets exactly one trial call through; its success closes it', async () => {
    const { breaker } = makeBreaker();
    for (let i = 0; i < 3; i += 1) breaker.recordFailure(await permitOf(breaker));
    expect(breaker.probeSucceeded({ closes: false })).toBeNull();
    expect(breaker.state).toBe('half_open');
    const trial = await permitOf(breaker);
    expect(trial.trial).toBe(true);
    expect(await blocks(breaker)).toBe(true); // a second caller waits for the trial's result
    expect(breaker.recordSuccess(trial)).not.toBeNull();
    expect(breaker.state).toBe('closed');
  });

  it('a failed trial opens it again and waits longer before the next probe', async () => {
    const { breaker, now } = makeBreaker();
    for (let i = 0; i < 3; i += 1) breaker.recordFailure(await permitOf(breaker));
    expect(breaker.nextProbeAt - now()).toBe(1000);
    breaker.probeSucceeded({ closes: false });
    breaker.recordFailure(await permitOf(breaker));
    expect(breaker.state).toBe('open');
    expect(breaker.nextProbeAt - now()).toBe(2000);
    breaker.probeFailed();
    expect(breaker.nextProbeAt - now()).toBe(4000);
    breaker.probeFailed();
    expect(breaker.nextProbeAt - now()).toBe(4000); // maxCooldownMs
  });

  it('a released trial (unused: its call was stopped) lets the next caller be the trial', async () => {
    const { breaker } = makeBreaker();
    for (let i = 0; i < 3; i += 1) breaker.recordFailure(await permitOf(breaker));
    breaker.probeSucceeded({ closes: false });
    const trial = await permitOf(breaker);
    const next = breaker.acquire();
    breaker.release(trial);
    expect(await next).toEqual({ trial: true });
  });

  it('the prober closes the validation breaker directly (the probe is a validation)', async () => {
    const { breaker } = makeBreaker();
    for (let i = 0; i < 3; i += 1) breaker.recordFailure(await permitOf(breaker));
    expect(breaker.probeSucceeded({ closes: true })).not.toBeNull();
    expect(breaker.state).toBe('closed');
  });

  it('gives up after maxOutageMs without a success, ending every wait; a recovery in time resets the clock', async () => {
    const { breaker } = makeBreaker({ maxOutageMs: 60 });
    for (let i = 0; i < 3; i += 1) breaker.recordFailure(await permitOf(breaker));
    expect(breaker.opening?.giveUpAt).toBe(60);
    const waiting = breaker.acquire();
    expect(await waiting).toBe('gave_up');
    expect(breaker.gaveUp).toBe(true);
    expect(breaker.gaveUpSignal.aborted).toBe(true);
    expect(breaker.recordSuccess()).toBeNull(); // it never closes again

    const other = makeBreaker({ maxOutageMs: 60 }).breaker;
    for (let i = 0; i < 3; i += 1) other.recordFailure(await permitOf(other));
    other.recordSuccess();
    await new Promise((r) => setTimeout(r, 120));
    expect(other.gaveUp).toBe(false);
    expect(other.state).toBe('closed');
  });
});

describe('CircuitBreaker: refusals (429), a partner that takes nothing', () => {
  it.each([
    // events: r = refusal, s = success, f = failure, +N = N ms pass; openAfterFailures; state after
    ['10 refusals in a row within 4 s: a rate cap, not an outage', 'r r r r r r r r r +4000 r', 10, 'closed'],
    ['10 refusals in a row over 5 s, none accepted', 'r r r r r r r r r +5000 r', 10, 'open'],
    ['9 refusals over 6 s: too few', 'r r r r r r r r +6000 r', 10, 'closed'],
    ['a success between them starts the streak again', 'r r r r r +5000 s r r r r r r r r r r', 10, 'closed'],
    ['a 5xx between them does not: the partner accepted nothing', 'r r r r f r r r r +5000 r r', 10, 'open'],
    ['refusals do not reset the failures that open it', 'f r f r f', 3, 'open'],
  ] as const)('%s', async (_name, events, openAfterFailures, state) => {
    const { breaker, advance } = makeBreaker({ openAfterFailures });
    for (const e of events.split(' ')) {
      if (e.startsWith('+')) {
        advance(Number(e.slice(1)));
        continue;
      }
      const permit = await permitOf(breaker);
      if (e === 's') breaker.recordSuccess(permit);
      else if (e === 'f') breaker.recordFailure(permit);
      else breaker.recordRefusal(permit, { detail: 'rate_limited' });
    }
    expect(breaker.state).toBe(state);
  });

  it('opens saying so, counts the outage from the first refusal, and gives up as refused', async () => {
    const { breaker, advance } = makeBreaker({ openAfterFailures: 3, maxOutageMs: 5060 });
    const closed = breaker.closedSignal;
    breaker.recordRefusal(await permitOf(breaker));
    advance(2500);
    breaker.recordRefusal(await permitOf(breaker));
    advance(2500);
    const opening = breaker.recordRefusal(await permitOf(breaker), { detail: 'quota_exceeded' });
    expect(opening).toEqual({ reason: '3 requests in a row refused with 429 over 5 s, none accepted (last: quota_exceeded)', cause: 'refusals', giveUpAt: 5060 });
    expect(breaker.outageMs()).toBe(5000);
    // Callers still waiting for a slot with a permit of the closed breaker are told.
    expect(closed.aborted).toBe(true);
    expect(await blocks(breaker)).toBe(true);
    await new Promise((r) => setTimeout(r, 200)); // the give-up timer: 60 ms of real time left
    expect(breaker.gaveUp).toBe(true);
    expect(breaker.gaveUpBecause).toBe('refused');
  });

  it('a refused trial opens it again, waiting longer; a Retry-After puts the next probe off until then', async () => {
    const { breaker, advance, now } = makeBreaker({ openAfterFailures: 2, openAfterRefusingMs: 0 });
    breaker.recordRefusal(await permitOf(breaker));
    breaker.recordRefusal(await permitOf(breaker));
    expect(breaker.state).toBe('open');
    expect(breaker.nextProbeAt - now()).toBe(1000);
    advance(1000);
    breaker.probeSucceeded({ closes: false });
    const trial = await permitOf(breaker);
    expect(trial.trial).toBe(true);
    breaker.recordRefusal(trial);
    expect(breaker.state).toBe('open');
    expect(breaker.nextProbeAt - now()).toBe(2000);
    breaker.probeSucceeded({ closes: false });
    breaker.recordRefusal(await permitOf(breaker), { retryAfterMs: 60_000 });
    expect(breaker.nextProbeAt - now()).toBe(60_000);
    breaker.probeFailed();
    expect(breaker.nextProbeAt - now()).toBe(60_000);
  });

  it('counts what it accepted, and gives a fresh closed signal once it closes', async () => {
    const { breaker } = makeBreaker({ openAfterFailures: 1, openAfterRefusingMs: 0 });
    expect(breaker.accepted).toBe(0);
    breaker.recordSuccess(await permitOf(breaker));
    expect(breaker.accepted).toBe(1);
    const first = breaker.closedSignal;
    breaker.recordRefusal(await permitOf(breaker));
    expect(first.aborted).toBe(true);
    expect(breaker.refusedSince).toBe(0);
    breaker.probeSucceeded({ closes: false });
    breaker.recordSuccess(await permitOf(breaker));
    expect(breaker.state).toBe('closed');
    expect(breaker.accepted).toBe(2);
    expect(breaker.refusedSince).toBeNull();
    expect(breaker.closedSignal.aborted).toBe(false);
  });
});

describe('CircuitBreaker: long outages', () => {
  it('a --max-outage beyond what a timer holds (30 days) never fires early', async () => {
    const { breaker } = makeBreaker({ maxOutageMs: 30 * 86_400_000 });
    for (let i = 0; i < 3; i += 1) breaker.recordFailure(await permitOf(breaker));
    expect(breaker.opening?.giveUpAt).toBe(Number.POSITIVE_INFINITY);
    await new Promise((r) => setTimeout(r, 20));
    expect(breaker.gaveUp).toBe(false);
  });
});

describe('CircuitBreaker: the in-doubt budget of an outage', () => {
  it('gives up once twice openAfterInDoubt sends ended in doubt since the outage began (late ones and failed trials count)', async () => {
    const { breaker } = makeBreaker({ openAfterInDoubt: 2, openAfterFailures: 0 });
    const late = await permitOf(breaker);
    breaker.recordFailure(await permitOf(breaker), { inDoubt: true });
    breaker.recordFailure(await permitOf(breaker), { inDoubt: true });
    expect(breaker.state).toBe('open');
    breaker.recordFailure(late, { inDoubt: true }); // sent before it opened: 3 in doubt
    expect(breaker.gaveUp).toBe(false);
    breaker.probeSucceeded({ closes: false });
    breaker.recordFailure(await permitOf(breaker), { inDoubt: true }); // a trial that hung: 4
    expect(breaker.gaveUp).toBe(true);
    expect(breaker.gaveUpBecause).toBe('in_doubt');
  });

  it('a recovery resets the budget', async () => {
    const { breaker } = makeBreaker({ openAfterInDoubt: 2, openAfterFailures: 0 });
    for (let round = 0; round < 3; round += 1) {
      breaker.recordFailure(await permitOf(breaker), { inDoubt: true });
      breaker.recordFailure(await permitOf(breaker), { inDoubt: true });
      expect(breaker.state).toBe('open');
      breaker.probeSucceeded({ closes: false });
      breaker.recordSuccess(await permitOf(breaker));
      expect(breaker.state).toBe('closed');
    }
    expect(breaker.gaveUp).toBe(false);
  });
});

describe('RateLimiter', () => {
  it('spaces slots 1000/rate ms apart and frees them as time passes', () => {
    let now = 0;
    const limiter = new RateLimiter(4, () => now);
    expect([limiter.reserve(), limiter.reserve(), limiter.reserve()]).toEqual([0, 250, 500]);
    now = 2000;
    expect(limiter.reserve()).toBe(0);
    expect(new RateLimiter(0, () => now).reserve()).toBe(0);
    expect(() => new RateLimiter(-1)).toThrow(RangeError);
  });
});

describe('FixedLimiter', () => {
  it('hands out its slots in order, and an aborted waiter leaves the queue', async () => {
    const limiter = new FixedLimiter(2);
    const a = await limiter.acquire();
    const b = await limiter.acquire();
    if (a === 'aborted' || b === 'aborted') throw new Error('expected slots');
    expect(limiter.inFlight).toBe(0); // taken, not sent
    a.sent();
    b.sent();
    expect(limiter.inFlight).toBe(2);
    const controller = new AbortController();
    const aborted = limiter.acquire([controller.signal]);
    const third = limiter.acquire();
    controller.abort();
    expect(await aborted).toBe('aborted');
    a.release({ latencyMs: 1, signal: 'ok' });
    a.release({ latencyMs: 1, signal: 'ok' }); // twice: no effect
    const slot = await third;
    if (slot === 'aborted') throw new Error('expected a slot');
    slot.sent();
    expect(limiter.inFlight).toBe(2);
    expect(() => new FixedLimiter(0)).toThrow(RangeError);
  });
});
