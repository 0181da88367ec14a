import { describe, expect, it } from 'vitest';
import { guessShape } from '../../../src/mapping/draft/values.js';

describe('value shapes from a sample', () => {
  it.each([
    ['US dates', ['02/03/1980', '12/31/1999', ''], { type: 'date', format: 'MM/DD/YYYY' }],
    ['ISO dates', ['1980-02-03', '1999-12-31'], { type: 'date', format: 'YYYY-MM-DD' }],
    ['short dates', ['2/3/1980', '12/31/1999'], { type: 'date', format: 'M/D/YYYY' }],
    ['day first', ['31.12.1999', '02.03.1980'], { type: 'date', format: 'DD.MM.YYYY' }],
    ['compact dates', ['19800203', '19991231'], { type: 'date', format: 'YYYYMMDD' }],
    ['one bad date among many', [...Array(19).fill('02/03/1980'), '13/45/1990'], { type: 'date', format: 'MM/DD/YYYY', outliers: 1 }],
    ['timestamps', ['2026-03-01 12:58:37', '2026-03-02 08:00:00'], { type: 'timestamp', format: 'YYYY-MM-DD HH:mm:ss', hasOffset: false }],
    ['12-hour timestamps', ['03/01/2026 01:57 PM', '11/02/2026 12:05 AM'], { type: 'timestamp', format: 'MM/DD/YYYY hh:mm A' }],
    ['ISO timestamps with offset', ['2026-03-01T12:58:37Z', '2026-03-01T12:58:37-05:00'], { type: 'timestamp', format: 'iso', hasOffset: true }],
    ['epoch seconds', ['1784107800', '1784107801'], { type: 'timestamp', format: 'epoch' }],
    ['Y/N', ['Y', 'N', 'y', ''], { type: 'boolean' }],
    ['yes/no', ['Yes', 'No'], { type: 'boolean' }],
    ['other yes/no words', ['Ja', 'Nein', 'Ja'], { type: 'boolean', trueWords: ['Ja'], falseWords: ['Nein'] }],
    ['0/1 counts are not flags', ['0', '0', '0'], { type: 'integer' }],
    ['punctuated phones', ['(212) 555-0123', '720.555.0101', '512-555-0199'], { type: 'phone' }],
    ['integers with thousands', ['12,000', '7000'], { type: 'integer' }],
    ['decimals', ['12.50', '9.75', '15'], { type: 'decimal' }],
    ['money', ['$12.50', '9.75', '$1,500'], { type: 'money', decimalMark: '.' }],
    ['money with a decimal comma', ['1.234,50 €', '12,00 €', '9,75 €'], { type: 'money', decimalMark: ',' }],
    ['dates with month names', ['05-Mar-1988', '30-SEP-1990', '01-jan-2001'], { type: 'date', format: 'DD-MMM-YYYY' }],
    ['dates written out', ['March 5, 1988', 'September 30, 1990'], { type: 'date', format: 'MMMM D, YYYY' }],
    ['short dates with month names', ['5 mar 88', '30 sep 90'], { type: 'date', format: 'D MMM YY' }],
    ['warehouse dates', ['15MAY1994', '06DEC1996', '10SEP1968'], { type: 'date', format: 'DDMMMYYYY' }],
    ['ten-digit phone numbers are no epoch seconds past 2100', ['5125550103', '7205550199'], { type: 'integer' }],
    ['times with a zone name', ['03/05/2026 01:57 PM EST', '03/06/2026 09:05 AM America/Chicago'], { type: 'timestamp', format: 'MM/DD/YYYY hh:mm A z', hasOffset: true }],
    ['e-mail addresses', ['a.b@example.com', 'c@example.com'], { type: 'email' }],
    ['words', ['OWN', 'RENT'], { type: 'text' }],
    ['nothing', ['', ' '], { type: 'empty' }],
  ] as const)('%s', (_, values, shape) => {
    expect(guessShape(values)).toMatchObject(shape);
  });

  it('a sample that fits month-first and day-first is flagged ambiguous', () => {
    expect(guessShape(['02/03/1980', '04/05/1990'])).toMatchObject({ type: 'date', format: 'MM/DD/YYYY', ambiguous: true });
    expect(guessShape(['02/13/1980'])).toMatchObject({ type: 'date', format: 'MM/DD/YYYY', ambiguous: false });
  });
});
