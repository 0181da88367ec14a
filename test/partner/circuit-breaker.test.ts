import { describe, expect, it } from 'vitest';
import { CircuitBreaker, PauseGate, RateLimiter } from '../../src/partner/index.js';

function makeBreaker(overrides: Partial<ConstructorParameters<typeof CircuitBreaker>[0]> = {}) {
  let now = 0;
  const breaker = new CircuitBreaker({
    openAfter: 3, cooldownMs: 1000, maxCooldownMs: 4000, maxConsecutiveFailures: 6, now: () => now, ...overrides,
  });
  return { breaker, advance: (ms: number) => { now += ms; } };
}

async function permitOf(breaker: CircuitBreaker) {
  const permit = await breaker.acquire();
  if (typeof permit === 'string') throw new Error(`expected a permit, got ${permit}`);
  return permit;
}

describe('CircuitBreaker', () => {
  it('opens after openAfter consecutive failures, lets one probe through, closes on success', async () => {
    const { breaker, advance } = makeBreaker();
    for (let i = 0; i < 3; i += 1) breaker.recordFailure(await permitOf(breaker));
    expect(breaker.state).toBe('open');

    // A request admitted before it opened fails late: not counted again.
    breaker.recordFailure({ probe: false });
    expect(breaker.consecutiveFailures).toBe(3);

    const aborted = new AbortController();
    const waiting = breaker.acquire([aborted.signal]);
    aborted.abort();
    expect(await waiting).toBe('aborted');

    advance(1000);
    const probe = await permitOf(breaker);
    expect(probe.probe).toBe(true);
    expect(breaker.state).toBe('half_open');

    // A second caller waits for the probe's result.
    let second: unknown;
    const secondPromise = breaker.acquire().then((p) => { second = p; });
    await Promise.resolve();
    expect(second).toBeUndefined();
    breaker.recordSuccess(probe);
    await secondPromise;
    expect(second).toEqual({ probe: false });
    expect(breaker.state).toBe('closed');
    expect(breaker.consecutiveFailures).toBe(0);
  });

  it('doubles the cool-down after a failed probe and halts at maxConsecutiveFailures', async () => {
    const { breaker, advance } = makeBreaker();
    for (let i = 0; i < 3; i += 1) breaker.recordFailure(await permitOf(breaker));
    const cooldowns: number[] = [];
    for (let probeNo = 0; probeNo < 3; probeNo += 1) {
      // Find the cool-down by advancing in 500 ms steps: bounded by 20 steps.
      let waited = 0;
      for (let step = 0; step < 20; step += 1) {
        advance(500);
        waited += 500;
        const controller = new AbortController();
        const attempt = breaker.acquire([controller.signal]);
        controller.abort();
        const got = await attempt;
        if (typeof got !== 'string') {
          cooldowns.push(waited);
          breaker.recordFailure(got);
          break;
        }
      }
    }
    expect(cooldowns).toEqual([1000, 2000, 4000]);
    expect(breaker.halted).toBe(true);
    expect(await breaker.acquire()).toBe('halted');
    expect(breaker.haltSignal.aborted).toBe(true);
  });

  it('a released probe (429) lets the next caller probe', async () => {
    const { breaker, advance } = makeBreaker();
    for (let i = 0; i < 3; i += 1) breaker.recordFailure(await permitOf(breaker));
    advance(1000);
    const probe = await permitOf(breaker);
    const next = breaker.acquire();
    breaker.release(probe);
    expect(await next).toEqual({ probe: true });
  });

  it('a success resets the count, so scattered failures never open it', async () => {
    const { breaker } = makeBreaker();
    for (let i = 0; i < 10; i += 1) {
      breaker.recordFailure(await permitOf(breaker));
      breaker.recordFailure(await permitOf(breaker));
      breaker.recordSuccess(await permitOf(breaker));
    }
    expect(breaker.state).toBe('closed');
    expect(breaker.halted).toBe(false);
  });
});

describe('CircuitBreaker with the production defaults', () => {
  it('survives a 60-second outage at concurrency 64 and closes when the partner is back', async () => {
    const { breaker, advance } = makeBreaker({ openAfter: 5, cooldownMs: 1000, maxCooldownMs: 30_000, maxConsecutiveFailures: 50 });
    // 64 requests are in flight when the outage starts; all of them fail.
    const inFlight = await Promise.all(Array.from({ length: 64 }, () => permitOf(breaker)));
    for (const permit of inFlight) breaker.recordFailure(permit);
    expect(breaker.state).toBe('open');
    expect(breaker.consecutiveFailures).toBe(5);

    let probes = 0;
    for (let elapsed = 0; elapsed < 60_000; elapsed += 100) {
      advance(100);
      const controller = new AbortController();
      const attempt = breaker.acquire([controller.signal]);
      controller.abort();
      const got = await attempt;
      if (typeof got !== 'string') {
        probes += 1;
        breaker.recordFailure(got);
      }
    }
    // Probes at about 1, 3, 7, 15, 31 and 61 s: far below the 50 that would halt.
    expect(probes).toBeLessThanOrEqual(6);
    expect(breaker.halted).toBe(false);
    advance(30_000);
    breaker.recordSuccess(await permitOf(breaker));
    expect(breaker.state).toBe('closed');
  });
});

describe('RateLimiter and PauseGate', () => {
  it('spaces slots 1000/rate ms apart and frees them as time passes', () => {
    let now = 0;
    const limiter = new RateLimiter(4, () => now);
    expect([limiter.reserve(), limiter.reserve(), limiter.reserve()]).toEqual([0, 250, 500]);
    now = 2000;
    expect(limiter.reserve()).toBe(0);
    expect(new RateLimiter(0, () => now).reserve()).toBe(0);
    expect(() => new RateLimiter(-1)).toThrow(RangeError);
  });

  it('a pause only ever moves forward', () => {
    let now = 0;
    const gate = new PauseGate(() => now);
    gate.pauseFor(2000);
    gate.pauseFor(500);
    expect(gate.remainingMs).toBe(2000);
    now = 1500;
    expect(gate.remainingMs).toBe(500);
    now = 2500;
    expect(gate.remainingMs).toBe(0);
  });
});
