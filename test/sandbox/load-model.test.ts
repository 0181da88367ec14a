// The sandbox's load model as pure parts, with injected clocks: the cap schedule, window vs bucket,
// the capacity queue, the latency histogram, the log-normal draws and the new fault settings.
import { describe, expect, it } from 'vitest';
import {
  createNormalRandom, DEFAULT_FAULTS, drawDelayMs, MAX_DELAY_MS, mergeFaults,
} from '../../src/sandbox/faults.js';
import { LatencyHistogram } from '../../src/sandbox/histogram.js';
import { capAt, formatRpsSchedule, parseRpsSchedule, RateGate } from '../../src/sandbox/rate-limit.js';
import { MAX_TIMELINE_SECONDS, StatsRecorder } from '../../src/sandbox/stats.js';
import { WorkPool } from '../../src/sandbox/work-pool.js';

describe('parseRpsSchedule', () => {
  it.each([
    ['0:40,30:20', [{ atSeconds: 0, rps: 40 }, { atSeconds: 30, rps: 20 }]],
    [' 0 : 20 , 1:5 ', [{ atSeconds: 0, rps: 20 }, { atSeconds: 1, rps: 5 }]],
    ['10:5,20:0', [{ atSeconds: 10, rps: 5 }, { atSeconds: 20, rps: 0 }]],
    ['0:2.5,0.5:1', [{ atSeconds: 0, rps: 2.5 }, { atSeconds: 0.5, rps: 1 }]],
    ['', []],
  ])('reads %j', (text, steps) => {
    expect(parseRpsSchedule(text)).toEqual({ ok: true, steps });
  });

  it.each([
    ['40', '"40" is not seconds:cap'],
    ['0:40,', '"" is not seconds:cap'],
    ['0:40;30:20', '"0:40;30:20" is not seconds:cap'],
    ['0:-1', '"0:-1" is not seconds:cap'],
    ['0:40:1', '"0:40:1" is not seconds:cap'],
    ['a:40', '"a:40" is not seconds:cap'],
    ['0:40,30:20,30:10', 'seconds must increase, got 30 then 30'],
    ['30:20,0:40', 'seconds must increase, got 30 then 0'],
  ])('refuses %j: %s', (text, reason) => {
    expect(parseRpsSchedule(text)).toEqual({ ok: false, reason });
  });

  it('writes the canonical text back', () => {
    const parsed = parseRpsSchedule(' 0 : 40 , 30 : 20 ');
    expect(parsed.ok && formatRpsSchedule(parsed.steps)).toBe('0:40,30:20');
  });
});

describe('capAt', () => {
  const steps = [{ atSeconds: 5, rps: 40 }, { atSeconds: 30, rps: 20 }, { atSeconds: 60, rps: 0 }];
  it.each([
    [0, 7], [4.99, 7], [5, 40], [29.9, 40], [30, 20], [59, 20], [60, 0], [1e6, 0],
  ])('at %s s the cap is %s (7 before the first step)', (elapsed, cap) => {
    expect(capAt(steps, 7, elapsed)).toBe(cap);
  });
  it('is the fixed cap without a schedule', () => {
    expect(capAt([], 12, 100)).toBe(12);
  });
});

describe('RateGate', () => {
  /** Offers requests at the given times (ms, same clock for both) and returns what admit() said. */
  function offer(mode: 'window' | 'bucket', cap: number, burst: number, times: number[]): number[] {
    const gate = new RateGate();
    return times.map((t) => gate.admit(mode, cap, burst, t, t));
  }
  const admitted = (waits: number[]): number => waits.filter((wait) => wait === 0).length;

  it('window: at most cap per wall-clock second, and cap again as soon as the next second starts', () => {
    // 5 at 0.9 s, 5 more at 1.0 s: a window admits 2 × cap across a boundary.
    const waits = offer('window', 3, 0, [900, 900, 900, 900, 900, 1000, 1000, 1000, 1000, 1000]);
    expect(waits.map((wait) => wait === 0)).toEqual([true, true, true, false, false, true, true, true, false, false]);
    // The wait is the rest of the current second.
    expect(waits[3]).toBeCloseTo(0.1);
    expect(waits[8]).toBeCloseTo(1);
  });

  it('bucket: starts full (burst = cap by default), then admits at the cap rate', () => {
    const times = [...Array.from({ length: 6 }, () => 0), 100, 200, 300, 400];
    const waits = offer('bucket', 5, 0, times);
    // 5 tokens at once, the sixth refused; a new token every 200 ms.
    expect(waits.map((wait) => wait === 0)).toEqual([true, true, true, true, true, false, false, true, false, true]);
    expect(waits[5]).toBeCloseTo(0.2);
    expect(waits[6]).toBeCloseTo(0.1);
  });

  it('bucket with burst 1 smooths what a window lets through at once', () => {
    const burst = Array.from({ length: 10 }, () => 500);
    expect(admitted(offer('window', 10, 0, burst))).toBe(10);
    expect(admitted(offer('bucket', 10, 1, burst))).toBe(1);
    expect(admitted(offer('bucket', 10, 4, burst))).toBe(4);
  });

  it('bucket: a quiet spell refills no more than the burst', () => {
    const waits = offer('bucket', 2, 3, [0, 0, 0, 0, 60_000, 60_000, 60_000, 60_000]);
    expect(waits.map((wait) => wait === 0)).toEqual([true, true, true, false, true, true, true, false]);
  });

  it('bucket: the wait is the time to the next whole token', () => {
    const waits = offer('bucket', 0.25, 0, [0, 0]);
    expect(waits).toEqual([0, 4]);
  });

  it('reset() fills the bucket and restarts the window', () => {
    const gate = new RateGate();
    expect(gate.admit('bucket', 1, 0, 0, 0)).toBe(0);
    expect(gate.admit('bucket', 1, 0, 1, 1)).toBeGreaterThan(0);
    gate.reset();
    expect(gate.admit('bucket', 1, 0, 2, 2)).toBe(0);
    expect(gate.admit('window', 1, 0, 3, 3)).toBe(0);
    expect(gate.admit('window', 1, 0, 4, 4)).toBeGreaterThan(0);
    gate.reset();
    expect(gate.admit('window', 1, 0, 5, 5)).toBe(0);
  });
});

describe('WorkPool', () => {
  it('runs up to the limit at once, queues the rest in arrival order, and refuses past the queue limit', () => {
    const pool = new WorkPool(2, 2);
    const started: number[] = [];
    const results = [1, 2, 3, 4, 5].map((n) => pool.submit(() => started.push(n)));
    expect(results).toEqual([true, true, true, true, false]);
    expect(started).toEqual([1, 2]);
    expect(pool.stats()).toEqual({ busy: 2, queued: 2, peakBusy: 2, peakQueued: 2 });
    pool.release();
    expect(started).toEqual([1, 2, 3]);
    pool.release();
    pool.release();
    expect(started).toEqual([1, 2, 3, 4]);
    expect(pool.stats()).toEqual({ busy: 1, queued: 0, peakBusy: 2, peakQueued: 2 });
  });

  it('drains a long queue of jobs that finish at once without recursing once per job', () => {
    const pool = new WorkPool(1, 100_000);
    let done = 0;
    // The first job holds the worker; the others finish (release) as soon as they start.
    pool.submit(() => undefined);
    for (let i = 0; i < 50_000; i += 1) {
      pool.submit(() => {
        done += 1;
        pool.release();
      });
    }
    pool.release();
    expect(done).toBe(50_000);
    expect(pool.stats().queued).toBe(0);
  });

  it('starts waiting jobs when the limit is raised, and resetPeaks() starts from the present load', () => {
    const pool = new WorkPool(1, 10);
    const started: number[] = [];
    for (const n of [1, 2, 3]) pool.submit(() => started.push(n));
    pool.resize(3, 10);
    expect(started).toEqual([1, 2, 3]);
    pool.release();
    pool.resetPeaks();
    expect(pool.stats()).toEqual({ busy: 2, queued: 0, peakBusy: 2, peakQueued: 0 });
  });

  it('with no limit never queues, and clear() drops waiting jobs', () => {
    const open = new WorkPool(Number.POSITIVE_INFINITY, 0);
    for (let i = 0; i < 100; i += 1) expect(open.submit(() => undefined)).toBe(true);
    expect(open.stats()).toEqual({ busy: 100, queued: 0, peakBusy: 100, peakQueued: 0 });
    const full = new WorkPool(1, 5);
    let ran = 0;
    for (let i = 0; i < 4; i += 1) full.submit(() => (ran += 1));
    full.clear();
    full.release();
    expect(ran).toBe(1);
  });
});

describe('LatencyHistogram', () => {
  it('gives percentiles within 1% of the exact ones, and the exact mean and max', () => {
    const histogram = new LatencyHistogram();
    for (let ms = 1; ms <= 1000; ms += 1) histogram.record(ms);
    const summary = histogram.summary();
    expect(summary.count).toBe(1000);
    expect(summary.mean).toBe(500.5);
    expect(summary.max).toBe(1000);
    expect(Math.abs(summary.p50 / 500 - 1)).toBeLessThan(0.01);
    expect(Math.abs(summary.p90 / 900 - 1)).toBeLessThan(0.01);
    expect(Math.abs(summary.p99 / 990 - 1)).toBeLessThan(0.01);
  });

  it('is all zero when empty, and a single sample is every percentile', () => {
    expect(new LatencyHistogram().summary()).toEqual({ count: 0, mean: 0, p50: 0, p90: 0, p99: 0, max: 0 });
    const one = new LatencyHistogram();
    one.record(203.7);
    expect(one.summary()).toEqual({ count: 1, mean: 203.7, p50: 203.7, p90: 203.7, p99: 203.7, max: 203.7 });
  });

  it('keeps tiny and huge samples in range', () => {
    const histogram = new LatencyHistogram();
    histogram.record(0);
    histogram.record(0.001);
    histogram.record(10 * 3_600_000);
    const summary = histogram.summary();
    expect(summary.p50).toBeLessThanOrEqual(0.01);
    expect(summary.max).toBe(36_000_000);
    expect(summary.p99).toBeLessThanOrEqual(36_000_000);
  });
});

describe('log-normal latency draws', () => {
  const faults = { ...DEFAULT_FAULTS, latencyMs: 200, latencySigma: 0.43 };

  it('has latencyMs as its median and latencySigma as the spread of its logarithm', () => {
    const normal = createNormalRandom(9);
    const draws = Array.from({ length: 20_000 }, () => drawDelayMs(faults, 0, normal)).sort((a, b) => a - b);
    expect(draws[10_000]! / 200).toBeGreaterThan(0.97);
    expect(draws[10_000]! / 200).toBeLessThan(1.03);
    const logs = draws.map((ms) => Math.log(ms / 200));
    const mean = logs.reduce((sum, x) => sum + x, 0) / logs.length;
    const sd = Math.sqrt(logs.reduce((sum, x) => sum + (x - mean) ** 2, 0) / logs.length);
    expect(sd).toBeGreaterThan(0.41);
    expect(sd).toBeLessThan(0.45);
  });

  it('is reproducible per seed', () => {
    const a = createNormalRandom(3);
    const b = createNormalRandom(3);
    const c = createNormalRandom(4);
    const first = Array.from({ length: 10 }, () => a());
    expect(Array.from({ length: 10 }, () => b())).toEqual(first);
    expect(Array.from({ length: 10 }, () => c())).not.toEqual(first);
  });

  it('is the fixed latency plus jitter when sigma is 0 (no normal draw), and bounded', () => {
    const never = (): number => {
      throw new Error('drew a normal with sigma 0');
    };
    expect(drawDelayMs({ ...DEFAULT_FAULTS, latencyMs: 50, jitterMs: 10 }, 0.5, never)).toBe(55);
    expect(drawDelayMs({ ...faults, latencySigma: 3 }, 0, () => 40)).toBe(MAX_DELAY_MS);
  });
});

describe('mergeFaults: the load settings', () => {
  it('accepts each new setting and stores the schedule in its canonical text', () => {
    const merged = mergeFaults(DEFAULT_FAULTS, {
      rpsMode: 'bucket', rpsBurst: 3, rpsCapSchedule: ' 0:40, 30:20 ', capacity: 16, queueLimit: 50, latencySigma: 0.5,
    });
    expect(merged).toMatchObject({ rpsMode: 'bucket', rpsBurst: 3, rpsCapSchedule: '0:40,30:20', capacity: 16, queueLimit: 50, latencySigma: 0.5 });
  });

  it.each([
    [{ rpsMode: 'tokens' }, /rpsMode expects "window" or "bucket", got "tokens"/],
    [{ rpsBurst: -1 }, /rpsBurst expects a non-negative number/],
    [{ rpsCapSchedule: '0:40,x' }, /rpsCapSchedule expects "seconds:cap,…" .*; "x" is not seconds:cap/],
    [{ rpsCapSchedule: 40 }, /rpsCapSchedule expects .*; got 40/],
    [{ capacity: 1.5 }, /capacity expects a non-negative integer, got 1.5/],
    [{ queueLimit: '10' }, /queueLimit expects a non-negative integer, got "10"/],
    [{ latencySigma: 4 }, /latencySigma expects a number from 0 to 3, got 4/],
  ])('refuses %j', (partial, message) => {
    expect(() => mergeFaults(DEFAULT_FAULTS, partial)).toThrow(message);
  });
});

describe('StatsRecorder per-second counts', () => {
  const idleEngine = { busy: 0, queued: 0, peakBusy: 0, peakQueued: 0 };

  it('counts arrivals and endings in the wall-clock second they happen, up to the cap, and nothing from before a reset', () => {
    const stats = new StatsRecorder();
    const arrived = stats.epochMs;
    // Entry 0 is the wall-clock second of the start: it began `since % 1000` ms before it.
    const origin = arrived - (Date.parse(stats.snapshot(idleEngine).since) % 1000);
    stats.countArrival(arrived);
    stats.countEnding(arrived, origin + 999, 200);
    stats.countArrival(origin + 2500);
    stats.countEnding(arrived, origin + 2500, 429);
    stats.countEnding(arrived, origin + 2600, 0);
    stats.countEnding(arrived, origin + 3000, 503);
    stats.countArrival(origin + MAX_TIMELINE_SECONDS * 1000);
    stats.countEnding(arrived, origin + MAX_TIMELINE_SECONDS * 1000, 200);
    const idle = { received: 0, accepted: 0, throttled: 0, errors: 0 };
    expect(stats.snapshot(idleEngine).perSecond).toEqual([
      { second: 0, received: 1, accepted: 1, throttled: 0, errors: 0 },
      { second: 1, ...idle },
      { second: 2, received: 1, accepted: 0, throttled: 1, errors: 1 },
      { second: 3, ...idle, errors: 1 },
    ]);
    stats.reset();
    stats.countEnding(arrived, stats.epochMs + 5, 200);
    stats.recordLatency('quote', arrived, stats.epochMs + 5);
    const after = stats.snapshot(idleEngine);
    expect(after.perSecond).toEqual([]);
    expect(after.latencyMs.quote.count).toBe(0);
  });
});
