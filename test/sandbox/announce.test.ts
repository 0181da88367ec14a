/**
 * The sandbox's gateway announcing its limits (`--announce-limit`): the headers of each style as a
 * table, then over real HTTP: the cap and the quota counted as they are enforced, a gateway that
 * announces more than it keeps, and what quote-batch's parser reads back from each style.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseRateLimitHeaders } from '../../src/partner/rate-limit-headers.js';
import { announceHeaders, mergeFaults, DEFAULT_FAULTS, startSandbox, type GatewayWindow, type SandboxFaults, type SandboxHandle } from '../../src/sandbox/index.js';
import { AGENTS_FILE, KEY, post, QUOTE, readFixture, VALIDATE } from './_client.js';

const rate: GatewayWindow = { name: 'rate', limit: 40, windowS: 1, remaining: 12, resetS: 1 };
const quota: GatewayWindow = { name: 'quota', limit: 500, windowS: 3600, remaining: 7, resetS: 1800 };

describe('announceHeaders', () => {
  it.each<[string, Parameters<typeof announceHeaders>[0], GatewayWindow[], Record<string, string>]>([
    ['none', 'none', [rate], {}],
    ['no window', 'kong', [], {}],
    ['Kong, one window', 'kong', [rate], {
      'x-ratelimit-limit-second': '40', 'x-ratelimit-remaining-second': '12', 'ratelimit-limit': '40', 'ratelimit-remaining': '12', 'ratelimit-reset': '1',
    }],
    // RateLimit-* describe the window with the fewest left: here the hour.
    ['Kong, a rate and a quota', 'kong', [rate, quota], {
      'x-ratelimit-limit-second': '40', 'x-ratelimit-remaining-second': '12', 'x-ratelimit-limit-hour': '500', 'x-ratelimit-remaining-hour': '7',
      'ratelimit-limit': '500', 'ratelimit-remaining': '7', 'ratelimit-reset': '1800',
    }],
    ['IETF draft', 'ietf', [rate, quota], {
      'ratelimit-policy': '"rate";q=40;w=1, "quota";q=500;w=3600', ratelimit: '"rate";r=12;t=1, "quota";r=7;t=1800',
    }],
    ['Envoy X-RateLimit-*', 'x-ratelimit', [rate, quota], {
      'x-ratelimit-limit': '500, 40;w=1;name="rate", 500;w=3600;name="quota"', 'x-ratelimit-remaining': '7', 'x-ratelimit-reset': '1800',
    }],
  ])('%s', (_name, style, windows, headers) => {
    expect(announceHeaders(style, windows)).toEqual(headers);
  });

  it('each style reads back as the windows announced (the client\'s parser)', () => {
    for (const style of ['kong', 'ietf', 'x-ratelimit'] as const) {
      const windows = parseRateLimitHeaders(announceHeaders(style, [rate, quota]), 0)?.windows ?? [];
      expect(windows.map((w) => [w.limit, w.windowS]), style).toEqual(expect.arrayContaining([[40, 1], [500, 3600]]));
      const spent = windows.find((w) => w.limit === 500);
      expect(spent?.remaining, style).toBe(7);
      expect(spent?.resetS, style).toBe(1800);
    }
  });
});

describe('settings', () => {
  it('refuses a quota window Kong has no header for', () => {
    expect(() => mergeFaults(DEFAULT_FAULTS, { announceLimit: 'kong', quota: 500, quotaWindowSeconds: 40 })).toThrow(/Kong announces limits per second, minute, hour/);
    expect(mergeFaults(DEFAULT_FAULTS, { announceLimit: 'kong', quota: 500, quotaWindowSeconds: 3600 }).quota).toBe(500);
    expect(mergeFaults(DEFAULT_FAULTS, { announceLimit: 'ietf', quota: 500, quotaWindowSeconds: 40 }).quotaWindowSeconds).toBe(40);
  });

  it.each<[keyof SandboxFaults, unknown]>([
    ['announceLimit', 'github'], ['announceFactor', 0], ['announceFactor', 101], ['quota', -1], ['quota', 1.5], ['quotaWindowSeconds', 0], ['quotaWindowSeconds', 2.5],
  ])('refuses %s = %j', (key, value) => {
    expect(() => mergeFaults(DEFAULT_FAULTS, { [key]: value })).toThrow(new RegExp(`sandbox faults: ${key} expects`));
  });
});

describe('over HTTP', () => {
  const opened: SandboxHandle[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((s) => s.close()));
  });
  const open = async (faults: Partial<SandboxFaults>): Promise<SandboxHandle> => {
    const sandbox = await startSandbox({ apiKey: KEY, agentsFile: AGENTS_FILE, seed: 7, faults });
    opened.push(sandbox);
    return sandbox;
  };
  const quote = (i: number): Record<string, unknown> => {
    const body = readFixture('quote-valid') as { tracking: { click_id: string } };
    body.tracking.click_id = `announce-${i}`;
    return body;
  };
  const headersOf = (h: Headers): Record<string, string> => Object.fromEntries([...h.entries()].filter(([name]) => /rate-?limit/.test(name)));

  it('announces nothing unless asked to', async () => {
    const sandbox = await open({ rpsCap: 40, quota: 10 });
    expect(headersOf((await post(sandbox.url, QUOTE, quote(1))).headers)).toEqual({});
  });

  it('counts the quota on quotes and leads only, refuses the next with 429 until its window ends, and says so', async () => {
    const sandbox = await open({ quota: 3, quotaWindowSeconds: 60, announceLimit: 'ietf' });
    const validation = await post(sandbox.url, VALIDATE, { email: 'agent.one@example.com' });
    expect(validation.status).toBe(200);
    // No rate cap, and a validation is not counted: nothing to announce on it.
    expect(headersOf(validation.headers)).toEqual({});
    const answers = [];
    for (let i = 0; i < 5; i += 1) answers.push(await post(sandbox.url, QUOTE, quote(i)));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 429, 429]);
    expect(answers.map((a) => headersOf(a.headers).ratelimit)).toEqual([2, 1, 0, 0, 0].map((r) => expect.stringMatching(new RegExp(`^"quota";r=${r};t=(59|60)$`))));
    expect(headersOf(answers[0]!.headers)['ratelimit-policy']).toBe('"quota";q=3;w=60');
    expect(Number(answers[3]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(59);
    expect(sandbox.stats().faults.quotaSpent).toBe(2);
    // A reset starts a new window.
    sandbox.reset();
    expect((await post(sandbox.url, QUOTE, quote(9))).status).toBe(200);
  });

  it('announces the cap in force as it counts it, and a lying gateway announces 2.5 times more than it admits', async () => {
    const honest = await open({ rpsCap: 5, announceLimit: 'x-ratelimit' });
    const liar = await open({ rpsCap: 5, announceLimit: 'x-ratelimit', announceFactor: 2.5 });
    for (const [sandbox, limit] of [[honest, 5], [liar, 13]] as const) {
      const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => post(sandbox.url, QUOTE, quote(i))));
      const admitted = answers.filter((a) => a.status === 200);
      // Eight at once within one second (or two, if they straddle one): the cap admits 5 a second.
      expect(admitted.length).toBeGreaterThanOrEqual(5);
      expect(admitted.length).toBeLessThan(8);
      for (const a of answers) {
        const read = parseRateLimitHeaders(headersOf(a.headers), Date.now());
        expect(read?.windows[0]).toMatchObject({ limit, windowS: 1, resetS: 1 });
      }
    }
  });

  it('in Kong\'s style, a cap per second and a quota per hour', async () => {
    const sandbox = await open({ rpsCap: 40, quota: 30, quotaWindowSeconds: 3600, announceLimit: 'kong' });
    const headers = headersOf((await post(sandbox.url, QUOTE, quote(1))).headers);
    expect(headers).toMatchObject({ 'x-ratelimit-limit-second': '40', 'x-ratelimit-remaining-second': '39', 'x-ratelimit-limit-hour': '30', 'x-ratelimit-remaining-hour': '29', 'ratelimit-limit': '30' });
    expect(Number(headers['ratelimit-reset'])).toBeGreaterThan(3590);
  });
});
