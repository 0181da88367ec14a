/**
 * The announced-limit parser as a table of real gateways' headers (as their sources and documents
 * show them) and of broken ones, which are ignored, never an error.
 */
import { describe, expect, it } from 'vitest';
import { parseRateLimitHeaders, RATE_LIMIT_HEADER, type AnnouncedWindow } from '../../src/partner/rate-limit-headers.js';

/** 2024-01-01T00:00:00Z */
const NOW = 1_704_067_200_000;
const NOW_S = NOW / 1000;

const w = (limit: number | null, windowS: number | null, remaining: number | null, resetS: number | null, name: string | null = null): AnnouncedWindow => ({ name, limit, windowS, remaining, resetS });

describe('parseRateLimitHeaders: real gateways', () => {
  it.each<[string, Record<string, string>, string, AnnouncedWindow[]]>([
    // Kong's rate-limiting plugin, `second: 40`: one header per period, RateLimit-* for the nearest window.
    ['Kong, 40 per second', {
      'ratelimit-limit': '40', 'ratelimit-remaining': '12', 'ratelimit-reset': '1',
      'x-ratelimit-limit-second': '40', 'x-ratelimit-remaining-second': '12',
    }, 'kong', [w(40, 1, 12, 1, 'second')]],
    // Kong with `minute: 100, hour: 1000` (its spec tests read these headers): the reset is the minute's.
    ['Kong, per minute and per hour', {
      'x-ratelimit-limit-minute': '100', 'x-ratelimit-remaining-minute': '99',
      'x-ratelimit-limit-hour': '1000', 'x-ratelimit-remaining-hour': '999',
      'ratelimit-limit': '100', 'ratelimit-remaining': '99', 'ratelimit-reset': '27',
    }, 'kong', [w(100, 60, 99, 27, 'minute'), w(1000, 3600, 999, null, 'hour')]],
    // Kong's 429 once the hour is spent: RateLimit-* then describe the hour.
    ['Kong, hourly quota spent', {
      'x-ratelimit-limit-second': '40', 'x-ratelimit-remaining-second': '39',
      'x-ratelimit-limit-hour': '500', 'x-ratelimit-remaining-hour': '0',
      'ratelimit-limit': '500', 'ratelimit-remaining': '0', 'ratelimit-reset': '1800', 'retry-after': '1800',
    }, 'kong', [w(40, 1, 39, null, 'second'), w(500, 3600, 0, 1800, 'hour')]],
    // Envoy's rate-limit filter with enable_x_ratelimit_headers: DRAFT_VERSION_03 (its unit tests' values).
    ['Envoy, draft 03 with named policies', {
      'x-ratelimit-limit': '10, 10;w=60;name="per-minute", 1000;w=3600;name="per-hour"', 'x-ratelimit-remaining': '7', 'x-ratelimit-reset': '3',
    }, 'x-ratelimit', [w(10, 60, 7, 3, 'per-minute'), w(1000, 3600, null, null, 'per-hour')]],
    ['Envoy, one unnamed policy', { 'x-ratelimit-limit': '1, 1;w=60', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '3' },
      'x-ratelimit', [w(1, 60, 0, 3)]],
    // GitHub's REST API: an hourly quota, its reset a Unix time.
    ['GitHub', {
      'x-ratelimit-limit': '5000', 'x-ratelimit-remaining': '4999', 'x-ratelimit-used': '1',
      'x-ratelimit-reset': String(NOW_S + 3540), 'x-ratelimit-resource': 'core',
    }, 'x-ratelimit', [w(5000, null, 4999, 3540)]],
    // Twitter / X's v2 API.
    ['Twitter', { 'x-rate-limit-limit': '900', 'x-rate-limit-remaining': '899', 'x-rate-limit-reset': String(NOW_S + 900) },
      'x-ratelimit', [w(900, null, 899, 900)]],
    // Discord: the reset a Unix time with milliseconds, and Reset-After in seconds.
    ['Discord', { 'x-ratelimit-limit': '5', 'x-ratelimit-remaining': '1', 'x-ratelimit-reset': String(NOW_S + 0.25), 'x-ratelimit-reset-after': '0.25', 'x-ratelimit-bucket': 'abcd1234' },
      'x-ratelimit', [w(5, null, 1, 0.25)]],
    // GitLab.com: RateLimit-* with the reset a Unix time.
    ['GitLab', { 'ratelimit-limit': '60', 'ratelimit-observed': '67', 'ratelimit-remaining': '0', 'ratelimit-reset': String(NOW_S + 45), 'ratelimit-resettime': 'Mon, 01 Jan 2024 00:00:45 GMT' },
      'ratelimit-limit', [w(60, null, 0, 45)]],
    // express-rate-limit, standardHeaders 'draft-6'.
    ['express-rate-limit draft-6', { 'ratelimit-policy': '100;w=60', 'ratelimit-limit': '100', 'ratelimit-remaining': '99', 'ratelimit-reset': '60' },
      'ratelimit-limit', [w(100, 60, 99, 60)]],
    // The older drafts (polli-03): the policy inside RateLimit-Limit.
    ['draft 03: RateLimit-Limit with its policy', { 'ratelimit-limit': '100, 100;w=60', 'ratelimit-remaining': '42', 'ratelimit-reset': '17' },
      'ratelimit-limit', [w(100, 60, 42, 17)]],
    // express-rate-limit, standardHeaders 'draft-7' (the draft's own examples have this shape).
    ['draft 07: RateLimit as a dictionary', { 'ratelimit-policy': '10;w=1, 50;w=60, 1000;w=3600', ratelimit: 'limit=50, remaining=20, reset=42' },
      'ietf-07', [w(50, 60, 20, 42), w(10, 1, null, null), w(1000, 3600, null, null)]],
    // The current draft (08–11) and express-rate-limit's 'draft-8' (spaces after ';', a partition key).
    ['IETF draft, the issue example', { 'ratelimit-policy': '"default";q=100;w=60', ratelimit: '"default";r=42;t=17' },
      'ietf', [w(100, 60, 42, 17, 'default')]],
    ['express-rate-limit draft-8', { 'ratelimit-policy': '"100-in-1min"; q=100; w=60; pk=:ZTQ4ZjcxODkxMmE0:', ratelimit: '"100-in-1min"; r=99; t=60' },
      'ietf', [w(100, 60, 99, 60, '100-in-1min')]],
    ['IETF draft, two policies, one remaining', { 'ratelimit-policy': '"permin";q=50;w=60,"perhr";q=1000;w=3600', ratelimit: '"perhr";r=998;t=3000' },
      'ietf', [w(1000, 3600, 998, 3000, 'perhr'), w(50, 60, null, null, 'permin')]],
    ['IETF draft, split over two fields (Node joins them)', { 'ratelimit-policy': '"burst";q=100;w=60, "daily";q=1000;w=86400', ratelimit: '"burst";r=10;t=5, "daily";r=500;t=40000' },
      'ietf', [w(100, 60, 10, 5, 'burst'), w(1000, 86_400, 500, 40_000, 'daily')]],
    ['IETF draft, RateLimit alone (no policy)', { ratelimit: '"default";r=50;t=30' }, 'ietf', [w(null, null, 50, 30, 'default')]],
    // A quota of bytes says nothing of our request rate; the requests' policy still counts.
    ['IETF draft, a content-bytes quota left out', { 'ratelimit-policy': '"peruser";q=65535;qu="content-bytes";w=10, "req";q=20;w=1', ratelimit: '"req";r=19;t=1' },
      'ietf', [w(20, 1, 19, 1, 'req')]],
    // Remaining above the limit (a gateway adding two counters): the limit.
    ['remaining above the limit', { 'x-ratelimit-limit': '40', 'x-ratelimit-remaining': '55' }, 'x-ratelimit', [w(40, null, 40, null)]],
  ])('%s', (_name, headers, style, windows) => {
    const found = parseRateLimitHeaders(headers, NOW);
    expect(found?.style).toBe(style);
    expect(found?.windows).toEqual(windows);
  });

  it('reads a reset in Unix milliseconds', () => {
    expect(parseRateLimitHeaders({ 'x-ratelimit-limit': '10', 'x-ratelimit-reset': String(NOW + 2500) }, NOW)?.windows).toEqual([w(10, null, null, 2.5)]);
  });

  it('reads a reset already past as now', () => {
    expect(parseRateLimitHeaders({ 'x-ratelimit-limit': '10', 'x-ratelimit-reset': String(NOW_S - 30) }, NOW)?.windows).toEqual([w(10, null, null, 0)]);
  });

  it('names the headers it read', () => {
    expect(parseRateLimitHeaders({ 'x-ratelimit-limit-second': '40', 'x-ratelimit-limit-hour': '500' }, NOW)?.headers).toBe('X-RateLimit-Limit-Second/-Hour (Kong)');
    expect(parseRateLimitHeaders({ 'ratelimit-policy': '"default";q=100;w=60' }, NOW)?.headers).toBe('RateLimit-Policy / RateLimit (IETF draft)');
    expect(parseRateLimitHeaders({ 'x-ratelimit-limit': '5' }, NOW)?.headers).toBe('X-RateLimit-Limit / -Remaining / -Reset');
  });
});

describe('parseRateLimitHeaders: what is ignored', () => {
  it.each<[string, Record<string, string>]>([
    ['no header', {}],
    ['other headers only', { 'content-type': 'application/json', 'retry-after': '5' }],
    ['a limit that is not a number', { 'ratelimit-limit': 'abc', 'ratelimit-remaining': '5' }],
    ['a negative limit', { 'x-ratelimit-limit': '-5' }],
    ['a fractional quota', { 'ratelimit-policy': '"x";q=1.5;w=60', ratelimit: '"x";r=1.5' }],
    ['a negative remaining count alone', { ratelimit: '"default";r=-1;t=5' }],
    ['a window of zero', { 'ratelimit-policy': '"a";q=10;w=0', ratelimit: '"a";r=-3' }],
    ['an absurd limit', { 'x-ratelimit-limit': '99999999999999' }],
    ['a malformed structured field', { 'ratelimit-policy': '"default;q=100', ratelimit: '"default";r=' }],
    ['a draft-07 dictionary without a limit', { ratelimit: 'remaining=5, reset=3' }],
    ['a Kong remaining count without its limit', { 'x-ratelimit-remaining-second': '3' }],
    ['a name that is not printable', { 'ratelimit-policy': '"caf\\u00e9";q=10;w=1' }],
  ])('%s', (_name, headers) => {
    expect(parseRateLimitHeaders(headers, NOW)).toBeNull();
  });

  it.each<[string, Record<string, string>, AnnouncedWindow[]]>([
    ['a reset beyond a year', { 'x-ratelimit-limit': '10', 'x-ratelimit-remaining': '4', 'x-ratelimit-reset': '99999999999999999999' }, [w(10, null, 4, null)]],
    ['a reset that is not a number', { 'x-ratelimit-limit': '10', 'x-ratelimit-reset': 'soon' }, [w(10, null, null, null)]],
    ['a remaining count that is not a number', { 'ratelimit-limit': '10', 'ratelimit-remaining': 'lots' }, [w(10, null, null, null)]],
    ['an IETF reset that is negative', { 'ratelimit-policy': '"d";q=10;w=1', ratelimit: '"d";r=3;t=-1' }, [w(10, 1, 3, null, 'd')]],
  ])('keeps the rest of: %s', (_name, headers, windows) => {
    expect(parseRateLimitHeaders(headers, NOW)?.windows).toEqual(windows);
  });

  it('never throws, whatever the values', () => {
    const junk = ['', ' ', ',', ';', '"', '=', '1,', ':abc', '?1', '@123', '%"x"', '1e9', 'NaN', 'Infinity', '0x10', '١٢٣', 'a'.repeat(5000)];
    for (const a of junk) {
      for (const name of ['ratelimit', 'ratelimit-policy', 'ratelimit-limit', 'x-ratelimit-limit', 'x-ratelimit-limit-second']) {
        expect(() => parseRateLimitHeaders({ [name]: a, 'x-ratelimit-reset': a, 'ratelimit-reset': a }, NOW)).not.toThrow();
      }
    }
  });
});

describe('RATE_LIMIT_HEADER', () => {
  it.each([
    ['ratelimit', true], ['ratelimit-policy', true], ['ratelimit-reset', true], ['x-ratelimit-limit-second', true],
    ['x-rate-limit-remaining', true], ['x-ratelimited', false], ['retry-after', false], ['x-api-key', false], ['content-type', false],
  ])('%s: %s', (name, carried) => {
    expect(RATE_LIMIT_HEADER.test(name)).toBe(carried);
  });
});
