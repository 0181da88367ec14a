/** The announced limit's rules as tables (rate, gate, what is left), and the tracker over a run's answers. */
import { describe, expect, it } from 'vitest';
import { ANNOUNCED, AnnouncedLimit, ceilingOf, describeWindow, gateOf, isQuota, leftOf, type TrackedWindow } from '../../src/partner/announced-limit.js';
import { parseRateLimitHeaders, type Announcement } from '../../src/partner/rate-limit-headers.js';

const FIVE_MINUTES = 300_000;

/** A window as the tracker keeps it, at time 0 unless said. */
const tw = (over: Partial<TrackedWindow>): TrackedWindow => {
  const w = { key: 'k', name: null, limit: null, windowS: null, longestResetS: 0, remaining: null, resetAt: null, resetTimed: false, sendNo: 0, ...over };
  return { bases: w.remaining === null ? [] : [w.remaining + w.sendNo], ...w };
};

const kongSecond = tw({ key: 'second', limit: 40, windowS: 1, longestResetS: 1, remaining: 12, resetAt: 1000, resetTimed: false });
const perMinute = (remaining: number, resetAt: number, sendNo = 0): TrackedWindow =>
  tw({ key: 'minute', limit: 600, windowS: 60, longestResetS: 60, remaining, resetAt, resetTimed: true, sendNo });
const hourly = (remaining: number, resetAt: number, sendNo = 0): TrackedWindow =>
  tw({ key: 'hour', limit: 500, windowS: 3600, longestResetS: 3600, remaining, resetAt, resetTimed: true, sendNo });

describe('ceilingOf', () => {
  it.each<[string, TrackedWindow[], number, number | null]>([
    ['nothing announced', [], 0, null],
    ['40 per second: a little under it', [kongSecond], 0, ANNOUNCED.share * 40],
    ['a length known only from its resets', [tw({ limit: 40, longestResetS: 1, remaining: 3, resetAt: 900 })], 0, ANNOUNCED.share * 40],
    ['a limit with no length and no reset says no rate', [tw({ limit: 5000, remaining: 4000 })], 0, null],
    // 600 per minute is 9.75/s; 100 left for the 30 s to its reset is 3.33/s: the remaining quota is spread.
    ['a minute with 100 left for 30 s: spread', [perMinute(100, 30_000)], 0, 100 / 30],
    ['a minute with its whole quota left: its rate', [perMinute(600, 60_000)], 0, ANNOUNCED.share * 10],
    ['requests sent since count against what is left', [perMinute(100, 30_000)], 40, 60 / 30],
    ['a spent minute is the gate\'s, not a rate of 0', [perMinute(0, 30_000)], 0, ANNOUNCED.share * 10],
    ['a reset passed: the window\'s rate again', [perMinute(10, 30_000)], 0, 10 / 30],
    // An hour is longer than --max-retry-after (5 min): a quota to spend, not a rate.
    ['an hourly quota sets no rate', [hourly(400, 1_800_000)], 0, null],
    ['the lowest of several', [kongSecond, perMinute(100, 30_000), hourly(400, 1_800_000)], 0, 100 / 30],
  ])('%s', (_name, windows, sends, expected) => {
    const got = ceilingOf(windows, 0, sends, FIVE_MINUTES);
    if (expected === null) expect(got).toBeNull();
    else expect(got).toBeCloseTo(expected, 6);
  });

  it('spreads over what is left of the window as time passes', () => {
    expect(ceilingOf([perMinute(100, 30_000)], 20_000, 0, FIVE_MINUTES)).toBeCloseTo(ANNOUNCED.share * 10, 6);
    expect(ceilingOf([perMinute(20, 30_000)], 20_000, 0, FIVE_MINUTES)).toBeCloseTo(2, 6);
  });
});

describe('gateOf', () => {
  it.each<[string, TrackedWindow[], number, number, string, number | null]>([
    ['nothing announced', [], 0, 0, 'send', null],
    ['quota left', [hourly(10, 1_800_000)], 0, 0, 'send', null],
    ['the hour spent, its reset 30 min away (over --max-retry-after)', [hourly(0, 1_800_000)], 0, 0, 'spent', 1_800_000],
    ['the hour spent by our own requests since its answer', [hourly(5, 1_800_000)], 0, 5, 'spent', 1_800_000],
    ['the hour spent, its reset 4 min away: wait', [hourly(0, 240_000)], 0, 0, 'wait', 240_000],
    ['the hour spent, its reset passed', [hourly(0, 1_800_000)], 1_800_001, 0, 'send', null],
    ['a minute spent: wait for it', [perMinute(0, 30_000)], 0, 0, 'wait', 30_000],
    // A reset of a second (whole seconds, stale by the answer's trip) is too coarse to hold for: 429s answer it.
    ['a second spent: not held', [kongSecond, tw({ ...kongSecond, remaining: 0 })], 0, 12, 'send', null],
    ['the later of two spent windows', [perMinute(0, 30_000), hourly(0, 240_000)], 0, 0, 'wait', 240_000],
  ])('%s', (_name, windows, now, sends, kind, until) => {
    const gate = gateOf(windows, now, sends, FIVE_MINUTES);
    expect(gate.kind).toBe(kind);
    expect(gate.kind === 'send' || gate.kind === 'settling' ? null : gate.until).toBe(until);
  });

  it.each<[number, number, string]>([
    // 5 left: 3 let through and not left yet leave room for 2 more.
    [0, 3, 'send'],
    // They take all that is left: wait to see whether they leave (one that does not leaves room).
    [0, 5, 'settling'],
    [2, 3, 'settling'],
    // Spent by requests that left: the quota's, whatever is let through.
    [5, 0, 'spent'],
    [5, 4, 'spent'],
  ])('with %i sent and %i let through but not left: %s', (sends, reserved, kind) => {
    expect(gateOf([hourly(5, 1_800_000)], 0, sends, FIVE_MINUTES, reserved).kind).toBe(kind);
  });
});

describe('small rules', () => {
  it('leftOf: remaining less the requests sent after the answered one; unknown once reset', () => {
    expect(leftOf(perMinute(100, 30_000, 10), 0, 25)).toBe(85);
    expect(leftOf(perMinute(100, 30_000, 10), 30_000, 25)).toBeNull();
    expect(leftOf(tw({ limit: 5 }), 0, 3)).toBeNull();
  });

  it('isQuota: longer than --max-retry-after', () => {
    expect(isQuota(hourly(1, 1), FIVE_MINUTES)).toBe(true);
    expect(isQuota(hourly(1, 1), 2 * 3_600_000)).toBe(false);
    expect(isQuota(perMinute(1, 1), FIVE_MINUTES)).toBe(false);
    // GitHub's: no window said, a reset of 59 minutes.
    expect(isQuota(tw({ limit: 5000, longestResetS: 3540 }), FIVE_MINUTES)).toBe(true);
  });

  it('describeWindow', () => {
    expect(describeWindow(kongSecond)).toBe('40 requests per second');
    expect(describeWindow(hourly(0, 0))).toBe('500 requests per 1h');
    expect(describeWindow(perMinute(0, 0))).toBe('600 requests per 1m');
    expect(describeWindow(tw({ remaining: 42 }))).toBe('42 requests left');
    expect(describeWindow(tw({ limit: 7, windowS: 86_400 }))).toBe('7 requests per 1d');
  });
});

/** The tracker with a clock the test moves. */
function tracker(maxRetryAfterMs = FIVE_MINUTES): { limit: AnnouncedLimit; clock: { t: number } } {
  const clock = { t: 0 };
  return { limit: new AnnouncedLimit({ maxRetryAfterMs, now: () => clock.t }), clock };
}

const kong = (limit: number, remaining: number): Announcement => parseRateLimitHeaders({
  'x-ratelimit-limit-second': String(limit), 'x-ratelimit-remaining-second': String(remaining),
  'ratelimit-limit': String(limit), 'ratelimit-remaining': String(remaining), 'ratelimit-reset': '1',
}, 0) as Announcement;

const quota = (remaining: number, resetS: number): Announcement => parseRateLimitHeaders({
  'ratelimit-policy': '"hourly";q=500;w=3600', ratelimit: `"hourly";r=${remaining};t=${resetS}`,
}, 0) as Announcement;

describe('AnnouncedLimit', () => {
  it('says when the partner first announces, and paces within it from then on', () => {
    const { limit } = tracker();
    const before = limit.sent();
    expect(before.under).toBe(false);
    expect(limit.ceiling()).toBeNull();
    const changes = limit.answered(before, kong(40, 39), false);
    expect(changes.map((c) => c.type)).toEqual(['announced']);
    expect(limit.ceiling()).toBeCloseTo(39.6, 6);
    expect(limit.sent().under).toBe(true);
    expect(limit.answered(limit.sent(), kong(40, 38), false)).toEqual([]);
  });

  it('distrusts it after 429s to requests sent within it, and paces by it no more', () => {
    const { limit } = tracker();
    limit.answered(limit.sent(), kong(100, 99), false);
    const tickets = Array.from({ length: 10 }, () => limit.sent());
    expect(limit.answered(tickets[0]!, kong(100, 98), true)).toEqual([]);
    expect(limit.answered(tickets[1]!, kong(100, 97), true)).toEqual([]);
    expect(limit.answered(tickets[2]!, kong(100, 96), false)).toEqual([]);
    expect(limit.answered(tickets[3]!, kong(100, 95), true)).toEqual([]);
    const fourth = limit.answered(tickets[4]!, kong(100, 94), true);
    expect(fourth.map((c) => c.type)).toEqual(['distrusted']);
    expect(fourth[0]).toMatchObject({ throttled: 4, answers: 5 });
    expect(limit.distrusted).toBe(true);
    expect(limit.ceiling()).toBeNull();
    expect(limit.gate()).toEqual({ kind: 'send' });
    expect(limit.sent().under).toBe(false);
    expect(limit.summary()).toMatchObject({ distrusted_after_ms: 0, throttled_under: 4, answers_under: 5 });
  });

  it('keeps it through a 429 now and then (3 in any 200 answers)', () => {
    const { limit } = tracker();
    limit.answered(limit.sent(), kong(40, 39), false);
    for (let i = 0; i < 2000; i += 1) limit.answered(limit.sent(), kong(40, 20), i % 67 === 30);
    expect(limit.distrusted).toBe(false);
    expect(limit.summary()).toMatchObject({ answers_under: 2000, throttled_under: 30 });
  });

  it('distrusts it when 429s come later in the run (the partner lowered its cap, its headers did not follow)', () => {
    const { limit } = tracker();
    limit.answered(limit.sent(), kong(40, 39), false);
    for (let i = 0; i < 5000; i += 1) limit.answered(limit.sent(), kong(40, 20), false);
    for (let i = 0; i < 20 && !limit.distrusted; i += 1) limit.answered(limit.sent(), kong(40, 0), i % 3 === 0);
    expect(limit.distrusted).toBe(true);
  });

  it('does not count 429s to requests nothing paced within it (--no-adaptive)', () => {
    const { limit } = tracker();
    limit.answered(limit.sent(), kong(40, 39), false);
    for (let i = 0; i < 10; i += 1) {
      const t = limit.reserve();
      t.depart(false);
      expect(t.under).toBe(false);
      limit.answered(t, kong(40, 0), true);
    }
    expect(limit.distrusted).toBe(false);
  });

  it('does not count 429s to requests sent before anything was announced', () => {
    const { limit } = tracker();
    const early = Array.from({ length: 5 }, () => limit.sent());
    limit.answered(early[0]!, kong(40, 39), false);
    for (const t of early.slice(1)) limit.answered(t, kong(40, 0), true);
    expect(limit.distrusted).toBe(false);
  });

  it('a quota: spent by the requests sent, then waited for or spent past --max-retry-after', () => {
    const { limit, clock } = tracker();
    const first = limit.sent();
    limit.answered(first, quota(3, 1800), false);
    expect(limit.gate().kind).toBe('send');
    limit.sent();
    limit.sent();
    limit.sent();
    const gate = limit.gate();
    expect(gate).toMatchObject({ kind: 'spent', until: 1_800_000 });
    clock.t = 1_560_000;
    expect(limit.gate()).toMatchObject({ kind: 'wait', until: 1_800_000 });
    clock.t = 1_800_000;
    expect(limit.gate().kind).toBe('send');
  });

  it('a request that passed the gate counts at once; one that did not leave after all, not at all', () => {
    const { limit } = tracker();
    limit.answered(limit.sent(), quota(1, 1800), false);
    const t = limit.reserve();
    // The last request left takes what is left: the next waits to see whether it leaves.
    expect(limit.gate().kind).toBe('settling');
    t.cancel();
    t.cancel();
    t.depart();
    expect(t.no).toBe(0);
    expect(limit.gate().kind).toBe('send');
  });

  it('numbers requests in the order they leave, not the order they passed the gate (each awaits its ledger mark)', () => {
    const { limit } = tracker();
    limit.answered(limit.sent(), quota(10, 1800), false);
    const a = limit.reserve();
    const b = limit.reserve();
    b.depart();
    a.depart();
    expect([a.no, b.no]).toEqual([3, 2]);
    // b's answer (it reached the partner second of the three) says 8 left; a left after it: 7.
    limit.answered(b, quota(8, 1800), false);
    expect(leftOf(limit.windows()[0]!, 0, 3)).toBe(7);
  });

  it('what is left is the median of what the last answers said: a few requests overtaking others are counted right', () => {
    const { limit } = tracker();
    const tickets = Array.from({ length: 12 }, () => limit.sent());
    // 100 left before the first; requests 5 and 6 reached the partner the other way round, and so did 9 and 10.
    const arrived = [1, 2, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12];
    arrived.forEach((no, i) => limit.answered(tickets[no - 1]!, quota(100 - (i + 1), 1800), false));
    expect(leftOf(limit.windows()[0]!, 0, 12)).toBe(88);
    expect(leftOf(limit.windows()[0]!, 0, 20)).toBe(80);
  });

  it('a new window (its reset later by more than the rounding of whole seconds) starts its count afresh', () => {
    const { limit, clock } = tracker();
    limit.answered(limit.sent(), quota(0, 10), false);
    expect(limit.gate()).toMatchObject({ kind: 'wait', until: 10_000 });
    clock.t = 10_000;
    limit.answered(limit.sent(), quota(499, 3600), false);
    expect(leftOf(limit.windows()[0]!, 10_000, 2)).toBe(499);
  });

  it('an answer to an earlier request does not undo what a later one said', () => {
    const { limit } = tracker();
    const a = limit.sent();
    const b = limit.sent();
    limit.answered(b, quota(0, 1800), false);
    limit.answered(a, quota(1, 1800), false);
    expect(limit.gate().kind).toBe('spent');
  });

  it('keeps a reset an answer leaves unsaid while its window lasts (Kong gives one window\'s)', () => {
    const { limit } = tracker();
    const both = (hourLeft: number, reset: string | null): Announcement => parseRateLimitHeaders({
      'x-ratelimit-limit-second': '40', 'x-ratelimit-remaining-second': '10', 'x-ratelimit-limit-hour': '500', 'x-ratelimit-remaining-hour': String(hourLeft),
      ...(reset === null ? { 'ratelimit-limit': '40', 'ratelimit-remaining': '10', 'ratelimit-reset': '1' } : { 'ratelimit-limit': '500', 'ratelimit-remaining': String(hourLeft), 'ratelimit-reset': reset }),
    }, 0) as Announcement;
    limit.answered(limit.sent(), both(5, '1200'), false);
    limit.answered(limit.sent(), both(4, null), false);
    const hour = limit.windows().find((w) => w.key === 'hour');
    expect(hour).toMatchObject({ remaining: 4, resetAt: 1_200_000, resetTimed: true });
  });

  it('a quota only (no rate) is never distrusted by 429s: the pace is learned as without it', () => {
    const { limit } = tracker();
    limit.answered(limit.sent(), quota(400, 1800), false);
    for (let i = 0; i < 10; i += 1) limit.answered(limit.sent(), quota(399 - i, 1800), true);
    expect(limit.distrusted).toBe(false);
    expect(limit.ceiling()).toBeNull();
  });

  it('summarises what was announced', () => {
    const { limit } = tracker();
    expect(limit.summary()).toBeNull();
    limit.answered(limit.sent(), kong(40, 39), false);
    limit.spent(new Date('2024-01-01T01:00:00Z'));
    expect(limit.summary()).toEqual({
      style: 'kong', headers: 'X-RateLimit-Limit-Second (Kong)', windows: [{ name: 'second', limit: 40, window_s: 1 }],
      rate: 39.6, distrusted_after_ms: null, throttled_under: 0, answers_under: 0, spent_until: '2024-01-01T01:00:00.000Z',
    });
  });
});
