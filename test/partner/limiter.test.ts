import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { AdaptiveLimiter, FixedLimiter, type ConcurrencyLimiter, type ConcurrencySlot } from '../../src/partner/limiter/index.js';
import { PACE } from '../../src/partner/limiter/pace.js';
import { WINDOW } from '../../src/partner/limiter/window.js';
import { SimClock } from './_adaptive-sim.js';

async function slotOf(limiter: AdaptiveLimiter, signals?: AbortSignal[]): Promise<ConcurrencySlot> {
  const slot = await limiter.acquire(signals);
  if (slot === 'aborted') throw new Error('expected a slot');
  slot.sent();
  return slot;
}

/** Lets promise callbacks run (the limiter grants synchronously; callers resume in microtasks). */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('requests in flight per sample: the mean over its time and the most at once', () => {
  /** A clock the test moves by hand (the limiters' pacing timers are not used here). */
  const handClock = () => {
    const clock = { t: 0, now: () => clock.t, schedule: (run: () => void, ms: number) => { const h = setTimeout(run, ms); return () => clearTimeout(h); } };
    return clock;
  };
  it.each([
    ['adaptive', (clock: ReturnType<typeof handClock>) => new AdaptiveLimiter({ ceiling: 8, initialWindow: 8, clock })],
    ['fixed', (clock: ReturnType<typeof handClock>) => new FixedLimiter(8, clock.now)],
  ])('%s: a sample holds the time-weighted mean and the peak since the last take; the next starts from those still out', async (_name, make) => {
    const clock = handClock();
    const limiter: ConcurrencyLimiter = make(clock);
    expect(limiter.takeInFlight()).toEqual({ mean: 0, peak: 0 });
    const slots: ConcurrencySlot[] = [];
    for (let i = 0; i < 5; i += 1) {
      const slot = await limiter.acquire();
      if (slot === 'aborted') throw new Error('expected a slot');
      slots.push(slot);
    }
    slots.slice(0, 4).forEach((slot) => slot.sent()); // the fifth waits to send: not in flight
    clock.t = 100;
    slots.slice(0, 3).forEach((slot) => slot.release({ latencyMs: 100, signal: 'ok' }));
    clock.t = 200;
    // 4 in flight for 100 ms, then 1 for 100 ms. A run shorter than a sample ends with few or none
    // in flight: the count at the sample's end alone (1 here) would say little of it.
    expect(limiter.inFlight).toBe(1);
    expect(limiter.takeInFlight()).toEqual({ mean: 2.5, peak: 4 });
    expect(limiter.takeInFlight()).toEqual({ mean: 1, peak: 1 }); // no time passed: those out now
    clock.t = 300;
    slots[3]!.release({ latencyMs: 300, signal: 'ok' });
    clock.t = 400;
    expect(limiter.takeInFlight()).toEqual({ mean: 0.5, peak: 1 });
    clock.t = 500;
    expect(limiter.takeInFlight()).toEqual({ mean: 0, peak: 0 });
  });
});

describe('AdaptiveLimiter', () => {
  it('admits the initial window, then serves waiters in arrival order as slots come back', async () => {
    const clock = new SimClock();
    const limiter = new AdaptiveLimiter({ ceiling: 8, initialWindow: 2, clock });
    const a = await slotOf(limiter);
    await slotOf(limiter);
    expect(limiter.inFlight).toBe(2);

    const order: string[] = [];
    const third = limiter.acquire().then((s) => (order.push('third'), s));
    const fourth = limiter.acquire().then((s) => (order.push('fourth'), s));
    await settle();
    expect(order).toEqual([]);
    expect(limiter.snapshot().waiting).toBe(2);

    // Released unused: a slot back, nothing learned.
    a.release({ latencyMs: 0, signal: 'dropped' });
    await settle();
    expect(order).toEqual(['third']);
    expect(limiter.limit).toBe(2);
    (await third as ConcurrencySlot).release({ latencyMs: 0, signal: 'dropped' });
    (await fourth as ConcurrencySlot).sent();
    expect(order).toEqual(['third', 'fourth']);
    expect(limiter.inFlight).toBe(2);
  });

  it('counts in flight only requests sent: a slot waiting to send (--rate, the ledger) holds its place in the window but grows nothing', async () => {
    const clock = new SimClock();
    const limiter = new AdaptiveLimiter({ ceiling: 16, initialWindow: 4, clock });
    const taken = await Promise.all(Array.from({ length: 4 }, () => limiter.acquire()));
    const slots = taken.map((s) => (s === 'aborted' ? expect.unreachable() : s));
    expect(limiter.inFlight).toBe(0);
    let fifth = false;
    void limiter.acquire().then(() => (fifth = true));
    await settle();
    expect(fifth).toBe(false); // the window is full of slots, sent or not
    // One request out at a time (the others wait for --rate): the window is not in use, it stays.
    for (const slot of slots) {
      slot.sent();
      expect(limiter.inFlight).toBe(1);
      clock.schedule(() => {}, 100);
      await clock.runUntil(clock.now() + 100);
      slot.release({ latencyMs: 100, signal: 'ok' });
    }
    expect(limiter.limit).toBe(4);
  });

  it('grows the window as answers come back while it is in use, and shrinks it once errors fill a round', async () => {
    const clock = new SimClock();
    const limiter = new AdaptiveLimiter({ ceiling: 16, clock });
    expect(limiter.limit).toBe(WINDOW.initial);
    const slots = await Promise.all(Array.from({ length: 4 }, () => slotOf(limiter)));
    for (const slot of slots) slot.release({ latencyMs: 20, signal: 'ok' });
    // The first request left with the window a quarter used: its answer grows nothing.
    expect(limiter.limit).toBe(4 + 3 * WINDOW.slowStartGrowth);
    // One error is no overload (a partner fails now and then whatever the load) …
    (await slotOf(limiter)).release({ latencyMs: 20, signal: 'error' });
    expect(limiter.limit).toBe(5.5);
    // The first round measures the partner's own share of errors (here 1 in 16) …
    for (let i = 0; i < WINDOW.roundAnswers; i += 1) (await slotOf(limiter)).release({ latencyMs: 20, signal: 'ok' });
    const before = limiter.limit;
    // … errors well over it are overload: the window is cut, once for the requests out.
    const out = await Promise.all(Array.from({ length: 5 }, () => slotOf(limiter)));
    for (const slot of out) slot.release({ latencyMs: 20, signal: 'error' });
    expect(limiter.limit).toBeCloseTo(before * WINDOW.backoff, 9);
  });

  it('does not measure quotes against agent validations\' few milliseconds (timed: false): quotes at 200 ms are no queue', async () => {
    const lowestWindow = async (validationsTimed: boolean): Promise<number> => {
      const clock = new SimClock();
      const limiter = new AdaptiveLimiter({ ceiling: 32, clock });
      // One validation per agent first, answered in 2 ms; then the quotes, 200 ms each (the partner's own pace).
      for (let i = 0; i < 20; i += 1) (await slotOf(limiter)).release({ latencyMs: 2, signal: 'ok', ...(validationsTimed ? {} : { timed: false }) });
      let lowest = limiter.limit;
      for (let i = 0; i < 200; i += 1) {
        (await slotOf(limiter)).release({ latencyMs: 200, signal: 'ok' });
        lowest = Math.min(lowest, limiter.limit);
      }
      return lowest;
    };
    expect(await lowestWindow(false)).toBeGreaterThanOrEqual(WINDOW.initial);
    // Timed, the validations set a 2 ms baseline and every round of quotes reads as queueing: cut.
    expect(await lowestWindow(true)).toBeLessThan(WINDOW.initial);
  });

  it('ignores a second release of the same slot', async () => {
    const limiter = new AdaptiveLimiter({ ceiling: 4, clock: new SimClock() });
    const slot = await slotOf(limiter);
    slot.release({ latencyMs: 5, signal: 'error' });
    const after = limiter.limit;
    slot.release({ latencyMs: 5, signal: 'error' });
    expect(limiter.inFlight).toBe(0);
    expect(limiter.limit).toBe(after);
  });

  it('answers aborted at once for an aborted signal, and lets an aborted waiter leave the queue', async () => {
    const limiter = new AdaptiveLimiter({ ceiling: 4, initialWindow: 1, clock: new SimClock() });
    expect(await limiter.acquire([AbortSignal.abort()])).toBe('aborted');

    const held = await slotOf(limiter);
    const stop = new AbortController();
    const waiting = limiter.acquire([undefined, stop.signal]);
    const behind = limiter.acquire();
    stop.abort();
    expect(await waiting).toBe('aborted');
    expect(limiter.snapshot().waiting).toBe(1);
    held.release({ latencyMs: 5, signal: 'dropped' });
    expect(await behind).not.toBe('aborted');
  });

  it('keeps one abort listener per signal however many wait on it, and none once they are gone', async () => {
    const limiter = new AdaptiveLimiter({ ceiling: 2, initialWindow: 1, clock: new SimClock() });
    const held = await slotOf(limiter);
    const run = new AbortController();
    const other = new AbortController();
    const waiters = Array.from({ length: 40 }, (_, i) => limiter.acquire(i % 2 === 0 ? [run.signal] : [run.signal, other.signal]));
    expect(getEventListeners(run.signal, 'abort')).toHaveLength(1);
    expect(getEventListeners(other.signal, 'abort')).toHaveLength(1);

    // The first two waiters are served in turn; the others still wait, so the listeners stay.
    held.release({ latencyMs: 1, signal: 'dropped' });
    const first = await waiters[0];
    if (first === undefined || first === 'aborted') throw new Error('the first waiter should have had a slot');
    first.release({ latencyMs: 1, signal: 'dropped' });
    expect(await waiters[1]).not.toBe('aborted');
    expect(getEventListeners(run.signal, 'abort')).toHaveLength(1);

    // Aborting one signal ends its waiters (the odd ones left: 19) and removes its listener.
    other.abort();
    await settle();
    expect(limiter.snapshot().waiting).toBe(19);
    expect(getEventListeners(other.signal, 'abort')).toHaveLength(0);
    expect(getEventListeners(run.signal, 'abort')).toHaveLength(1);

    run.abort();
    const results = await Promise.all(waiters.slice(2));
    expect(results.every((r) => r === 'aborted')).toBe(true);
    expect(getEventListeners(run.signal, 'abort')).toHaveLength(0);
    expect(limiter.snapshot().waiting).toBe(0);
  });

  it('paces requests once 429s are a fair share of the answers, and hands slots out on schedule', async () => {
    const clock = new SimClock();
    const limiter = new AdaptiveLimiter({ ceiling: 32, initialWindow: 32, clock });
    expect(limiter.snapshot().rate).toBeNull();
    // One second of sends, then half of them answered 429.
    const slots: ConcurrencySlot[] = [];
    for (let i = 0; i < 32; i += 1) {
      slots.push(await slotOf(limiter));
      await clock.runUntil(clock.now() + 30);
    }
    for (const [i, slot] of slots.entries()) slot.release({ latencyMs: 100, signal: i % 2 === 0 ? 'ok' : 'throttled' });
    // Paced just below what the partner accepted (16 of 32, counted over a second at least).
    const rate = limiter.snapshot().rate;
    expect(rate).not.toBeNull();
    expect(rate).toBeGreaterThan(2);
    expect(rate).toBeLessThanOrEqual(16 * PACE.beta);

    // Ten callers at once: the first goes now, the others one pacing interval apart.
    const grantedAt: number[] = [];
    const callers = Array.from({ length: 10 }, () => limiter.acquire().then((slot) => {
      grantedAt.push(clock.now());
      return slot;
    }));
    await clock.runUntil(clock.now() + 5000);
    await Promise.all(callers);
    const gaps = grantedAt.slice(1).map((t, i) => t - (grantedAt[i] as number));
    for (const gap of gaps) expect(gap).toBeCloseTo(1000 / (rate as number), 6);
  });

  it('counts rates over a second at least: a cap reached in the first half-second is not taken for twice itself', async () => {
    const clock = new SimClock();
    const limiter = new AdaptiveLimiter({ ceiling: 40, initialWindow: 40, clock });
    // 40 sends in the run's first 400 ms; a cap of 20/s admits the first 20, then answers 429.
    const slots: ConcurrencySlot[] = [];
    for (let i = 0; i < 40; i += 1) {
      slots.push(await slotOf(limiter));
      await clock.runUntil(clock.now() + 10);
    }
    await clock.runUntil(500);
    for (const [i, slot] of slots.entries()) slot.release({ latencyMs: 100, signal: i < 20 ? 'ok' : 'throttled' });
    const rate = limiter.snapshot().rate;
    expect(rate).not.toBeNull();
    // 40 sent and 20 accepted within one second: a pace at or below 40/s (over the half-second it would be 80).
    expect(rate).toBeLessThanOrEqual(40);
  });
});

describe('AdaptiveLimiter warm start', () => {
  it('starts where an earlier run settled and grows by one per round trip, not by slow start', async () => {
    const grow = async (warm: boolean): Promise<number> => {
      const clock = new SimClock();
      const limiter = new AdaptiveLimiter({ ceiling: 64, initialWindow: 6, warm, clock });
      expect(limiter.limit).toBe(6);
      // Three round trips of prompt, clean answers with every slot in use.
      for (let round = 0; round < 3; round += 1) {
        const slots = await Promise.all(Array.from({ length: Math.floor(limiter.limit) }, () => slotOf(limiter)));
        await Promise.all([clock.sleep(100), clock.run(10)]);
        for (const slot of slots) slot.release({ latencyMs: 100, signal: 'ok' });
        await settle();
      }
      return limiter.limit;
    };
    const warm = await grow(true);
    const cold = await grow(false);
    expect(warm).toBeGreaterThan(6);
    expect(warm).toBeLessThanOrEqual(9);
    expect(cold).toBeGreaterThan(warm);
  });

  it('with a pace an earlier run settled at, paces at it from the first request', async () => {
    const clock = new SimClock();
    const limiter = new AdaptiveLimiter({ ceiling: 32, initialWindow: 8, warm: true, pace: 40, clock });
    expect(limiter.rate).toBe(40);
    expect(limiter.snapshot().rate).toBe(limiter.rate);
    // Slots are handed out at the pace, not all at once: 40/s is one every 25 ms.
    const first = await slotOf(limiter);
    let second: ConcurrencySlot | undefined;
    void slotOf(limiter).then((slot) => {
      second = slot;
    });
    await clock.runUntil(20);
    expect(second).toBeUndefined();
    await clock.runUntil(30);
    await settle();
    expect(second).toBeDefined();
    first.release({ latencyMs: 200, signal: 'ok' });
    second?.release({ latencyMs: 200, signal: 'ok' });
    expect(new AdaptiveLimiter({ ceiling: 32 }).rate).toBeNull();
  });
});

describe('AdaptiveLimiter: what other processes and the partner\'s headers can give it', () => {
  it('exports what its pace learned as a plain object, and a limiter started from it paces alike', async () => {
    const clock = new SimClock();
    const first = new AdaptiveLimiter({ ceiling: 32, initialWindow: 8, warm: true, pace: 30, clock });
    const memory = first.paceMemory();
    // Plain data (it may go through JSON, or a database row), nothing of the clock or the queue.
    expect(JSON.parse(JSON.stringify(memory))).toEqual({ ...memory, pausedUntil: null });
    expect(memory).toMatchObject({ rate: 30, lastMaxRate: 30, ownShare: 0 });
    const second = new AdaptiveLimiter({ ceiling: 32, clock, paceMemory: { ...memory, ownShare: 0.1 } });
    expect(second.rate).toBe(30);
    expect(second.paceMemory().ownShare).toBe(0.1);
    expect(new AdaptiveLimiter({ ceiling: 32, clock, paceMemory: { rate: null } }).rate).toBeNull();
    expect(() => new AdaptiveLimiter({ ceiling: 32, clock, paceMemory: { rate: -1 } })).toThrow(RangeError);
  });

  it('keeps sends within a ceiling the partner announces, whether or not it has learned a pace', async () => {
    const clock = new SimClock();
    const limiter = new AdaptiveLimiter({ ceiling: 8, initialWindow: 8, clock });
    limiter.announceCeiling(10);
    expect(limiter.rate).toBe(10);
    const grantedAt: number[] = [];
    const waiting = Array.from({ length: 4 }, () => limiter.acquire().then((slot) => {
      grantedAt.push(clock.now());
      return slot;
    }));
    await clock.runUntil(1000);
    const slots = await Promise.all(waiting);
    expect(grantedAt).toHaveLength(4);
    for (const [i, at] of grantedAt.entries()) expect(at).toBeCloseTo(i * 100, 6);
    for (const slot of slots) if (slot !== 'aborted') slot.release({ latencyMs: 0, signal: 'dropped' });
    // A learned pace below the ceiling binds first; an absent or unusable ceiling is no limit.
    const paced = new AdaptiveLimiter({ ceiling: 8, clock, pace: 4 });
    paced.announceCeiling(10);
    expect(paced.rate).toBe(4);
    paced.announceCeiling(Number.NaN);
    limiter.announceCeiling(null);
    expect(limiter.rate).toBeNull();
  });

  it('lets no request leave before a pause ends, for every caller', async () => {
    const clock = new SimClock();
    const limiter = new AdaptiveLimiter({ ceiling: 8, initialWindow: 8, clock });
    limiter.pauseUntil(clock.now() + 500);
    const grantedAt: number[] = [];
    const waiting = Array.from({ length: 3 }, () => limiter.acquire().then((slot) => {
      grantedAt.push(clock.now());
      return slot;
    }));
    await clock.runUntil(499);
    expect(grantedAt).toEqual([]);
    await clock.runUntil(600);
    await Promise.all(waiting);
    expect(grantedAt).toEqual([500, 500, 500]);
    expect(limiter.paceMemory().pausedUntil).toBe(500);
    // An earlier end does not shorten it.
    limiter.pauseUntil(100);
    expect(limiter.paceMemory().pausedUntil).toBe(500);
  });
});
