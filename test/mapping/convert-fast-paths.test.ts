import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildDate, compileZone, FAIL } from '../../src/mapping/_convert.js';
import { latestToday } from '../../src/partner/schemas.js';

/** Minutes east of UTC of `zone` at `utcMillis`, straight from Intl (no cache): the oracle. */
function offsetFromIntl(zone: string, utcMillis: number): number {
  const formatter = new Intl.DateTimeFormat('en-US', {
    timeZone: zone, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric',
  });
  const values: Record<string, number> = {};
  for (const part of formatter.formatToParts(new Date(utcMillis))) values[part.type] = Number(part.value);
  const local = Date.UTC(values.year ?? 1970, (values.month ?? 1) - 1, values.day ?? 1, values.hour ?? 0, values.minute ?? 0, values.second ?? 0);
  return Math.round((local - Math.floor(utcMillis / 1000) * 1000) / 60_000);
}

describe('conversion fast paths', () => {
  it('a YYYY/MM/DD-only date format reads exactly the real dates, in any order of the tokens', () => {
    const formats = ['MM/DD/YYYY', 'DD.MM.YYYY', 'YYYYMMDD', 'YYYY-MM-DD'];
    const digits = (n: number) => fc.stringMatching(new RegExp(`^\\d{${n}}$`));
    fc.assert(
      fc.property(fc.constantFrom(...formats), digits(4), digits(2), digits(2), (format, y, m, d) => {
        const text = format.replace('YYYY', y).replace('MM', m).replace('DD', d);
        const date = new Date(Date.UTC(Number(y), Number(m) - 1, Number(d)));
        const real = Number(m) >= 1 && Number(m) <= 12 && date.getUTCMonth() === Number(m) - 1 && date.getUTCDate() === Number(d);
        // Date.UTC maps years 0–99 to 1900–1999: only the month and day decide whether the date exists.
        expect(buildDate(format)(text)).toBe(real ? `${y}-${m}-${d}` : FAIL);
      }),
      { numRuns: 2000 },
    );
    expect(buildDate('MM/DD/YYYY')('2/3/1980')).toBe(FAIL);
    expect(buildDate('MM/DD/YYYY')('02/29/2024')).toBe('2024-02-29');
    expect(buildDate('MM/DD/YYYY')('02/29/2023')).toBe(FAIL);
  });

  it('the cached zone offsets equal Intl at any instant, around daylight saving changes too', () => {
    const zones = ['America/New_York', 'Europe/London', 'Australia/Lord_Howe', 'Asia/Kolkata', 'America/St_Johns'];
    const offsets = new Map(zones.map((zone) => [zone, compileZone(zone)]));
    const instant = fc.integer({ min: Date.UTC(1990, 0, 1), max: Date.UTC(2040, 0, 1) });
    // Around the 2026 changes of New York (Mar 8, Nov 1) and London (Mar 29, Oct 25), minute by minute.
    const nearChange = fc.tuple(
      fc.constantFrom(Date.UTC(2026, 2, 8, 7), Date.UTC(2026, 10, 1, 6), Date.UTC(2026, 2, 29, 1), Date.UTC(2026, 9, 25, 1)),
      fc.integer({ min: -36 * 60, max: 36 * 60 }),
    ).map(([at, minutes]) => at + minutes * 60_000);
    fc.assert(
      fc.property(fc.constantFrom(...zones), fc.oneof(instant, nearChange), (zone, utc) => {
        const quarter = Math.floor(utc / 900_000) * 900_000;
        expect(offsets.get(zone)?.(utc)).toBe(offsetFromIntl(zone, quarter));
      }),
      { numRuns: 3000 },
    );
  });
});

describe('two-digit years of dates that have happened', () => {
  it.each([
    // [text as MM/DD/YY, today, read as]
    ['11/26/26', '2026-11-26', '2026-11-26'],
    ['11/27/26', '2026-11-26', '1926-11-27'],
    ['01/01/27', '2026-11-26', '1927-01-01'],
    ['12/31/99', '2026-11-26', '1999-12-31'],
    ['01/01/00', '2026-11-26', '2000-01-01'],
    ['02/29/00', '2026-11-26', '2000-02-29'],
    ['03/01/05', '2105-02-28', '2005-03-01'],
    ['02/28/05', '2105-02-28', '2105-02-28'],
  ])('%s on %s reads as %s', (text, today, expected) => {
    expect(buildDate('MM/DD/YY', { past: () => today })(text)).toBe(expected);
  });

  it('without one, YY is 1950–2049', () => {
    expect(buildDate('MM/DD/YY')('02/03/45')).toBe('2045-02-03');
    expect(buildDate('MM/DD/YY')('02/03/50')).toBe('1950-02-03');
  });

  it('today is the latest calendar date anywhere on Earth (UTC+14)', () => {
    expect(latestToday(Date.parse('2026-11-26T09:59:59Z'))).toBe('2026-11-26');
    expect(latestToday(Date.parse('2026-11-26T10:00:00Z'))).toBe('2026-11-27');
    expect(latestToday(Date.parse('2026-11-26T09:00:00Z'))).toBe('2026-11-26');
  });
});
