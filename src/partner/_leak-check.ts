/**
 * The redactor's last line (see `redact.ts`): whether the key still shows in a text once the
 * encodings the precise pass does not take apart are undone. The precise pass finds the key where
 * it can say exactly which characters carry it, and keeps the rest; this check does not locate the
 * key, it only says whether it is there, in views of the text where it shows however it was encoded:
 *
 * - decoded: percent-escapes undone (repeatedly: `%2563` is `%63` encoded again), JSON and C escapes
 *   (`\u0063`, `\x63`, octal `\143`, any escaped character `\c` read as itself), HTML character
 *   references (`&#99;`, `&#x63;`, and the named ones of ASCII characters: `&sol;`, `&plus;`, …);
 *   searched in any case, also with white space and invisible characters (NUL, zero-width spaces,
 *   soft hyphens) taken out, for a key spread out letter by letter, and, for a key of 16 letters and
 *   digits or more, with everything else taken out (a key spread out by dots or dashes);
 * - hex: the decoded text, its bytes allowed to be apart (`63:61`, `63 61`, `0x63,0x61`), for the key
 *   in any case, as UTF-8 and as UTF-16 (either byte order);
 * - base64: the decoded text, white space (and JSON's escaped `\n`, `\r`, `\t`) allowed between the
 *   characters (base64 broken by spaces or line breaks anywhere), for the key in any case, as UTF-8
 *   and UTF-16, in both alphabets;
 * - lists of byte values in decimal (`99, 97, 110, …`), read as text;
 * - the text each long base64 or hex run of the text (up to 16 KiB) decodes to, looked at the same
 *   way (base64 of the base64 of the key, hex of its base64, …), two levels deep.
 *
 * What the check finds, the redactor takes out whole (the JSON string holding it, or the text).
 */

/** Below this length the key's hex or base64 could match ordinary text: only its raw forms are searched (here, and in `redact.ts`). */
export const MIN_ENCODED_LENGTH = 8;
/** How many times percent-escapes are undone: a key encoded three times over is still found. */
const DECODE_ROUNDS = 4;
/** How deep base64 or hex runs are decoded and looked into again. */
const MAX_DEPTH = 2;

const NEEDS_DECODING = /[%\\&]/;
const PERCENT = /%([0-9a-fA-F]{2})/g;
const ESCAPE = /\\(?:u([0-9a-fA-F]{4})|x([0-9a-fA-F]{2})|([0-3][0-7]{2})|([^]))/g;
const CHARACTER_REFERENCE = /&#(?:[xX]([0-9a-fA-F]{1,6})|([0-9]{1,7}));?|&([A-Za-z]{2,12});/g;
/** HTML's names of ASCII characters (those a key or its encodings hold). */
const NAMED_REFERENCES: Readonly<Record<string, string>> = {
  excl: '!', quot: '"', QUOT: '"', num: '#', dollar: '$', percnt: '%', amp: '&', AMP: '&', apos: "'", lpar: '(', rpar: ')',
  ast: '*', midast: '*', plus: '+', comma: ',', hyphen: '-', dash: '-', period: '.', sol: '/', colon: ':', semi: ';',
  lt: '<', LT: '<', equals: '=', gt: '>', GT: '>', quest: '?', commat: '@', lsqb: '[', lbrack: '[', bsol: '\\', rsqb: ']',
  rbrack: ']', Hat: '^', lowbar: '_', UnderBar: '_', grave: '`', lcub: '{', lbrace: '{', verbar: '|', vert: '|',
  VerticalLine: '|', rcub: '}', rbrace: '}', tilde: '~', nbsp: ' ', Tab: '\t', NewLine: '\n',
};
/** JSON's escaped line breaks and tabs: white space between base64 characters (`\n` is otherwise read as an escaped `n`). */
const ESCAPED_WHITE_SPACE = /\\[nrt]/g;
/** White space and characters that show nothing (NUL, as UTF-16 read byte by byte shows; zero-width spaces and joiners, word joiner, BOM, soft hyphen). */
const INVISIBLE = /[\s\0\u00ad\u200b-\u200f\u2060\ufeff]+/g;
/** What is not a letter or digit: taken out for a key spread out by punctuation (`p.k.-.d…`), when it has enough letters and digits. */
const NOT_ALPHANUMERIC = /[^0-9a-z]+/g;
/** Fewest letters and digits a key needs for its letters alone to be searched (ordinary words would match fewer). */
const MIN_ALPHANUMERIC = 16;
/** What may stand between two hex digits of a byte sequence: up to 4 separators, then an optional `0x`. */
const HEX_SEPARATOR = '(?:[^0-9a-z]{0,4}(?:0x)?)';
/**
 * A list of at least 8 decimal byte values, apart by up to 4 separators. Bounded by digits, not by
 * `\b` (`1_2_…`: `_` is a word character, and the regex would try every split of every number).
 */
const DECIMAL_BYTES = /(?<!\d)\d{1,3}(?:[^0-9A-Za-z]{1,4}\d{1,3}){7,}(?!\d)/g;
/** Shortest run of base64 characters (either alphabet; hex digits are some) that may hide an encoded key. */
const MIN_RUN = 16;
/**
 * Longest run decoded and looked into again: an encoding of an encoding of the key is short, and a
 * large blob (a document in base64) would cost much to look into; the base64 view still finds the
 * key's own base64 anywhere in it.
 */
const MAX_RUN = 16_384;
const PRINTABLE_RUN = /[\x20-\x7e]{8,}/g;

export class LeakCheck {
  /** The key lower-cased, as text and as the Latin-1 reading of its UTF-8 bytes (what percent-decoding byte by byte gives). */
  readonly #plain: readonly string[];
  /** Whether the key is long enough for its encodings and spread-out forms to be searched (not to match ordinary text). */
  readonly #long: boolean;
  /** {@link #plain} without white space or invisible characters. */
  readonly #squeezed: readonly string[];
  /** The key's letters and digits alone, lower-cased, when there are at least {@link MIN_ALPHANUMERIC}; else null. */
  readonly #alphanumeric: string | null;
  /** The key's hex (UTF-8 and UTF-16, each case of the key), its bytes allowed to be apart (see {@link HEX_SEPARATOR}), searched in lower-cased text. */
  readonly #hex: RegExp | null;
  /** The key's base64 cores (UTF-8 and UTF-16, each case of the key, both alphabets), white space allowed between their characters. */
  readonly #base64: RegExp | null;

  constructor(secret: string) {
    const lower = secret.toLowerCase();
    this.#plain = [...new Set([lower, Buffer.from(lower, 'utf8').toString('latin1')])];
    const long = Buffer.byteLength(secret, 'utf8') >= MIN_ENCODED_LENGTH;
    this.#long = long;
    this.#squeezed = long ? [...new Set(this.#plain.map((p) => p.replace(INVISIBLE, '')))].filter((p) => p.length >= MIN_ENCODED_LENGTH) : [];
    const alphanumeric = lower.replace(NOT_ALPHANUMERIC, '');
    this.#alphanumeric = alphanumeric.length >= MIN_ALPHANUMERIC ? alphanumeric : null;
    const encodings = [...new Set([secret, lower, secret.toUpperCase()])].flatMap((v) => [
      Buffer.from(v, 'utf8'), Buffer.from(v, 'utf16le'), Buffer.from(v, 'utf16le').swap16(),
    ]);
    const hex = [...new Set(encodings.map((bytes) => bytes.toString('hex')))];
    this.#hex = long ? new RegExp(hex.map((h) => h.replace(/[0-9a-f]{2}(?=.)/g, `$&${HEX_SEPARATOR}`)).join('|')) : null;
    const cores = [...new Set(encodings.flatMap(base64Cores))];
    this.#base64 = long && cores.length > 0 ? new RegExp(cores.map((core) => [...core].map(escapeRegex).join('\\s*')).join('|')) : null;
  }

  /** True when the key shows in one of the views of `text` (see the module's comment). */
  finds(text: string): boolean {
    return this.#finds(text, 0);
  }

  #finds(text: string, depth: number): boolean {
    const decoded = NEEDS_DECODING.test(text) ? decode(text) : text;
    const lower = decoded.toLowerCase();
    if (this.#plain.some((needle) => lower.includes(needle))) return true;
    if (this.#squeezed.length > 0) {
      const squeezed = lower.replace(INVISIBLE, '');
      if (this.#squeezed.some((needle) => squeezed.includes(needle))) return true;
    }
    if (this.#alphanumeric !== null && lower.replace(NOT_ALPHANUMERIC, '').includes(this.#alphanumeric)) return true;
    if (this.#hex?.test(lower) === true) return true;
    if (this.#base64?.test(decoded === text ? text : decode(text.replace(ESCAPED_WHITE_SPACE, ' '))) === true) return true;
    if (!this.#long) return false;
    for (const list of decoded.match(DECIMAL_BYTES) ?? []) {
      const bytes = list.split(/[^0-9]+/).map(Number);
      if (bytes.every((b) => b <= 255) && this.#finds(Buffer.from(bytes).toString('latin1'), MAX_DEPTH)) return true;
    }
    if (depth >= MAX_DEPTH) return false;
    return derived(decoded).some((inner) => this.#finds(inner, depth + 1));
  }
}

/**
 * The printable stretches (of at least 8 characters) of what the long base64 and hex runs of `text`
 * decode to, at each alignment of a run (it may start with a character that is not part of the
 * encoding). An encoding of the key, encoded again, decodes to printable text; other data seldom
 * holds 8 printable bytes in a row, so little is looked at twice.
 */
function derived(text: string): string[] {
  const out: string[] = [];
  const add = (bytes: Buffer): void => {
    if (bytes.length >= MIN_ENCODED_LENGTH) out.push(...(bytes.toString('latin1').match(PRINTABLE_RUN) ?? []));
  };
  for (const run of base64Runs(text)) {
    for (let skip = 0; skip < 4; skip += 1) add(Buffer.from(run.slice(skip, skip + Math.floor((run.length - skip) / 4) * 4), 'base64'));
    // The hex inside the run (`sig_` and then hex): each stretch of hex digits long enough, at both alignments.
    for (const hex of runsOf(run, HEX_CHAR)) {
      for (let skip = 0; skip < 2; skip += 1) add(Buffer.from(hex.slice(skip, skip + Math.floor((hex.length - skip) / 2) * 2), 'hex'));
    }
  }
  return out;
}

/** The runs of at least {@link MIN_RUN} base64 characters (`A-Z a-z 0-9 + / - _`) in `text`. */
function base64Runs(text: string): string[] {
  return runsOf(text, BASE64_CHAR);
}

/** The runs of {@link MIN_RUN} to {@link MAX_RUN} characters of `table` (1 at their ASCII codes) in `text`: one pass, no regex backtracking. */
function runsOf(text: string, table: Uint8Array): string[] {
  const runs: string[] = [];
  const length = text.length;
  let start = 0;
  for (let i = 0; i < length; i += 1) {
    const c = text.charCodeAt(i);
    if (c < 128 && table[c] === 1) continue;
    if (i - start >= MIN_RUN && i - start <= MAX_RUN) runs.push(text.slice(start, i));
    start = i + 1;
  }
  if (length - start >= MIN_RUN && length - start <= MAX_RUN) runs.push(text.slice(start));
  return runs;
}

/** 1 at the ASCII codes of base64 characters, either alphabet; of hex digits. */
const BASE64_CHAR = asciiTable(/[A-Za-z0-9+/_-]/);
const HEX_CHAR = asciiTable(/[0-9a-fA-F]/);

function asciiTable(chars: RegExp): Uint8Array {
  return Uint8Array.from({ length: 128 }, (_, c) => (chars.test(String.fromCharCode(c)) ? 1 : 0));
}

/** `text` with its escapes undone, percent-escapes repeatedly (see the module's comment). */
export function decode(text: string): string {
  let out = text;
  for (let round = 0; round < DECODE_ROUNDS; round += 1) {
    const next = out
      .replace(CHARACTER_REFERENCE, (match, hex: string | undefined, decimal: string | undefined, name: string | undefined) => {
        if (name !== undefined) return NAMED_REFERENCES[name] ?? match;
        return fromCodePoint(hex === undefined ? Number(decimal) : parseInt(hex, 16));
      })
      .replace(ESCAPE, (_m, unicode: string | undefined, byte: string | undefined, octal: string | undefined, char: string | undefined) => {
        if (unicode !== undefined) return String.fromCharCode(parseInt(unicode, 16));
        if (byte !== undefined) return String.fromCharCode(parseInt(byte, 16));
        if (octal !== undefined) return String.fromCharCode(parseInt(octal, 8));
        return char as string;
      })
      .replace(PERCENT, (_m, byte: string) => String.fromCharCode(parseInt(byte, 16)));
    if (next === out) break;
    out = next;
  }
  return out;
}

export function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}

function fromCodePoint(code: number): string {
  return code <= 0x10ffff ? String.fromCodePoint(code) : '';
}

/**
 * The parts of the base64 of `bytes` that do not depend on the bytes around them: at each of the three
 * byte alignments, the whole 4-character groups made of those bytes alone, in both alphabets.
 */
function base64Cores(bytes: Buffer): string[] {
  return [0, 1, 2].map((shift) => stableBase64(bytes, shift)).filter((core) => core.length >= MIN_ENCODED_LENGTH).flatMap((core) => [core, toBase64Url(core)]);
}

/**
 * The base64 of `bytes` with `shift` (0–2) other bytes before them that does not depend on those
 * bytes, nor on any after: the whole 4-character groups made of `bytes` alone.
 */
export function stableBase64(bytes: Buffer, shift: number): string {
  const encoded = Buffer.concat([Buffer.alloc(shift), bytes]).toString('base64');
  return encoded.slice(4 * Math.ceil(shift / 3), 4 * Math.floor((shift + bytes.length) / 3));
}

/** Standard base64 in the URL-safe alphabet. */
export function toBase64Url(base64: string): string {
  return base64.replace(/\+/g, '-').replace(/\//g, '_');
}
