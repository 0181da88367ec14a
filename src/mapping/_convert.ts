/**
 * Typed conversions, built once per field at compile time: each returns a function from the
 * source text to the request value, or {@link FAIL} with the reason left in {@link failure}
 * (a shared slot, so that a failing row allocates nothing it does not report).
 */
import { quoteValue } from './_text.js';
import { usStateCode } from './_us-states.js';

export const FAIL: unique symbol = Symbol('conversion failed');
/** Why the last conversion returned {@link FAIL}. */
export const failure = { message: '' };

export type Converter = (text: string) => unknown;

function fail(message: string): typeof FAIL {
  failure.message = message;
  return FAIL;
}

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

// ---------------------------------------------------------------------------------------------
// Dates and timestamps

interface Parts {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  millisecond: number;
  /** Minutes east of UTC when the text carries an offset. */
  offset: number | undefined;
}

type PartsParser = (text: string) => Parts | undefined;

const TOKENS: readonly [string, string, keyof Parts | 'ampm' | 'yy'][] = [
  ['YYYY', '(\\d{4})', 'year'],
  ['SSS', '(\\d{1,3})', 'millisecond'],
  ['YY', '(\\d{2})', 'yy'],
  ['MM', '(\\d{2})', 'month'],
  ['DD', '(\\d{2})', 'day'],
  ['HH', '(\\d{2})', 'hour'],
  ['hh', '(\\d{2})', 'hour'],
  ['mm', '(\\d{2})', 'minute'],
  ['ss', '(\\d{2})', 'second'],
  ['M', '(\\d{1,2})', 'month'],
  ['D', '(\\d{1,2})', 'day'],
  ['H', '(\\d{1,2})', 'hour'],
  ['h', '(\\d{1,2})', 'hour'],
  ['A', '([AaPp][Mm])', 'ampm'],
  ['Z', '(Z|[+-]\\d{2}:?\\d{2})', 'offset'],
];

/** The tokens a date format may use, for hints. */
export const FORMAT_TOKENS = 'YYYY, YY, MM, M, DD, D, HH, H, hh, h, mm, ss, SSS, A, Z';

/**
 * Compiles a format such as `MM/DD/YYYY` or `YYYY-MM-DD HH:mm:ss` into a parser.
 * Throws an Error (with a message for the user) when the format is not usable.
 *
 * A two-digit year (`YY`) reads as 1950–2049; with `past` (a date that has happened, such as a
 * date of birth), as the latest year with those digits that puts the date on or before `past()`,
 * today as `YYYY-MM-DD`: `02/03/45` is 1945, `02/03/10` is 2010.
 */
export function compileFormat(format: string, past?: () => string): PartsParser {
  if (format === 'iso') return parseIso;
  let source = '';
  const fields: (keyof Parts | 'ampm' | 'yy')[] = [];
  let rest = format;
  while (rest.length > 0) {
    const token = TOKENS.find(([name]) => rest.startsWith(name));
    if (token !== undefined) {
      source += token[1];
      fields.push(token[2]);
      rest = rest.slice(token[0].length);
    } else {
      const char = rest[0] ?? '';
      if (/[A-Za-z]/.test(char)) throw new Error(`unknown token "${char}" in format "${format}"`);
      source += char.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      rest = rest.slice(1);
    }
  }
  const has = (name: string): boolean => fields.includes(name as keyof Parts);
  if (!(has('year') || has('yy')) || !has('month') || !has('day')) {
    throw new Error(`format "${format}" needs a year (YYYY or YY), a month (MM or M) and a day (DD or D)`);
  }
  const regex = new RegExp(`^${source}$`);
  const twelveHour = fields.includes('ampm');
  return (text) => {
    const match = regex.exec(text);
    if (match === null) return undefined;
    const parts: Parts = { year: 0, month: 0, day: 0, hour: 0, minute: 0, second: 0, millisecond: 0, offset: undefined };
    let pm: boolean | undefined;
    let twoDigitYear = false;
    for (let i = 0; i < fields.length; i += 1) {
      const value = match[i + 1] ?? '';
      const field = fields[i];
      if (field === 'ampm') pm = value.toLowerCase() === 'pm';
      else if (field === 'yy') {
        const yy = Number(value);
        parts.year = yy < 50 ? 2000 + yy : 1900 + yy;
        twoDigitYear = true;
      } else if (field === 'offset') parts.offset = parseOffset(value);
      else if (field === 'millisecond') parts.millisecond = Number(value.padEnd(3, '0'));
      else if (field !== undefined) parts[field] = Number(value);
    }
    if (twoDigitYear && past !== undefined) parts.year = latestYearNotAfter(parts, past());
    if (twelveHour && pm !== undefined) {
      if (parts.hour < 1 || parts.hour > 12) return undefined;
      parts.hour = (parts.hour % 12) + (pm ? 12 : 0);
    }
    return parts;
  };
}

/** The latest year ending in `parts.year`'s two digits whose month and day fall on or before `today` (`YYYY-MM-DD`). */
function latestYearNotAfter(parts: Parts, today: string): number {
  const thisYear = Number(today.slice(0, 4));
  let year = thisYear - (((thisYear % 100) - (parts.year % 100) + 100) % 100);
  if (`${pad(year, 4)}-${pad(parts.month, 2)}-${pad(parts.day, 2)}` > today) year -= 100;
  return year;
}

const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?\s*(Z|[+-]\d{2}:?\d{2})?$/i;
function parseIso(text: string): Parts | undefined {
  const m = ISO.exec(text);
  if (m === null) return undefined;
  return {
    year: Number(m[1]),
    month: Number(m[2]),
    day: Number(m[3]),
    hour: Number(m[4] ?? 0),
    minute: Number(m[5] ?? 0),
    second: Number(m[6] ?? 0),
    millisecond: Number((m[7] ?? '0').slice(0, 3).padEnd(3, '0')),
    offset: m[8] === undefined ? undefined : parseOffset(m[8]),
  };
}

function parseOffset(text: string): number {
  if (text === 'Z' || text === 'z') return 0;
  const sign = text.startsWith('-') ? -1 : 1;
  const digits = text.slice(1).replace(':', '');
  return sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4)));
}

const DAYS_IN_MONTH = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
function isRealDate(year: number, month: number, day: number): boolean {
  if (month < 1 || month > 12 || day < 1) return false;
  const leap = month === 2 && year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return day <= (DAYS_IN_MONTH[month] ?? 0) + (leap ? 1 : 0);
}

function pad(value: number, width: number): string {
  return String(value).padStart(width, '0');
}

/**
 * For a format made of exactly `YYYY`, `MM` and `DD` (and separators), such as `MM/DD/YYYY`: a
 * regex whose groups are the year, month and day. Their text is already the output's text
 * (fixed widths), so a date is checked and rewritten without building its parts.
 */
function compileFixedDate(format: string): ((text: string) => string | undefined) | undefined {
  if (format === 'iso') return undefined;
  const order: string[] = [];
  let source = '';
  let rest = format;
  while (rest.length > 0) {
    const token = ['YYYY', 'MM', 'DD'].find((name) => rest.startsWith(name));
    if (token !== undefined) {
      order.push(token);
      source += token === 'YYYY' ? '(\\d{4})' : '(\\d{2})';
      rest = rest.slice(token.length);
    } else {
      const char = rest[0] ?? '';
      if (/[A-Za-z]/.test(char)) return undefined;
      source += char.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      rest = rest.slice(1);
    }
  }
  if (order.length !== 3 || new Set(order).size !== 3) return undefined;
  const regex = new RegExp(`^${source}$`);
  const y = order.indexOf('YYYY') + 1;
  const m = order.indexOf('MM') + 1;
  const d = order.indexOf('DD') + 1;
  return (text) => {
    const match = regex.exec(text);
    if (match === null) return undefined;
    const year = match[y] ?? '';
    const month = match[m] ?? '';
    const day = match[d] ?? '';
    return isRealDate(Number(year), Number(month), Number(day)) ? `${year}-${month}-${day}` : undefined;
  };
}

/** `type: date`: text in `format` → `YYYY-MM-DD`; `past` as in {@link compileFormat}. */
/** An ISO 8601 time of day after a date (`T00:00:00Z`, ` 13:57:14.123+02:00`), as JSON serialisers write dates. */
const ISO_TIME_OF_DAY = /^[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?$/;

export function buildDate(format: string, past?: () => string): Converter {
  const date = buildDateOnly(format, past);
  if (format !== 'iso') return date;
  // `iso`: a date, or a date with its time of day (1985-04-12T00:00:00Z): the date as written is kept.
  return (text) => {
    if (text.length <= 10 || !ISO_TIME_OF_DAY.test(text.slice(10))) return date(text);
    const value = date(text.slice(0, 10));
    return value === FAIL ? fail(`expected a date as YYYY-MM-DD (a time of day may follow), got ${quoteValue(text)}`) : value;
  };
}

function buildDateOnly(format: string, past?: () => string): Converter {
  const parse = compileFormat(format, past);
  const expected = `expected a date as ${format === 'iso' ? 'YYYY-MM-DD' : format}`;
  const fixed = compileFixedDate(format);
  if (fixed !== undefined) {
    return (text) => fixed(text) ?? fail(`${expected}, got ${quoteValue(text)}`);
  }
  return (text) => {
    const parts = parse(text);
    if (parts === undefined || !isRealDate(parts.year, parts.month, parts.day)) {
      return fail(`${expected}, got ${quoteValue(text)}`);
    }
    return `${pad(parts.year, 4)}-${pad(parts.month, 2)}-${pad(parts.day, 2)}`;
  };
}

/** Minutes east of UTC of `zone` at a UTC instant. */
type ZoneOffset = (utcMillis: number) => number;

/** Resolves `UTC`, `+05:30` or an IANA name; throws an Error when unknown. */
export function compileZone(zone: string | undefined): ZoneOffset {
  if (zone === undefined || /^(utc|gmt|z)$/i.test(zone)) return () => 0;
  if (/^[+-]\d{2}:?\d{2}$/.test(zone)) {
    const offset = parseOffset(zone);
    return () => offset;
  }
  let formatter: Intl.DateTimeFormat;
  try {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
  } catch {
    throw new Error(`unknown time zone "${zone}"`);
  }
  // formatToParts is slow (tens of µs). Offsets change only on quarter hours, and at most once in
  // a day: a day whose first and last quarter hours have the same offset has it throughout, so
  // that is cached per day; the quarter hours of a day with a change are cached one by one.
  const QUARTER_HOUR = 900_000;
  const DAY = 86_400_000;
  const byDay = new Map<number, number>();
  const byQuarter = new Map<number, number>();
  const offsetAtQuarter = (bucket: number): number => {
    const cached = byQuarter.get(bucket);
    if (cached !== undefined) return cached;
    if (byQuarter.size > 50_000) byQuarter.clear();
    const offset = computeOffset(bucket * QUARTER_HOUR);
    byQuarter.set(bucket, offset);
    return offset;
  };
  return (utcMillis) => {
    const day = Math.floor(utcMillis / DAY);
    const sameAllDay = byDay.get(day);
    if (sameAllDay !== undefined) return sameAllDay;
    const first = offsetAtQuarter((day * DAY) / QUARTER_HOUR);
    const last = offsetAtQuarter(((day + 1) * DAY) / QUARTER_HOUR - 1);
    if (first === last) {
      if (byDay.size > 50_000) byDay.clear();
      byDay.set(day, first);
      return first;
    }
    return offsetAtQuarter(Math.floor(utcMillis / QUARTER_HOUR));
  };
  function computeOffset(utcMillis: number): number {
    const values: Record<string, number> = {};
    for (const part of formatter.formatToParts(new Date(utcMillis))) values[part.type] = Number(part.value);
    const local = Date.UTC(
      values.year ?? 1970, (values.month ?? 1) - 1, values.day ?? 1,
      values.hour ?? 0, values.minute ?? 0, values.second ?? 0,
    );
    return Math.round((local - Math.floor(utcMillis / 1000) * 1000) / 60_000);
  }
}

/** `type: timestamp`: text in `format` (local to `zone` unless it has an offset) → ISO 8601 UTC. */
export function buildTimestamp(format: string, zone: string | undefined): Converter {
  const offsetOf = compileZone(zone);
  if (format === 'epoch' || format === 'epoch_ms') {
    const scale = format === 'epoch' ? 1000 : 1;
    return (text) => {
      if (!/^\d+(\.\d+)?$/.test(text)) return fail(`expected ${format} (a number), got ${quoteValue(text)}`);
      return formatUtc(Number(text) * scale);
    };
  }
  const parse = compileFormat(format);
  const expected = `expected a timestamp as ${format === 'iso' ? 'ISO 8601' : format}`;
  return (text) => {
    const p = parse(text);
    if (
      p === undefined || !isRealDate(p.year, p.month, p.day) ||
      p.hour > 23 || p.minute > 59 || p.second > 59
    ) {
      return fail(`${expected}, got ${quoteValue(text)}`);
    }
    const wall = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second, p.millisecond);
    let utc: number;
    if (p.offset !== undefined) utc = wall - p.offset * 60_000;
    else {
      // Two passes settle the zone's offset around DST changes.
      const first = wall - offsetOf(wall) * 60_000;
      utc = wall - offsetOf(first) * 60_000;
    }
    return formatUtc(utc);
  };
}

function formatUtc(millis: number): string | typeof FAIL {
  const date = new Date(millis);
  if (Number.isNaN(date.getTime())) return fail('timestamp out of range');
  const iso = date.toISOString();
  // Whole seconds are written without a fraction, the usual form in partner payloads.
  return iso.endsWith('.000Z') ? `${iso.slice(0, 19)}Z` : iso;
}
