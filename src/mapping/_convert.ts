/**
 * Typed conversions, built once per field at compile time: each returns a function from the
 * source text to the request value, or {@link FAIL} with the reason left in {@link failure}
 * (a shared slot, so that a failing row allocates nothing it does not report). Dates and
 * timestamps are in `_dates.ts`, money and limits in `_amounts.ts`.
 */
import { buildLimit, buildMoney, type DecimalMark } from './_amounts.js';
import { fail, type Converter } from './_fail.js';
import { quoteValue } from './_text.js';
import { usStateCode } from './_us-states.js';

export { FAIL, failure, type Converter } from './_fail.js';
export { buildDate, buildTimestamp, FORMAT_TOKENS, FormatError } from './_dates.js';
export { compileZone } from './_zones.js';

const DEFAULT_TRUE = ['y', 'yes', '1', 'true', 't'];
const DEFAULT_FALSE = ['n', 'no', '0', 'false', 'f'];

export function buildBoolean(trueWords?: readonly string[], falseWords?: readonly string[]): Converter {
  const table = new Map<string, boolean>();
  for (const word of trueWords ?? DEFAULT_TRUE) table.set(word.trim().toLowerCase(), true);
  for (const word of falseWords ?? DEFAULT_FALSE) table.set(word.trim().toLowerCase(), false);
  const expected = trueWords === undefined && falseWords === undefined
    ? 'expected yes or no (Y/N, yes/no, 1/0, true/false)'
    : `expected one of ${[...(trueWords ?? DEFAULT_TRUE), ...(falseWords ?? DEFAULT_FALSE)].join(', ')}`;
  return (text) => {
    const value = table.get(text.toLowerCase());
    return value === undefined ? fail(`${expected}, got ${quoteValue(text)}`) : value;
  };
}

export const convertDigits: Converter = (text) => {
  const digits = text.replace(/\D+/g, '');
  return digits === '' ? fail(`expected digits, got ${quoteValue(text)}`) : digits;
};

/** A US phone number: its digits, without the country code 1 of an 11-digit number (`+1 555 010 0100`). */
export const convertPhone: Converter = (text) => {
  const digits = text.replace(/\D+/g, '');
  if (digits === '') return fail(`expected a phone number, got ${quoteValue(text)}`);
  return digits.length === 11 && digits.startsWith('1') ? digits.slice(1) : digits;
};

/**
 * A US ZIP code as a spreadsheet may have left it: its leading zeros lost (`2134` for 02134, `501`
 * for 00501) or ZIP+4 run together (`021341234`). Gives `02134` or `02134-1234`.
 */
export const convertZip: Converter = (text) => {
  const digits = /^[\d -]+$/.test(text) ? text.replace(/[ -]/g, '') : '';
  if (digits.length >= 3 && digits.length <= 5) return digits.padStart(5, '0');
  if (digits.length >= 7 && digits.length <= 9) {
    const full = digits.padStart(9, '0');
    return `${full.slice(0, 5)}-${full.slice(5)}`;
  }
  return fail(`expected a ZIP code (5 digits, or ZIP+4), got ${quoteValue(text)}`);
};

export const convertUsState: Converter = (text) =>
  usStateCode(text) ?? fail(`expected a US state, as its 2-letter code or its name, got ${quoteValue(text)}`);

const INTEGER = /^[+-]?(?:\d+|\d{1,3}(?:,\d{3})+)$/;
export const convertInteger: Converter = (text) => {
  if (!INTEGER.test(text)) return fail(`expected an integer, got ${quoteValue(text)}`);
  const value = Number(text.includes(',') ? text.replace(/,/g, '') : text);
  return Number.isSafeInteger(value) ? value : fail(`expected an integer, got ${quoteValue(text)}`);
};

const DECIMAL = /^[+-]?\$?(?:\d+|\d{1,3}(?:,\d{3})+)?(?:\.\d+)?$/;
export const convertDecimal: Converter = (text) => {
  if (!DECIMAL.test(text) || !/\d/.test(text)) return fail(`expected a decimal number, got ${quoteValue(text)}`);
  const value = Number(text.replace(/[$,]/g, ''));
  return Number.isFinite(value) ? value : fail(`expected a decimal number, got ${quoteValue(text)}`);
};

/**
 * The conversions a template may apply to a reference (`"{Medical Payments | digits}_per_person"`):
 * each gives text, so that it can be written into the template's text.
 */
export const TEMPLATE_PIPES = ['digits', 'integer', 'decimal', 'money', 'limit', 'phone', 'zip', 'state', 'upper', 'lower'] as const;
export type TemplatePipe = (typeof TEMPLATE_PIPES)[number];

/** The converter of one template pipe; its value is written into the template as text. */
export function buildPipe(pipe: TemplatePipe, mark: DecimalMark): Converter {
  switch (pipe) {
    case 'digits': return convertDigits;
    case 'integer': return convertInteger;
    case 'decimal': return convertDecimal;
    case 'money': return buildMoney(mark);
    case 'limit': return buildLimit(mark);
    case 'phone': return convertPhone;
    case 'zip': return convertZip;
    case 'state': return convertUsState;
    case 'upper': return (text) => text.toUpperCase();
    case 'lower': return (text) => text.toLowerCase();
  }
}

