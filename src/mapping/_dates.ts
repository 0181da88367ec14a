/**
 * Dates and timestamps: a `format:` such as `DD-MMM-YYYY` or `MM/DD/YYYY h:mm A z` compiled once
 * into a parser, and the conversions built on it (docs/mapping.md, "Dates" and "Timestamps").
 *
 * A format is read as runs of one letter (`MMM` is one token, never `MM` then `M`); a run that is
 * not a token, a part given twice, or two variable-width numbers with nothing between them is
 * refused when the mapping loads, naming the token.
 */
import { fail, FAIL, type Converter } from './_fail.js';
import { quoteValue } from './_text.js';
import { compileZone, parseOffset, type ZoneOffset } from './_zones.js';

/** The parts a format reads. */
interface Parts {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  millisecond: number;
  /** Minutes east of UTC when the text carries an offset (`Z`). */
  offset: number | undefined;
  /** A time zone named in the text (`z`). */
  zoneName: string | undefined;
}

type PartsParser = (text: string) => Parts | undefined;

type Part = 'year' | 'month' | 'day' | 'weekday' | 'hour' | 'minute' | 'second' | 'millisecond' | 'ampm' | 'zone';
type Reading = 'year' | 'yy' | 'month' | 'monthName' | 'day' | 'weekday' | 'hour' | 'minute' | 'second' | 'millisecond' | 'ampm' | 'offset' | 'zoneName';

interface TokenDef {
  part: Part;
  reading: Reading;
  /** The regex of the token's text (one capture group). */
  regex: string;
  /** Digits of no fixed width: a number right after it could be split two ways. */
  variable: boolean;
  /** The token's text starts with a digit. */
  numeric: boolean;
  /** What the docs and the hints say it is. */
  meaning: string;
}

const MONTH_NAMES = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];
const WEEKDAY_NAMES = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'];
/** `jan` → 1 … `dec` → 12: a month name or abbreviation by its first three letters. */
const MONTH_BY_PREFIX = new Map(MONTH_NAMES.map((name, i) => [name.slice(0, 3), i + 1]));

const def = (part: Part, reading: Reading, regex: string, meaning: string, variable = false, numeric = true): TokenDef =>
  ({ part, reading, regex, meaning, variable, numeric });

/** Every token of a format (docs/mapping.md lists the same). */
const TOKENS: ReadonlyMap<string, TokenDef> = new Map([
  ['YYYY', def('year', 'year', '(\\d{4})', '4-digit year')],
  ['YY', def('year', 'yy', '(\\d{2})', '2-digit year')],
  ['MMMM', def('month', 'monthName', `(${MONTH_NAMES.join('|')})`, 'month name (March)', false, false)],
  ['MMM', def('month', 'monthName', '(jan|feb|mar|apr|may|jun|jul|aug|sept?|oct|nov|dec)\\.?', 'month abbreviation (Mar, Sept)', false, false)],
  ['MM', def('month', 'month', '(\\d{2})', 'month, 2 digits')],
  ['M', def('month', 'month', '(\\d{1,2})', 'month, 1–2 digits', true)],
  ['DD', def('day', 'day', '(\\d{2})', 'day, 2 digits')],
  ['D', def('day', 'day', '(\\d{1,2})', 'day, 1–2 digits', true)],
  ['dddd', def('weekday', 'weekday', `(${WEEKDAY_NAMES.join('|')})`, 'weekday name (Saturday), not checked', false, false)],
  ['ddd', def('weekday', 'weekday', '(mon|tues?|wed|thu|thurs?|fri|sat|sun)\\.?', 'weekday abbreviation (Sat), not checked', false, false)],
  ['HH', def('hour', 'hour', '(\\d{2})', 'hour 00–23')],
  ['H', def('hour', 'hour', '(\\d{1,2})', 'hour 0–23, 1–2 digits', true)],
  ['hh', def('hour', 'hour', '(\\d{2})', 'hour 01–12 (with A)')],
  ['h', def('hour', 'hour', '(\\d{1,2})', 'hour 1–12, 1–2 digits (with A)', true)],
  ['mm', def('minute', 'minute', '(\\d{2})', 'minutes')],
  ['ss', def('second', 'second', '(\\d{2})', 'seconds')],
  ['SSS', def('millisecond', 'millisecond', '(\\d{1,3})', 'milliseconds (1–3 digits)', true)],
  ['A', def('ampm', 'ampm', '([ap]\\.?m\\.?)', 'AM or PM, any case (a.m. too)', false, false)],
  ['Z', def('zone', 'offset', '(Z|[+-]\\d{2}(?::?\\d{2})?)', 'an offset: Z, +02:00, -0500, +02', false, false)],
  ['z', def('zone', 'zoneName', '([A-Za-z][A-Za-z0-9_+-]*(?:/[A-Za-z0-9_+-]+)*)', 'a time zone name: America/Chicago, UTC, EST', false, false)],
]);

/** The tokens a date format may use, for hints. */
export const FORMAT_TOKENS = [...TOKENS.keys()].join(', ');

/**
 * The formats a mapping may write, as a JSON-Schema pattern for editors: the words `iso`, `epoch`,
 * `epoch_ms`, or runs of tokens (a run of one letter is one token), `[literal]` text and other
 * characters. Parts given twice or missing are left to the loader, which names them.
 */
export const FORMAT_PATTERN = (() => {
  const byLetter = new Map<string, string[]>();
  for (const token of TOKENS.keys()) byLetter.set(token[0] as string, [...(byLetter.get(token[0] as string) ?? []), token]);
  const runs = [...byLetter].map(([letter, tokens]) => `(?:${tokens.sort((a, b) => b.length - a.length).join('|')})(?!${letter})`);
  return `^(?:iso|epoch|epoch_ms|(?:${runs.join('|')}|\\[[^\\]]*\\]|[^A-Za-z[\\]])+)$`;
})();

/** The tokens with what each means: the docs' table is checked against it. */
export function describeTokens(): { token: string; meaning: string }[] {
  return [...TOKENS].map(([token, d]) => ({ token, meaning: d.meaning }));
}

const PART_WORDS: Readonly<Record<Part, string>> = {
  year: 'the year', month: 'the month', day: 'the day', weekday: 'the weekday', hour: 'the hour', minute: 'the minutes',
  second: 'the seconds', millisecond: 'the milliseconds', ampm: 'AM/PM', zone: 'the time zone',
};

/** What a user who wrote this run most likely meant (`yyyy`, `dd`, `DDD`). */
function suggestToken(run: string): string | undefined {
  const upper = run.toUpperCase();
  if (TOKENS.has(upper) && upper !== run) return `did you mean "${upper}"?`;
  if (/^M{5,}$/.test(run)) return 'MMMM is the month name, MMM its abbreviation';
  if (/^[Yy]{3}$|^[Yy]{5,}$/.test(run)) return 'the year is YYYY (4 digits) or YY (2 digits)';
  if (/^D{3,}$/.test(run)) return 'the day is DD or D; a weekday name is dddd (ddd abbreviated)';
  if (/^[A-Za-z]$/.test(run) || /^[A-Za-z]+$/.test(run)) return `letters that are not tokens go in brackets, e.g. [${run}]; tokens: ${FORMAT_TOKENS}`;
  return undefined;
}

/** A mistake in a format: the message names the token; the hint says what to write. */
export class FormatError extends Error {
  constructor(message: string, readonly hint: string) {
    super(message);
  }
}

/** Options of a date or timestamp's reading. */
export interface DateOptions {
  /**
   * The field holds a date that has happened (a date of birth): `YY` reads as the latest year with
   * those digits on or before `past()`, today as `YYYY-MM-DD` (unless `pivot` says otherwise).
   */
  past?: (() => string) | undefined;
  /** `YY` reads as a year from `pivot` to `pivot + 99` (`pivot_year: 1940`: 45 → 1945, 39 → 2039). */
  pivot?: number | undefined;
}

/** The 2-digit years' default: 1950–2049. */
const DEFAULT_PIVOT = 1950;

interface CompiledFormat {
  parse: PartsParser;
  /** The parts the format has. */
  parts: ReadonlySet<Part>;
}

/**
 * Compiles a format such as `MM/DD/YYYY`, `DD-MMM-YYYY` or `YYYY-MM-DD[T]HH:mm:ss Z` into a parser.
 * Throws a {@link FormatError} naming the token when the format is unknown or ambiguous.
 */
export function compileFormat(format: string, options: DateOptions = {}): CompiledFormat {
  if (format === 'iso') return { parse: parseIso, parts: new Set(['year', 'month', 'day', 'hour', 'minute', 'second', 'millisecond', 'zone']) };
  const quoted = `format "${format}"`;
  let source = '';
  const readings: Reading[] = [];
  const seen = new Map<Part, string>();
  /** The token just before, when nothing was written after it yet. */
  let touching: string | undefined;
  let i = 0;
  while (i < format.length) {
    const char = format[i] as string;
    if (char === '[') {
      const end = format.indexOf(']', i + 1);
      if (end < 0) throw new FormatError(`an unclosed "[" in ${quoted}`, 'literal text is written in brackets: [T], [at]');
      source += escapeRegex(format.slice(i + 1, end));
      touching = end > i + 1 ? undefined : touching;
      i = end + 1;
      continue;
    }
    if (!/[A-Za-z]/.test(char)) {
      source += escapeRegex(char);
      touching = undefined;
      i += 1;
      continue;
    }
    let j = i;
    while (format[j] === char) j += 1;
    const run = format.slice(i, j);
    const token = TOKENS.get(run);
    if (token === undefined) {
      throw new FormatError(`unknown token "${run}" in ${quoted}`, suggestToken(run) ?? `tokens: ${FORMAT_TOKENS}`);
    }
    const before = seen.get(token.part);
    if (before !== undefined) {
      throw new FormatError(`${PART_WORDS[token.part]} is given twice in ${quoted}: "${before}" and "${run}"`, 'each part of a date is written once');
    }
    if (touching !== undefined && token.numeric && (TOKENS.get(touching)?.variable ?? false)) {
      throw new FormatError(`"${touching}" and "${run}" touch in ${quoted}: "${touching}" takes a varying number of digits, so the digits can be split two ways`,
        `write a fixed width (${touching === 'M' ? 'MM' : touching === 'D' ? 'DD' : touching === 'H' ? 'HH' : touching === 'h' ? 'hh' : 'a separator'}), or put a separator between them`);
    }
    seen.set(token.part, run);
    source += token.regex;
    readings.push(token.reading);
    touching = run;
    i = j;
  }
  checkParts(seen, quoted);
  const regex = new RegExp(`^${source}$`, 'i');
  const twelveHour = seen.has('ampm');
  const pivot = options.pivot;
  const past = options.past;
  const parse: PartsParser = (text) => {
    const match = regex.exec(text);
    if (match === null) return undefined;
    const parts: Parts = { year: 0, month: 0, day: 0, hour: 0, minute: 0, second: 0, millisecond: 0, offset: undefined, zoneName: undefined };
    let pm: boolean | undefined;
    let twoDigitYear = -1;
    for (let k = 0; k < readings.length; k += 1) {
      const value = match[k + 1] ?? '';
      switch (readings[k]) {
        case 'year': parts.year = Number(value); break;
        case 'yy': twoDigitYear = Number(value); break;
        case 'month': parts.month = Number(value); break;
        case 'monthName': parts.month = MONTH_BY_PREFIX.get(value.slice(0, 3).toLowerCase()) ?? 0; break;
        case 'day': parts.day = Number(value); break;
        case 'hour': parts.hour = Number(value); break;
        case 'minute': parts.minute = Number(value); break;
        case 'second': parts.second = Number(value); break;
        case 'millisecond': parts.millisecond = Number(value.padEnd(3, '0')); break;
        case 'ampm': pm = value[0] === 'p' || value[0] === 'P'; break;
        case 'offset': parts.offset = parseOffset(value); break;
        case 'zoneName': parts.zoneName = value; break;
        default: break;
      }
    }
    if (twoDigitYear >= 0) {
      if (pivot !== undefined) parts.year = pivot + ((twoDigitYear - (pivot % 100) + 100) % 100);
      else if (past !== undefined) parts.year = latestYearNotAfter(twoDigitYear, parts.month, parts.day, past());
      else parts.year = DEFAULT_PIVOT + ((twoDigitYear - (DEFAULT_PIVOT % 100) + 100) % 100);
    }
    if (twelveHour && pm !== undefined) {
      if (parts.hour < 1 || parts.hour > 12) return undefined;
      parts.hour = (parts.hour % 12) + (pm ? 12 : 0);
    }
    return parts;
  };
  return { parse, parts: new Set(seen.keys()) };
}

/** The parts a format must have together. */
function checkParts(seen: ReadonlyMap<Part, string>, quoted: string): void {
  if (!seen.has('year') || !seen.has('month') || !seen.has('day')) {
    const hint = seen.has('minute') && !seen.has('month') ? '"mm" is minutes; the month is MM (or M, MMM, MMMM)' : 'e.g. MM/DD/YYYY, DD-MMM-YYYY, MMMM D, YYYY';
    throw new FormatError(`${quoted} needs a year (YYYY or YY), a month (MM, M, MMM or MMMM) and a day (DD or D)`, hint);
  }
  const hour = seen.get('hour');
  if (seen.has('ampm') && (hour === 'HH' || hour === 'H')) {
    throw new FormatError(`"${hour}" is a 24-hour hour, but ${quoted} has AM/PM ("A")`, 'write hh (or h) for a 12-hour clock');
  }
  if ((hour === 'hh' || hour === 'h') && !seen.has('ampm')) {
    throw new FormatError(`"${hour}" is a 12-hour hour, but ${quoted} has no AM/PM ("A")`, 'add A, or write HH (or H) for a 24-hour clock');
  }
  if (seen.has('ampm') && hour === undefined) throw new FormatError(`"A" (AM/PM) without an hour in ${quoted}`, 'add hh:mm, e.g. MM/DD/YYYY hh:mm A');
  if (seen.has('minute') && hour === undefined) throw new FormatError(`"mm" (minutes) without an hour in ${quoted}`, 'add HH, e.g. YYYY-MM-DD HH:mm; the month is MM');
  if (seen.has('second') && !seen.has('minute')) throw new FormatError(`"ss" (seconds) without minutes in ${quoted}`, 'write HH:mm:ss');
  if (seen.has('millisecond') && !seen.has('second')) throw new FormatError(`"SSS" (milliseconds) without seconds in ${quoted}`, 'write HH:mm:ss.SSS');
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The latest year ending in `yy` whose month and day fall on or before `today` (`YYYY-MM-DD`). */
function latestYearNotAfter(yy: number, month: number, day: number, today: string): number {
  const thisYear = Number(today.slice(0, 4));
  let year = thisYear - (((thisYear % 100) - yy + 100) % 100);
  if (`${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}` > today) year -= 100;
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
    zoneName: undefined,
  };
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
  if (format === 'iso' || format.includes('[')) return undefined;
  const order: string[] = [];
  let source = '';
  let rest = format;
  while (rest.length > 0) {
    const run = /^([A-Za-z])\1*/.exec(rest)?.[0];
    if (run !== undefined) {
      if (run !== 'YYYY' && run !== 'MM' && run !== 'DD') return undefined;
      order.push(run);
      source += run === 'YYYY' ? '(\\d{4})' : '(\\d{2})';
      rest = rest.slice(run.length);
    } else {
      source += escapeRegex(rest[0] ?? '');
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

/** An ISO 8601 time of day after a date (`T00:00:00Z`, ` 13:57:14.123+02:00`), as JSON serialisers write dates. */
const ISO_TIME_OF_DAY = /^[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?$/;

/** `type: date`: text in `format` → `YYYY-MM-DD`. Throws a {@link FormatError} for a bad format. */
export function buildDate(format: string, options: DateOptions = {}): Converter {
  const date = buildDateOnly(format, options);
  if (format !== 'iso') return date;
  // `iso`: a date, or a date with its time of day (1985-04-12T00:00:00Z): the date as written is kept.
  return (text) => {
    if (text.length <= 10 || !ISO_TIME_OF_DAY.test(text.slice(10))) return date(text);
    const value = date(text.slice(0, 10));
    return value === FAIL ? fail(`expected a date as YYYY-MM-DD (a time of day may follow), got ${quoteValue(text)}`) : value;
  };
}

function buildDateOnly(format: string, options: DateOptions): Converter {
  const { parse } = compileFormat(format, options);
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

/** Zones named in the text (`z`) compiled once each; cleared when a file names more than this many. */
const MAX_NAMED_ZONES = 64;

/**
 * `type: timestamp`: text in `format` → ISO 8601 UTC. The text's own offset (`Z`) or zone name
 * (`z`) wins; otherwise the time is local to `zone` (UTC when undefined).
 */
export function buildTimestamp(format: string, zone: string | undefined, options: Omit<DateOptions, 'past'> = {}): Converter {
  const offsetOf = compileZone(zone);
  if (format === 'epoch' || format === 'epoch_ms') {
    const scale = format === 'epoch' ? 1000 : 1;
    return (text) => {
      if (!/^\d+(\.\d+)?$/.test(text)) return fail(`expected ${format} (a number), got ${quoteValue(text)}`);
      return formatUtc(Number(text) * scale);
    };
  }
  const { parse } = compileFormat(format, options);
  const expected = `expected a timestamp as ${format === 'iso' ? 'ISO 8601' : format}`;
  const named = new Map<string, ZoneOffset | undefined>();
  const zoneNamed = (name: string): ZoneOffset | undefined => {
    let found = named.get(name);
    if (found === undefined && !named.has(name)) {
      try {
        found = compileZone(name);
      } catch {
        found = undefined;
      }
      if (named.size >= MAX_NAMED_ZONES) named.clear();
      named.set(name, found);
    }
    return found;
  };
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
      let local = offsetOf;
      if (p.zoneName !== undefined) {
        const found = zoneNamed(p.zoneName);
        if (found === undefined) return fail(`expected a time zone (UTC, EST, America/New_York) in the text, got ${quoteValue(text)}`);
        local = found;
      }
      // Two passes settle the zone's offset around DST changes.
      const first = wall - local(wall) * 60_000;
      utc = wall - local(first) * 60_000;
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
