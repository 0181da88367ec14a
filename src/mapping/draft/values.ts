/**
 * What a column's values look like, guessed from a sample: dates and their format, timestamps,
 * yes/no flags, punctuated phone numbers, integers, decimals, e-mail addresses. Pure functions.
 */
import { buildMoney, type DecimalMark } from '../_amounts.js';
import { buildDate, buildTimestamp, FAIL, type Converter } from '../_convert.js';

/** What the values look like; `outliers`: how many sample values do not fit it (a few bad rows do not change the guess). */
export type ValueShape = ShapeKind & { outliers: number };

type ShapeKind =
  | { type: 'empty' }
  | { type: 'date'; format: string; ambiguous: boolean }
  | { type: 'timestamp'; format: string; hasOffset: boolean }
  | { type: 'boolean'; trueWords?: string[]; falseWords?: string[] }
  | { type: 'phone' }
  | { type: 'integer' }
  | { type: 'decimal' }
  /** Amounts written with a currency sign or code (`$1,234.50`, `1.234,50 €`). */
  | { type: 'money'; decimalMark: DecimalMark }
  | { type: 'email' }
  | { type: 'text' };

/** Date formats tried, the strictest first (so `MM/DD/YYYY` wins over `M/D/YYYY` when both read everything). */
const DATE_FORMATS = [
  'YYYY-MM-DD', 'MM/DD/YYYY', 'DD/MM/YYYY', 'M/D/YYYY', 'D/M/YYYY', 'MM-DD-YYYY', 'DD-MM-YYYY', 'DD.MM.YYYY', 'D.M.YYYY',
  'YYYY/MM/DD', 'YYYYMMDD', 'MM/DD/YY', 'M/D/YY', 'DD/MM/YY',
  // Month names and abbreviations, in any case (05-Mar-1988, March 5, 1988, 5 mar 88).
  'DD-MMM-YYYY', 'D-MMM-YYYY', 'DD MMM YYYY', 'D MMM YYYY', 'DD-MMM-YY', 'D MMM YY', 'DD MMMM YYYY', 'D MMMM YYYY',
  'MMM D, YYYY', 'MMMM D, YYYY', 'MMM D YYYY', 'MMMM D YYYY', 'MMM. D, YYYY', 'YYYY-MMM-DD', 'DDMMMYYYY', 'DDMMMYY',
] as const;

/** Timestamp formats tried, in order. */
const TIMESTAMP_FORMATS = [
  'YYYY-MM-DD HH:mm:ss', 'YYYY-MM-DD HH:mm', 'YYYY-MM-DD HH:mm:ss.SSS', 'iso',
  'MM/DD/YYYY HH:mm:ss', 'MM/DD/YYYY HH:mm', 'M/D/YYYY H:mm:ss', 'M/D/YYYY H:mm',
  'MM/DD/YYYY hh:mm:ss A', 'MM/DD/YYYY hh:mm A', 'M/D/YYYY h:mm:ss A', 'M/D/YYYY h:mm A',
  'DD/MM/YYYY HH:mm:ss', 'DD/MM/YYYY HH:mm', 'epoch', 'epoch_ms',
  // With a zone or an offset after the time, and month names.
  'YYYY-MM-DD HH:mm:ss z', 'YYYY-MM-DD HH:mm z', 'YYYY-MM-DD HH:mm:ss Z', 'MM/DD/YYYY hh:mm A z', 'MM/DD/YYYY h:mm A z', 'M/D/YYYY h:mm A z',
  'MM/DD/YYYY HH:mm z', 'DD-MMM-YYYY HH:mm:ss', 'DD-MMM-YYYY HH:mm', 'MMM D, YYYY h:mm A', 'MMMM D, YYYY h:mm A', 'MMM D, YYYY h:mm A z',
  'MMMM D, YYYY h:mm A z', 'ddd, DD MMM YYYY HH:mm:ss Z', 'ddd, DD MMM YYYY HH:mm:ss z', 'DDMMMYYYY HH:mm:ss', 'DDMMMYYYY:HH:mm:ss',
] as const;

const DEFAULT_TRUE = new Set(['y', 'yes', '1', 'true', 't']);
const DEFAULT_FALSE = new Set(['n', 'no', '0', 'false', 'f']);
/** Other pairs of words exports use for yes and no. */
const OTHER_TRUE = new Set(['x', 'on', 'checked', 'ja', 'si', 'oui']);
const OTHER_FALSE = new Set(['off', 'unchecked', 'nein', 'non']);

const INTEGER = /^[+-]?(?:\d+|\d{1,3}(?:,\d{3})+)$/;
const DECIMAL = /^[+-]?\$?(?:\d+|\d{1,3}(?:,\d{3})+)?\.\d+$|^\$(?:\d+|\d{1,3}(?:,\d{3})+)$/;
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const PHONE = /^[+(]?[\d\s().+-]{7,}$/;

/** Epoch seconds a timestamp guess takes: 2000-01-01 to 2100-01-01. */
const EPOCH_FROM = 946_684_800;
const EPOCH_TO = 4_102_444_800;

/** Share of the sample values a shape must fit. */
const FIT = 0.9;

/** How many of `texts` do not satisfy `test`, or undefined when more than {@link FIT} allows. */
function misfits(texts: readonly string[], test: (text: string) => boolean): number | undefined {
  const allowed = texts.length * (1 - FIT);
  let misses = 0;
  for (const text of texts) {
    if (test(text)) continue;
    misses += 1;
    if (misses > allowed) return undefined;
  }
  return misses;
}

/**
 * What exports write for "no value" besides an empty cell. Not `none` or `unknown`: they are words
 * of some fields (no diploma, an unknown gender).
 */
const NULL_MARKERS = new Set(['n/a', 'na', '#n/a', 'null', 'nil', '-', '--', '?', 'not available', 'not provided']);

/** The texts of `values` that mean "no value" (`N/A`), as the file spells them, each once. */
export function nullMarkersIn(values: readonly string[]): string[] {
  const seen = new Map<string, string>();
  for (const value of values) {
    const text = value.trim();
    const key = text.toLowerCase();
    if (NULL_MARKERS.has(key) && !seen.has(key)) seen.set(key, text);
  }
  return [...seen.values()];
}

/** The values without empty ones and those that mean "no value" (`N/A`). */
export function meaningful(values: readonly string[]): string[] {
  return values.map((v) => v.trim()).filter((v) => v !== '' && !NULL_MARKERS.has(v.toLowerCase()));
}

/** Guesses the shape of a column from its sample values (empty ones and `N/A` are ignored). */
export function guessShape(values: readonly string[]): ValueShape {
  const texts = meaningful(values);
  if (texts.length === 0) return { type: 'empty', outliers: 0 };
  const lower = texts.map((t) => t.toLowerCase());
  const flag = misfits(lower, (t) => DEFAULT_TRUE.has(t) || DEFAULT_FALSE.has(t));
  // Digits 0/1 alone could be counts: a flag needs both words or letters.
  if (flag !== undefined && (lower.some((t) => t !== '0' && t !== '1') || new Set(lower).size === 2)) return { type: 'boolean', outliers: flag };
  const yesNo = guessOtherBooleanWords(texts);
  if (yesNo !== undefined) return { ...yesNo, outliers: 0 };
  const date = guessDateFormat(texts);
  if (date !== undefined) return { type: 'date', format: date.format, ambiguous: date.ambiguous, outliers: date.outliers };
  const timestamp = guessTimestampFormat(texts);
  if (timestamp !== undefined) {
    // A zone in the format (Z, z) or an offset in ISO text: each value says its own time zone.
    const hasOffset = /[Zz]/.test(timestamp.format.replace(/\[[^\]]*\]/g, '')) || texts.some((t) => /(?:Z|[+-]\d{2}:?\d{2})$/.test(t));
    return { type: 'timestamp', format: timestamp.format, hasOffset, outliers: timestamp.outliers };
  }
  const email = misfits(texts, (t) => EMAIL.test(t));
  if (email !== undefined) return { type: 'email', outliers: email };
  const money = guessMoney(texts);
  if (money !== undefined) return money;
  const integer = misfits(texts, (t) => INTEGER.test(t));
  if (integer !== undefined && texts.some((t) => INTEGER.test(t))) return { type: 'integer', outliers: integer };
  const decimal = misfits(texts, (t) => INTEGER.test(t) || DECIMAL.test(t));
  if (decimal !== undefined) return { type: 'decimal', outliers: decimal };
  // A phone: 10 digits (or 11 with a leading 1) written with punctuation in at least one value.
  const phone = misfits(texts, (t) => PHONE.test(t) && /^1?\d{10}$/.test(t.replace(/\D/g, '')));
  if (phone !== undefined && texts.some((t) => /\D/.test(t))) return { type: 'phone', outliers: phone };
  return { type: 'text', outliers: 0 };
}

/** Amounts with a currency sign or code (`$1,500`, `1.234,50 €`): the decimal mark that reads them all. */
function guessMoney(texts: readonly string[]): ValueShape | undefined {
  if (!texts.some((t) => /[$€£¥]|\b[A-Z]{3}\b/.test(t))) return undefined;
  for (const decimalMark of ['.', ','] as const) {
    const outliers = reads(buildMoney(decimalMark), texts);
    if (outliers !== undefined) return { type: 'money', decimalMark, outliers };
  }
  return undefined;
}

/** A pair of words (X / empty is not a pair) outside the default yes/no words, e.g. `Ja`/`Nein`. */
function guessOtherBooleanWords(texts: readonly string[]): ShapeKind | undefined {
  const distinct = [...new Set(texts.map((t) => t.toLowerCase()))];
  if (distinct.length !== 2) return undefined;
  const yes = distinct.find((t) => OTHER_TRUE.has(t) || DEFAULT_TRUE.has(t));
  const no = distinct.find((t) => OTHER_FALSE.has(t) || DEFAULT_FALSE.has(t));
  if (yes === undefined || no === undefined || yes === no) return undefined;
  const original = (word: string): string => texts.find((t) => t.toLowerCase() === word) ?? word;
  return { type: 'boolean', trueWords: [original(yes)], falseWords: [original(no)] };
}

function reads(convert: Converter, texts: readonly string[]): number | undefined {
  return misfits(texts, (t) => convert(t) !== FAIL);
}

/**
 * The first date format that reads (nearly) every value, the one with fewest misfits; `ambiguous`
 * when a format with the day and month the other way round reads as many.
 */
function guessDateFormat(texts: readonly string[]): { format: string; ambiguous: boolean; outliers: number } | undefined {
  if (misfits(texts, (t) => /^[\w/.,\s-]{6,30}$/.test(t) && /\d/.test(t)) === undefined) return undefined;
  const fits = DATE_FORMATS.map((format) => ({ format, outliers: reads(buildDate(format), texts) }))
    .filter((f): f is { format: (typeof DATE_FORMATS)[number]; outliers: number } => f.outliers !== undefined);
  const fewest = Math.min(...fits.map((f) => f.outliers));
  const best = fits.find((f) => f.outliers === fewest);
  if (best === undefined) return undefined;
  const dayFirst = (f: string): boolean => f.indexOf('D') < f.indexOf('M');
  const ambiguous = fits.some((f) => f.outliers === fewest && dayFirst(f.format) !== dayFirst(best.format) && !f.format.startsWith('Y'));
  return { format: best.format, ambiguous, outliers: fewest };
}

/** The first timestamp format that reads (nearly) every value, which must hold a time of day or be epoch seconds / ms. */
function guessTimestampFormat(texts: readonly string[]): { format: string; outliers: number } | undefined {
  // Epoch seconds or milliseconds of this century: ten digits such as a phone number (5125550103) are not one.
  for (const [format, pattern, scale] of [['epoch', /^\d{10}$/, 1], ['epoch_ms', /^\d{13}$/, 1000]] as const) {
    const outliers = misfits(texts, (t) => pattern.test(t) && Number(t) / scale >= EPOCH_FROM && Number(t) / scale < EPOCH_TO);
    if (outliers !== undefined) return { format, outliers };
  }
  if (misfits(texts, (t) => /\d{1,2}:\d{2}/.test(t)) === undefined) return undefined;
  for (const format of TIMESTAMP_FORMATS) {
    if (format === 'epoch' || format === 'epoch_ms') continue;
    const outliers = reads(buildTimestamp(format, undefined), texts);
    if (outliers !== undefined) return { format, outliers };
  }
  return undefined;
}
