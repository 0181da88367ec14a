/**
 * Takes the API key out of text a partner sends back, in every form a partner (or a gateway, or a
 * debugging proxy) may echo it: raw (in any case), JSON-escaped character by character (`\u0063anary…`, `\/`),
 * URL-encoded (`%63anary…`, `+` for a space), any mix of those, base64 (standard and URL-safe) and
 * hex (any mix of cases). Base64 is found with its `+`, `/`, `-`, `_` raw, JSON-escaped (`\/` as PHP
 * writes it, `\u002B`) or percent-encoded in either case (`%2B`, `%2f`; `%3D` for its `=` padding),
 * and broken into lines anywhere (MIME, PEM) by raw, JSON-escaped or percent-encoded line breaks.
 * The client runs every byte it keeps through it before anything is parsed, stored, logged or
 * printed (README, "Outcomes": "redacted from everything stored or printed, in every encoding").
 *
 * Two precompiled regexes per key (built by the constructor): one for the key itself, one with an
 * alternative per encoded rendering; only the characters next to a match are looked at further.
 * Then a last check (`_leak-check.ts`) looks for the key once every other encoding it knows is undone
 * (hex with separators, base64 broken by spaces, escapes applied twice, the base64 or hex of the key
 * in another case, …); what it finds is taken out whole: the smallest JSON value that shows it, or
 * the text when it is not JSON.
 */

import { escapeRegex, LeakCheck, MIN_ENCODED_LENGTH, stableBase64, toBase64Url } from './_leak-check.js';
import type { NetworkOptions } from './client-api.js';
import { proxyPassword } from './proxy.js';

export const REDACTED = '[redacted]';

/**
 * Takes every secret the client holds out of a text: the API key, and the proxy's password and the
 * client key's passphrase when there are (README, "Behind a proxy…"), each in every form the key is
 * looked for in. Secrets that are empty, or the same as another, are skipped.
 */
export class Redactor {
  readonly #secrets: readonly SecretRedactor[];

  constructor(secret: string, others: readonly (string | undefined)[] = []) {
    const distinct = [...new Set([secret, ...others].filter((s): s is string => s !== undefined && s !== ''))];
    // Longest first: a secret that holds another is taken whole before the shorter one cuts it up.
    this.#secrets = distinct.sort((a, b) => b.length - a.length).map((s) => new SecretRedactor(s));
  }

  /** `text` with each secret, in any of its forms, replaced by {@link REDACTED} (see {@link SecretRedactor.redact}). */
  redact(text: string): string {
    let out = text;
    for (const secret of this.#secrets) out = secret.redact(out);
    return out;
  }
}

/** The secrets of the way to the partner besides the key: the proxy's password, the client key's passphrase. */
export function networkSecrets(network: NetworkOptions | undefined): string[] {
  const secrets: string[] = [];
  if (network?.proxy !== undefined) {
    const password = proxyPassword(new URL(network.proxy));
    if (password !== undefined) secrets.push(password);
  }
  if (network?.passphrase !== undefined) secrets.push(network.passphrase);
  return secrets;
}

/** One secret's redaction (the API key's, and the same for each other secret). */
class SecretRedactor {
  /** The key itself, in its echoed forms (see {@link characterForms}). */
  readonly #pattern: RegExp | null;
  /** The cores of the encoded fragments, one capturing group each (in {@link #fragments}' order). */
  readonly #encoded: RegExp | null;
  readonly #fragments: readonly Fragment[];
  /** The last line: whether the key still shows once other encodings are undone (see `_leak-check.ts`). */
  readonly #leaks: LeakCheck | null;

  constructor(secret: string) {
    this.#leaks = secret === '' ? null : new LeakCheck(secret);
    this.#pattern = secret === '' ? null : new RegExp([...secret].map(characterForms).join(''), 'g');
    // Longest first: where two cores match at the same place, the longer is taken.
    this.#fragments = secret.length >= MIN_ENCODED_LENGTH ? encodedFragments(secret).sort((a, b) => b.core.length - a.core.length) : [];
    this.#encoded = this.#fragments.length === 0 ? null : new RegExp(this.#fragments.map((f) => `(${corePattern(f)})`).join('|'), 'g');
  }

  /**
   * `text` with every occurrence of the key, in any of its forms, replaced by {@link REDACTED}. Where
   * the key still shows in a form the precise pass does not take apart (hex with separators, base64
   * broken by spaces, escapes applied twice…), what holds it goes whole: the smallest JSON values that
   * show it (a string, an array of its bytes, …), so that the rest of the answer (its `status`, its
   * `error_code`) is still read; a text that is not JSON goes whole.
   */
  redact(text: string): string {
    const out = this.#redactPrecisely(text);
    const leaks = this.#leaks;
    if (leaks === null || !leaks.finds(out)) return out;
    let parsed: unknown;
    try {
      parsed = JSON.parse(out);
    } catch {
      return REDACTED; // Not JSON: the text goes whole.
    }
    const cleaned = withoutKey(parsed, leaks);
    if (cleaned !== REDACTED || !isPlainObject(parsed)) return JSON.stringify(cleaned);
    // The object as a whole shows the key (across its fields): what says how the partner answered is kept.
    const kept = Object.fromEntries(['status', 'error_code'].flatMap((field) => {
      const value = parsed[field];
      return typeof value === 'string' && value.length <= 64 && !leaks.finds(value) ? [[field, value]] : [];
    }));
    const note = JSON.stringify({ ...kept, quote_batch_note: 'the answer showed the API key: withheld' });
    return leaks.finds(note) ? REDACTED : note;
  }

  #redactPrecisely(text: string): string {
    if (this.#pattern === null || text === '') return text;
    const out = text.replace(this.#pattern, REDACTED);
    const encoded = this.#encoded;
    if (encoded === null) return out;
    // Spans [start, end) of the encoded forms: each core found, widened to the partial groups around it.
    let spans: Array<[number, number]> | null = null;
    encoded.lastIndex = 0;
    for (let match = encoded.exec(out); match !== null; match = encoded.exec(out)) {
      let group = 1;
      while (match[group] === undefined) group += 1;
      const fragment = this.#fragments[group - 1] as Fragment;
      (spans ??= []).push([widenBefore(out, match.index, fragment), widenAfter(out, match.index + match[0].length, fragment)]);
      encoded.lastIndex = match.index + 1; // a core of another fragment may overlap this one
    }
    if (spans === null) return out;
    spans.sort((a, b) => a[0] - b[0]);
    let result = '';
    let kept = 0; // `out` before this index is already in `result`
    let [start, end] = spans[0] as [number, number];
    for (const [from, to] of spans) {
      if (from <= end) {
        end = Math.max(end, to);
        continue;
      }
      result += out.slice(kept, start) + REDACTED;
      kept = end;
      [start, end] = [from, to];
    }
    return result + out.slice(kept, start) + REDACTED + out.slice(end);
  }
}

/**
 * `value` with each smallest part that shows the key replaced by {@link REDACTED}: a string, an
 * object key (renamed), or an array or object that shows it only as a whole (an array of its bytes or
 * characters, hex split over items). Only called once the key was found somewhere (the fallback path).
 */
function withoutKey(value: unknown, leaks: LeakCheck): unknown {
  if (typeof value === 'string') return leaks.finds(value) ? REDACTED : value;
  if (Array.isArray(value)) {
    const items = value.map((item) => withoutKey(item, leaks));
    // An array of characters (or short pieces) shows the key once joined.
    const joined = items.every((item) => typeof item === 'string' && item.length <= 4) ? items.join('') : '';
    return leaks.finds(JSON.stringify(items)) || (joined !== '' && leaks.finds(joined)) ? REDACTED : items;
  }
  if (value === null || typeof value !== 'object') return leaks.finds(JSON.stringify(value)) ? REDACTED : value;
  // No prototype: a `__proto__` key of the answer stays a key.
  const out = Object.create(null) as Record<string, unknown>;
  const entries = Object.entries(value);
  for (const [key, item] of entries) {
    let name = key;
    if (leaks.finds(key)) {
      // A name no other field has (the precise pass may already have named one `[redacted]`).
      name = REDACTED;
      for (let n = 2; Object.hasOwn(value, name) || Object.hasOwn(out, name); n += 1) name = `${REDACTED} ${n}`;
    }
    out[name] = withoutKey(item, leaks);
  }
  return leaks.finds(JSON.stringify(out)) ? REDACTED : out;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * One encoded rendering of the key, as searched for: `core` is the part that depends on the key
 * bytes alone (hex, or the whole 4-character base64 groups made of key bytes only). Base64 groups
 * that mix key bytes with bytes around the key are partial: `before` and `after` list, nearest
 * first, the characters each position next to the core may hold in such a group (a character that
 * depends on both key bits and other bits may take several values); `padding` is how many `=` may
 * close the last partial group when the key's bytes end the encoded data.
 */
interface Fragment {
  readonly kind: 'hex' | 'base64';
  readonly core: string;
  readonly before: readonly string[];
  readonly after: readonly string[];
  readonly padding: number;
}

/**
 * The regex source matching a fragment's core as it may be echoed. Hex: in any mix of cases. Base64:
 * letters and digits raw, the other characters also JSON-escaped (`\/`, `\u002f`, `\u002F`) or
 * percent-encoded (`%2F`, `%2f`), as a JSON encoder or a URL (query string, form body) renders them;
 * the lines may be broken anywhere (MIME wraps at 76 characters, PEM at 64), by a raw, JSON-escaped
 * or percent-encoded line break.
 */
function corePattern(fragment: Fragment): string {
  if (fragment.kind === 'hex') return caseless(fragment.core);
  return [...fragment.core].map(encodedCharForms).join(`${LINE_BREAK}?`);
}

/** A line break in any of the forms {@link corePattern} allows between base64 characters. */
const LINE_BREAK = String.raw`(?:\r\n?|\n|\\r(?:\\n)?|\\n|%0[dD](?:%0[aA])?|%0[aA])`;
const LINE_BREAK_BEFORE = new RegExp(`${LINE_BREAK}$`);
const LINE_BREAK_AT = new RegExp(LINE_BREAK, 'y');

/**
 * A regex alternative matching one base64 character in the forms {@link corePattern} allows: a letter
 * or digit raw; `+`, `/`, `-`, `_` also in the forms a character of the key itself is echoed in
 * ({@link characterForms}: `\u002F`, `\/`, `%2f`…).
 */
function encodedCharForms(char: string): string {
  return /[0-9A-Za-z]/.test(char) ? char : characterForms(char);
}

/**
 * The encoded character ending at (`TOKEN_BEFORE`, on the few characters before a position) or
 * starting at (`TOKEN_AT`) a position, escapes read as one: `\uXXXX`, `%XX`, `\` and the escaped
 * character, or one raw character. An escape is never split: in `\n` the `n` is not a base64 `n`.
 */
const TOKEN_BEFORE = /(?:\\u([0-9a-fA-F]{4})|%([0-9a-fA-F]{2})|\\([^])|([^]))$/;
const TOKEN_AT = /\\u([0-9a-fA-F]{4})|%([0-9a-fA-F]{2})|\\([^])|([^])/y;
/** The longest token and line break: how far back {@link TOKEN_BEFORE} and {@link LINE_BREAK_BEFORE} look. */
const LOOK_BACK = 6;

/** The character a token stands for ('' for a JSON escape of a letter or digit, like `\n`: no base64 character). */
function decodeToken(match: RegExpExecArray): string {
  const [, unicode, percent, escaped, raw] = match;
  if (unicode !== undefined) return String.fromCharCode(parseInt(unicode, 16));
  if (percent !== undefined) return String.fromCharCode(parseInt(percent, 16));
  if (escaped !== undefined) return /[0-9A-Za-z]/.test(escaped) ? '' : escaped;
  return raw as string;
}

/** Where the encoded character ending at `end` (or before a line break ending there) starts, if it is in `allowed`; -1 if not. */
function tokenBefore(text: string, end: number, allowed: string): number {
  for (let attempt = 0; attempt < 2; attempt += 1) {
    const window = text.slice(Math.max(0, end - LOOK_BACK), end);
    const token = TOKEN_BEFORE.exec(window);
    if (token !== null) {
      const char = decodeToken(token);
      if (char !== '' && allowed.includes(char)) return end - token[0].length;
    }
    if (attempt === 1) break;
    const lineBreak = LINE_BREAK_BEFORE.exec(window);
    if (lineBreak === null) break;
    end -= lineBreak[0].length;
  }
  return -1;
}

/** Where the encoded character starting at `at` (or after a line break starting there) ends, if it is in `allowed`; -1 if not. */
function tokenAt(text: string, at: number, allowed: string): number {
  for (let attempt = 0; attempt < 2; attempt += 1) {
    TOKEN_AT.lastIndex = at;
    const token = TOKEN_AT.exec(text);
    if (token !== null) {
      const char = decodeToken(token);
      if (char !== '' && allowed.includes(char)) return at + token[0].length;
    }
    if (attempt === 1) break;
    LINE_BREAK_AT.lastIndex = at;
    const lineBreak = LINE_BREAK_AT.exec(text);
    if (lineBreak === null) break;
    at += lineBreak[0].length;
  }
  return -1;
}

/** Where the encoded key begins: `at`, moved back over the leading partial group's characters that match. */
function widenBefore(text: string, at: number, fragment: Fragment): number {
  let start = at;
  for (const allowed of fragment.before) {
    const from = tokenBefore(text, start, allowed);
    if (from === -1) break;
    start = from;
  }
  return start;
}

/** Where the encoded key ends: `at`, moved on over the trailing partial group's characters that match (and its `=` padding). */
function widenAfter(text: string, at: number, fragment: Fragment): number {
  let end = at;
  for (const allowed of fragment.after) {
    const to = tokenAt(text, end, allowed);
    if (to === -1) return end;
    end = to;
  }
  for (let i = 0; i < fragment.padding; i += 1) {
    const to = tokenAt(text, end, '=');
    if (to === -1) break;
    end = to;
  }
  return end;
}

/** A regex alternative matching one character of the key in any of its echoed forms. */
function characterForms(char: string): string {
  const forms = new Set<string>();
  // In either case: a gateway or a logging proxy may echo a header's value lower- or upper-cased,
  // and then escape it. A case that changes the length ('ß' → 'SS') is not one character's form.
  for (const variant of new Set([char, char.toLowerCase(), char.toUpperCase()])) {
    if ([...variant].length === 1) addForms(variant, forms);
  }
  return `(?:${[...forms].join('|')})`;
}

/** Adds the forms of one character, in its own case, to `forms`. */
function addForms(char: string, forms: Set<string>): void {
  forms.add(escapeRegex(char));
  // JSON: \uXXXX (any case of the hex digits; a character outside the BMP is two escapes).
  const units = [...Array(char.length).keys()].map((i) => char.charCodeAt(i));
  forms.add(units.map((u) => `\\\\u${caseless(u.toString(16).padStart(4, '0'))}`).join(''));
  const short: Record<string, string> = { '/': '\\\\/', '"': '\\\\"', '\\': '\\\\\\\\', '\b': '\\\\b', '\f': '\\\\f', '\n': '\\\\n', '\r': '\\\\r', '\t': '\\\\t' };
  const shortForm = short[char];
  if (shortForm !== undefined) forms.add(shortForm);
  // URL encoding: %XX per UTF-8 byte (any case), + for a space (form encoding).
  forms.add([...Buffer.from(char, 'utf8')].map((b) => `%${caseless(b.toString(16).padStart(2, '0'))}`).join(''));
  if (char === ' ') forms.add('\\+');
}

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** Base64 (standard, URL-safe) and hex renderings of the key, at every byte alignment. */
function encodedFragments(secret: string): Fragment[] {
  const bytes = Buffer.from(secret, 'utf8');
  const hex = bytes.toString('hex');
  const fragments = new Map<string, Fragment>();
  // Searched for in any mix of cases (see corePattern).
  fragments.set(`hex:${hex}`, { kind: 'hex', core: hex, before: [], after: [], padding: 0 });
  for (let shift = 0; shift < 3; shift += 1) {
    // With `shift` bytes before it, only the 4-character groups made of key bytes alone are stable.
    const core = stableBase64(bytes, shift);
    if (core.length < MIN_ENCODED_LENGTH) continue;
    // The partial groups: the first `3 - shift` key bytes after `shift` other ones, the last `tail` key bytes before other ones.
    const head = shift === 0 ? [] : [...bytes.subarray(0, 3 - shift)];
    const tail = [...bytes.subarray(bytes.length - ((shift + bytes.length) % 3), bytes.length)];
    for (const alphabet of [BASE64, BASE64URL]) {
      const variant = alphabet === BASE64 ? core : toBase64Url(core);
      const after = partialGroup(tail, 0, alphabet);
      fragments.set(`base64:${variant}`, {
        kind: 'base64',
        core: variant,
        before: partialGroup(head, shift, alphabet).reverse(),
        after,
        padding: after.length === 0 ? 0 : 4 - after.length,
      });
    }
  }
  return [...fragments.values()];
}

/**
 * The characters of a 3-byte base64 group holding `keyBytes` from byte `offset` on (other bytes
 * anywhere else) that depend on a key bit, in order: each as the string of the values it may take.
 */
function partialGroup(keyBytes: readonly number[], offset: number, alphabet: string): string[] {
  if (keyBytes.length === 0) return [];
  let value = 0;
  keyBytes.forEach((byte, i) => {
    value |= byte << (8 * (2 - offset - i));
  });
  const keyMask = ((1 << (8 * keyBytes.length)) - 1) << (8 * (3 - offset - keyBytes.length));
  const chars: string[] = [];
  for (let position = 0; position < 4; position += 1) {
    const shiftBy = 18 - 6 * position;
    const known = (keyMask >> shiftBy) & 63;
    if (known === 0) continue;
    const bits = (value >> shiftBy) & known;
    let allowed = '';
    for (let v = 0; v < 64; v += 1) if ((v & known) === bits) allowed += alphabet[v];
    chars.push(allowed);
  }
  return chars;
}

function caseless(hex: string): string {
  return [...hex].map((c) => (/[a-f]/.test(c) ? `[${c}${c.toUpperCase()}]` : c)).join('');
}

