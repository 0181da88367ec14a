/**
 * The conversions vendors' exports need (docs/mapping.md, "Dates", "Timestamps", "Money and
 * limits"): table tests of the pure converters, and the format strings refused when a mapping loads.
 */
import { describe, expect, it } from 'vitest';
import { buildLimit, buildMoney } from '../../src/mapping/_amounts.js';
import { buildDate, buildTimestamp, compileFormat, FormatError } from '../../src/mapping/_dates.js';
import { FAIL, failure } from '../../src/mapping/_fail.js';

describe('dates with month names', () => {
  it.each([
    ['DD-MMM-YYYY', '05-Mar-1988', '1988-03-05'],
    ['DD-MMM-YYYY', '05-MAR-1988', '1988-03-05'],
    ['DD-MMM-YYYY', '05-mar-1988', '1988-03-05'],
    ['DD-MMM-YYYY', '30-Sep-1988', '1988-09-30'],
    ['DD-MMM-YYYY', '30-Sept-1988', '1988-09-30'],
    ['MMMM D, YYYY', 'March 5, 1988', '1988-03-05'],
    ['MMMM D, YYYY', 'DECEMBER 31, 1999', '1999-12-31'],
    ['D MMM YY', '5 mar 88', '1988-03-05'],
    ['MMM. D, YYYY', 'Sept. 5, 1988', '1988-09-05'],
    ['MMM. D, YYYY', 'Sep. 5, 1988', '1988-09-05'],
    ['ddd, DD MMM YYYY', 'Sat, 05 Mar 1988', '1988-03-05'],
    ['dddd, MMMM D, YYYY', 'Saturday, March 5, 1988', '1988-03-05'],
    ['YYYY-MM-DD[T]HH:mm', '1988-03-05T10:30', '1988-03-05'],
  ])('%s reads %s as %s', (format, text, expected) => {
    expect(buildDate(format)(text)).toBe(expected);
  });

  it.each([
    ['DD-MMM-YYYY', '05-123-1988'],
    ['DD-MMM-YYYY', '05-03-1988'],
    ['DD-MMM-YYYY', '05-Mars-1988'],
    ['DD-MMM-YYYY', '31-Feb-1988'],
    ['MMMM D, YYYY', 'Mar 5, 1988'],
    ['D MMM YY', '5 xyz 88'],
  ])('%s refuses %s, naming the format', (format, text) => {
    expect(buildDate(format)(text)).toBe(FAIL);
    expect(failure.message).toBe(`expected a date as ${format}, got "${text}"`);
  });

  it('two-digit years: 1950–2049 by default, the stated pivot, or (a date that has happened) the latest year not in the future', () => {
    expect(buildDate('MM/DD/YY')('02/03/45')).toBe('2045-02-03');
    expect(buildDate('MM/DD/YY')('02/03/50')).toBe('1950-02-03');
    expect(buildDate('MM/DD/YY', { pivot: 1940 })('02/03/45')).toBe('1945-02-03');
    expect(buildDate('MM/DD/YY', { pivot: 1940 })('02/03/39')).toBe('2039-02-03');
    expect(buildDate('MM/DD/YY', { pivot: 1940 })('02/03/40')).toBe('1940-02-03');
    expect(buildDate('D MMM YY', { past: () => '2026-06-01' })('5 mar 26')).toBe('2026-03-05');
    expect(buildDate('D MMM YY', { past: () => '2026-06-01' })('5 jul 26')).toBe('1926-07-05');
    // A stated pivot wins over the past-date rule.
    expect(buildDate('D MMM YY', { past: () => '2026-06-01', pivot: 2000 })('5 jul 26')).toBe('2026-07-05');
  });
});

describe('format strings refused when the mapping loads, naming the token', () => {
  it.each([
    ['DD-MMM-YYY', /unknown token "YYY" in format "DD-MMM-YYY"/, /YYYY \(4 digits\) or YY/],
    ['MMMMM D, YYYY', /unknown token "MMMMM"/, /MMMM is the month name, MMM its abbreviation/],
    ['dd/mm/yyyy', /unknown token "dd"/, /did you mean "DD"\?/],
    ['DDD-MM-YYYY', /unknown token "DDD"/, /weekday name is dddd/],
    ['DMMYYYY', /"D" and "MM" touch in format "DMMYYYY"/, /write a fixed width \(DD\)/],
    ['MDYYYY', /"M" and "D" touch/, /MM/],
    ['MM/DD/YYYY MMM', /the month is given twice in format "MM\/DD\/YYYY MMM": "MM" and "MMM"/, /once/],
    ['YYYY-MM-DDTHH:mm', /unknown token "T"/, /brackets, e\.g\. \[T\]/],
    ['YYYY-MM-DD[THH:mm', /an unclosed "\["/, /brackets/],
    ['MM/DD/YYYY hh:mm', /"hh" is a 12-hour hour, but format .* has no AM\/PM/, /add A, or write HH/],
    ['MM/DD/YYYY HH:mm A', /"HH" is a 24-hour hour, but format .* has AM\/PM/, /write hh/],
    ['DD/mm/YYYY', /needs a year .*, a month .* and a day/, /"mm" is minutes; the month is MM/],
    ['YYYY-MM-DD HH:mm Z z', /the time zone is given twice/, /once/],
    ['YYYY-MM-DD ss', /"ss" \(seconds\) without minutes/, /HH:mm:ss/],
  ])('%s', (format, message, hint) => {
    let caught: unknown;
    try {
      compileFormat(format);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(FormatError);
    expect((caught as FormatError).message).toMatch(message);
    expect((caught as FormatError).hint).toMatch(hint);
  });

  it.each(['DD-MMM-YYYY', 'MMMM D, YYYY', 'D MMM YY', 'YYYYMMDD', 'YYYY-MM-DD[T]HH:mm:ss.SSSZ', 'MM/DD/YYYY h:mm A z', 'ddd, DD MMM YYYY HH:mm:ss Z'])('%s is accepted', (format) => {
    expect(() => compileFormat(format)).not.toThrow();
  });
});

describe('timestamps with an offset or a named zone', () => {
  it.each([
    ['MM/DD/YYYY h:mm A z', '07/15/2026 1:05 PM America/Chicago', undefined, '2026-07-15T18:05:00Z'],
    ['MM/DD/YYYY h:mm A z', '07/15/2026 1:05 pm EST', undefined, '2026-07-15T18:05:00Z'],
    ['MM/DD/YYYY h:mm A z', '01/15/2026 1:05 p.m. america/new_york', undefined, '2026-01-15T18:05:00Z'],
    ['YYYY-MM-DD HH:mm Z', '2026-07-15 13:05 +02', undefined, '2026-07-15T11:05:00Z'],
    ['YYYY-MM-DD HH:mm Z', '2026-07-15 13:05 -0500', 'Asia/Tokyo', '2026-07-15T18:05:00Z'],
    ['DD-MMM-YYYY HH:mm', '15-Jul-2026 13:05', 'America/New_York', '2026-07-15T17:05:00Z'],
    ['DD-MMM-YYYY HH:mm', '15-Jan-2026 13:05', 'America/New_York', '2026-01-15T18:05:00Z'],
    ['DD-MMM-YYYY HH:mm', '15-Jan-2026 13:05', undefined, '2026-01-15T13:05:00Z'],
  ])('%s reads %s (zone %s) as %s', (format, text, zone, expected) => {
    expect(buildTimestamp(format, zone)(text)).toBe(expected);
  });

  it('a zone named in the text that does not exist is an error of the row', () => {
    expect(buildTimestamp('YYYY-MM-DD HH:mm z', undefined)('2026-07-15 13:05 Mars/Base')).toBe(FAIL);
    expect(failure.message).toBe('expected a time zone (UTC, EST, America/New_York) in the text, got "2026-07-15 13:05 Mars/Base"');
  });
});

describe('money', () => {
  it.each([
    ['$1,234.50', '.', 1234.5],
    ['1234.5', '.', 1234.5],
    ['$1,500', '.', 1500],
    ['$10,000', '.', 10000],
    ['USD 12', '.', 12],
    ['12.00 USD', '.', 12],
    ['$.50', '.', 0.5],
    ['(1,234.50)', '.', -1234.5],
    ['-$5', '.', -5],
    ['$-5', '.', -5],
    ['1 234 567.89', '.', 1234567.89],
    ['1.234,50 €', ',', 1234.5],
    ['€1.234,50', ',', 1234.5],
    ['1 234,50', ',', 1234.5],
    ['12,5', ',', 12.5],
    ['EUR 1.234.567', ',', 1234567],
  ] as const)('%s (decimal mark %s) is %d', (text, mark, expected) => {
    expect(buildMoney(mark)(text)).toBe(expected);
  });

  it.each([
    ['$1,5', '.'],
    ['1.234,50 €', '.'],
    ['1,234.50', ','],
    ['$1,23,4', '.'],
    ['12 dollars', '.'],
    ['$', '.'],
    ['N/A', '.'],
  ] as const)('%s (decimal mark %s) is refused', (text, mark) => {
    expect(buildMoney(mark)(text)).toBe(FAIL);
    expect(failure.message).toBe(`expected an amount of money such as ${mark === '.' ? '$1,234.50' : '1.234,50 €'}, got "${text}"`);
  });
});

describe('limits in dollars → the partner\'s thousands', () => {
  it.each([
    ['100,000/300,000', '100/300'],
    ['$100,000/$300,000', '100/300'],
    ['$100,000 / $300,000', '100/300'],
    ['$25,000', '25'],
    ['25000', '25'],
    ['100/300', '100/300'],
    ['100K/300K', '100/300'],
    ['100k', '100'],
    ['1M', '1000'],
    ['1.5M', '1500'],
  ])('%s → %s', (text, expected) => {
    expect(buildLimit('.')(text)).toBe(expected);
  });

  it('a decimal comma file: 100.000/300.000', () => {
    expect(buildLimit(',')('100.000/300.000')).toBe('100/300');
  });

  it.each([
    ['12,500', 'expected whole thousands of dollars'],
    ['100,000/300,000/50,000', 'expected a limit or a pair of limits (100,000/300,000)'],
    ['State Minimum', 'expected a limit in dollars such as $25,000 or 100,000/300,000'],
    ['-25,000', 'expected a limit in dollars such as $25,000 or 100,000/300,000'],
  ])('%s is refused: %s', (text, message) => {
    expect(buildLimit('.')(text)).toBe(FAIL);
    expect(failure.message).toBe(`${message}, got "${text}"`);
  });
});
