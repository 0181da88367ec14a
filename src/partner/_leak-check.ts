/**
 * The redactor's last line (see `redact.ts`): whether the key still shows in a text once the
 * encodings the precise pass does not take apart are undone. The precise pass finds the key where
 * it can say exactly which characters carry it, and keeps the rest; this check does not locate the
 * key, it only says whether it is there, in views of the text where it shows however it was encoded:
 *
 * - decoded: percent-escapes undone (repeatedly: `%2563` is `%63` encoded again), JSON and C escapes
 *   (`\u0063`, `\x63`, any escaped character `\c` read as itself), HTML character references (`&#99;`,
 *   `&#x63;`); searched in any case;
 * - hex: the decoded text, its bytes allowed to be apart (`63:61`, `63 61`, `0x63,0x61`); searched in
 *   any case, for the key in any case;
 * - base64: the decoded text, white space (and JSON's escaped `\n`, `\r`, `\t`) allowed between the
 *   characters (base64 broken by spaces or line breaks anywhere), for the key in any case, in both
 *   alphabets.
 *
 * What the check finds, the redactor takes out whole (the JSON string holding it, or the text).
 */

/** Below this length the key's hex or base64 could match ordinary text: only the decoded view is searched. */
const MIN_ENCODED_LENGTH = 8;
/** How many times percent-escapes are undone: a key encoded three times over is still found. */
const DECODE_ROUNDS = 4;

const NEEDS_DECODING = /[%\\&]/;
const PERCENT = /%([0-9a-fA-F]{2})/g;
const ESCAPE = /\\(?:u([0-9a-fA-F]{4})|x([0-9a-fA-F]{2})|([^]))/g;
const CHARACTER_REFERENCE = /&#(?:[xX]([0-9a-fA-F]{1,6})|([0-9]{1,7}));?/g;
/** JSON's escaped line breaks and tabs: white space between base64 characters (`\n` is otherwise read as an escaped `n`). */
const ESCAPED_WHITE_SPACE = /\\[nrt]/g;
/** What may stand between two hex digits of a byte sequence: up to 4 separators, then an optional `0x`. */
const HEX_SEPARATOR = '(?:[^0-9a-z]{0,4}(?:0x)?)';

export class LeakCheck {
  /** The key lower-cased, as text and as the Latin-1 reading of its UTF-8 bytes (what percent-decoding byte by byte gives). */
  readonly #plain: readonly string[];
  /** The key's hex (in each case of the key), its bytes allowed to be apart (see {@link HEX_SEPARATOR}), searched in lower-cased text. */
  readonly #hex: RegExp | null;
  /** The key's base64 cores (in each case of the key, both alphabets), white space allowed between their characters. */
  readonly #base64: RegExp | null;

  constructor(secret: string) {
    const lower = secret.toLowerCase();
    this.#plain = [...new Set([lower, Buffer.from(lower, 'utf8').toString('latin1')])];
    const variants = [...new Set([secret, lower, secret.toUpperCase()])];
    const long = Buffer.byteLength(secret, 'utf8') >= MIN_ENCODED_LENGTH;
    const hex = [...new Set(variants.map((v) => Buffer.from(v, 'utf8').toString('hex')))];
    this.#hex = long ? new RegExp(hex.map((h) => h.replace(/[0-9a-f]{2}(?=.)/g, `$&${HEX_SEPARATOR}`)).join('|')) : null;
    const cores = [...new Set(variants.flatMap(base64Cores))];
    this.#base64 = long && cores.length > 0 ? new RegExp(cores.map((core) => [...core].map(escapeRegex).join('\\s*')).join('|')) : null;
  }

  /** True when the key shows in one of the views of `text` (see the module's comment). */
  finds(text: string): boolean {
    const decoded = NEEDS_DECODING.test(text) ? decode(text) : text;
    const lower = decoded.toLowerCase();
    if (this.#plain.some((needle) => lower.includes(needle))) return true;
    if (this.#hex?.test(lower) === true) return true;
    if (this.#base64 === null) return false;
    return this.#base64.test(decoded === text ? text : decode(text.replace(ESCAPED_WHITE_SPACE, ' ')));
  }
}

/** `text` with its escapes undone, percent-escapes repeatedly (see the module's comment). */
export function decode(text: string): string {
  let out = text;
  for (let round = 0; round < DECODE_ROUNDS; round += 1) {
    const next = out
      .replace(CHARACTER_REFERENCE, (_m, hex: string | undefined, decimal: string | undefined) => fromCodePoint(hex === undefined ? Number(decimal) : parseInt(hex, 16)))
      .replace(ESCAPE, (_m, unicode: string | undefined, byte: string | undefined, char: string | undefined) => {
        if (unicode !== undefined) return String.fromCharCode(parseInt(unicode, 16));
        if (byte !== undefined) return String.fromCharCode(parseInt(byte, 16));
        return char as string;
      })
      .replace(PERCENT, (_m, byte: string) => String.fromCharCode(parseInt(byte, 16)));
    if (next === out) break;
    out = next;
  }
  return out;
}

function escapeRegex(text: string): string {
  return text.replace(/[+/\\-]/g, '\\$&');
}

function fromCodePoint(code: number): string {
  return code <= 0x10ffff ? String.fromCodePoint(code) : '';
}

/**
 * The parts of the key's base64 that do not depend on the bytes around it: at each of the three
 * byte alignments, the whole 4-character groups made of key bytes alone, in both alphabets.
 */
function base64Cores(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const cores: string[] = [];
  for (let shift = 0; shift < 3; shift += 1) {
    const encoded = Buffer.concat([Buffer.alloc(shift), bytes]).toString('base64');
    const core = encoded.slice(4 * Math.ceil(shift / 3), 4 * Math.floor((shift + bytes.length) / 3));
    if (core.length < MIN_ENCODED_LENGTH) continue;
    cores.push(core, core.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return cores;
}
