import { describe, expect, it } from 'vitest';
import { AdaptiveLimiter } from '../../src/partner/index.js';
import { jobShare, joiningShare, LIVE_MS, type WorkerLimit } from '../../src/partner/limiter/share.js';

const NOW = 100_000;
const w = (pace: number | null, limit = 8, ageMs = 0): WorkerLimit => ({ limit, pace, at: NOW - ageMs });

describe('jobShare: each worker paces at an even share of what the live workers pace at together', () => {
  it.each([
    { name: 'alone, pacing', others: [], own: w(30), share: { workers: 1, pace: 30, limit: 8 } },
    { name: 'three pacing unevenly: the sum divided evenly', others: [w(10), w(14, 12)], own: w(16, 6), share: { workers: 3, pace: 40 / 3, limit: 12 } },
    { name: 'one cut (a 429): the others follow down', others: [w(13.3), w(13.3)], own: w(9.5), share: { workers: 3, pace: (13.3 + 13.3 + 9.5) / 3, limit: 8 } },
    { name: 'a worker not pacing: no rate is shared yet', others: [w(null), w(14)], own: w(16), share: { workers: 3, pace: null, limit: 8 } },
    { name: 'this worker not pacing', others: [w(14)], own: w(null), share: { workers: 2, pace: null, limit: 8 } },
    { name: 'a worker silent past LIVE_MS has stopped: its share goes to the others', others: [w(20, 8, LIVE_MS + 1), w(12)], own: w(14), share: { workers: 2, pace: 13, limit: 8 } },
    { name: 'just within LIVE_MS', others: [w(12, 8, LIVE_MS)], own: w(14), share: { workers: 2, pace: 13, limit: 8 } },
    { name: 'before this worker published anything', others: [w(12)], own: undefined, share: { workers: 1, pace: 12, limit: 8 } },
    { name: 'nobody', others: [], own: undefined, share: { workers: 1, pace: null, limit: null } },
  ])('$name', ({ others, own, share }) => {
    const got = jobShare([...others, ...(own === undefined ? [] : [own])], NOW);
    expect(got.baselineMs).toBeNull();
    expect(got.workers).toBe(share.workers);
    expect(got.limit).toBe(share.limit);
    if (share.pace === null) expect(got.pace).toBeNull();
    else expect(got.pace).toBeCloseTo(share.pace, 9);
  });
});

describe('jobShare: the partner\'s latency without a queue is the lowest any live worker measured', () => {
  it.each([
    { name: 'a worker that came later measured the others\' queue', others: [{ ...w(null), baselineMs: 200 }, { ...w(null), baselineMs: 260 }], own: { ...w(null), baselineMs: 410 }, baselineMs: 200 },
    { name: 'one has not measured yet', others: [{ ...w(null), baselineMs: null }], own: { ...w(null), baselineMs: 230 }, baselineMs: 230 },
    { name: 'a stopped worker\'s is not kept', others: [{ ...w(null, 8, LIVE_MS + 1), baselineMs: 150 }], own: { ...w(null), baselineMs: 230 }, baselineMs: 230 },
    { name: 'none measured', others: [w(12)], own: w(14), baselineMs: null },
  ])('$name', ({ others, own, baselineMs }) => {
    expect(jobShare([...others, own], NOW).baselineMs).toBe(baselineMs);
  });
});

describe('joiningShare: a worker that joins starts from its share of what the others learned', () => {
  it.each([
    { name: 'two pacing at 20/s together: the third starts at a third of 40', others: [w(20), w(20, 16)], share: { workers: 3, pace: 40 / 3, limit: 16 } },
    { name: 'one not pacing: the window only', others: [w(20), w(null)], share: { workers: 3, pace: null, limit: 8 } },
    { name: 'only a stopped worker: a cold start', others: [w(20, 8, LIVE_MS + 1)], share: { workers: 1, pace: null, limit: null } },
  ])('$name', ({ others, share }) => {
    const got = joiningShare(others, NOW);
    expect(got.workers).toBe(share.workers);
    expect(got.limit).toBe(share.limit);
    if (share.pace === null) expect(got.pace).toBeNull();
    else expect(got.pace).toBeCloseTo(share.pace, 9);
  });
});

describe('AdaptiveLimiter.share', () => {
  it('divides an announced rate among the workers', () => {
    const limiter = new AdaptiveLimiter({ ceiling: 32 });
    limiter.announceCeiling(40);
    expect(limiter.rate).toBe(40);
    limiter.share({ workers: 4, pace: null, limit: null, baselineMs: null });
    expect(limiter.rate).toBe(10);
    limiter.announceCeiling(20);
    expect(limiter.rate).toBe(5);
    limiter.share({ workers: 1, pace: null, limit: null, baselineMs: null });
    expect(limiter.rate).toBe(20);
  });

  it('takes the even share of a learned pace, its cubic scaled with it', () => {
    const limiter = new AdaptiveLimiter({ ceiling: 32, pace: 12 });
    expect(limiter.learnedRate).toBe(12);
    limiter.share({ workers: 3, pace: 10, limit: 8, baselineMs: null });
    expect(limiter.rate).toBe(10);
    expect(limiter.paceMemory().lastMaxRate).toBeCloseTo(10, 9);
  });

  it('measures its queue from the job\'s baseline when that is lower than its own, never higher', async () => {
    const clock = { t: 0, now: () => clock.t, schedule: (run: () => void, ms: number) => { const h = setTimeout(run, ms); return () => clearTimeout(h); } };
    const limiter = new AdaptiveLimiter({ ceiling: 8, initialWindow: 8, clock });
    // Rounds of answers at 400 ms: this worker's baseline is 400 (the other workers' queue included).
    for (let round = 0; round < 3; round += 1) {
      const slots = [];
      for (let i = 0; i < 16; i += 1) {
        const slot = await limiter.acquire();
        if (slot === 'aborted') throw new Error('aborted');
        slot.sent();
        slots.push(slot);
        if (slots.length >= 8) (slots.shift() as typeof slot).release({ latencyMs: 400, signal: 'ok' });
        clock.t += 50;
      }
      for (const slot of slots) slot.release({ latencyMs: 400, signal: 'ok' });
    }
    expect(limiter.baselineMs).toBe(400);
    limiter.share({ workers: 3, pace: null, limit: null, baselineMs: 500 });
    expect(limiter.baselineMs).toBe(400);
    limiter.share({ workers: 3, pace: null, limit: null, baselineMs: 200 });
    expect(limiter.baselineMs).toBe(200);
  });

  it('leaves a limiter that has learned no pace unpaced', () => {
    const limiter = new AdaptiveLimiter({ ceiling: 32 });
    limiter.share({ workers: 3, pace: 10, limit: 8, baselineMs: null });
    expect(limiter.rate).toBeNull();
  });
});
