/**
 * Takes the API key out of text a partner sends back, in every form a partner (or a gateway, or a
 * debugging proxy) may echo it: raw, JSON-escaped character by character (`\u0063anary…`, `\/`),
 * URL-encoded (`%63anary…`, `+` for a space), any mix of those, base64 (standard and URL-safe) and
 * hex. The client runs every byte it keeps through it before anything is parsed, stored, logged or
 * printed (contract §5: "redacted from everything stored or printed, in every encoding").
 */

export const REDACTED = '[redacted]';

/** Below this length base64/hex fragments of the key would match ordinary text: only the raw forms are searched. */
const MIN_ENCODED_LENGTH = 8;

export class Redactor {
  readonly #pattern: RegExp | null;
  readonly #fragments: readonly Fragment[];

  constructor(secret: string) {
    if (secret === '') {
      this.#pattern = null;
      this.#fragments = [];
      return;
    }
    this.#pattern = new RegExp([...secret].map(characterForms).join(''), 'g');
    this.#fragments = secret.length >= MIN_ENCODED_LENGTH ? encodedFragments(secret) : [];
  }

  /** `text` with every occurrence of the key, in any of its forms, replaced by {@link REDACTED}. */
  redact(text: string): string {
    if (this.#pattern === null || text === '') return text;
    const out = text.replace(this.#pattern, REDACTED);
    // Spans [start, end) of the encoded forms: each fragment found, widened to the partial groups around it.
    let spans: Array<[number, number]> | null = null;
    for (const fragment of this.#fragments) {
      for (let at = out.indexOf(fragment.core); at !== -1; at = out.indexOf(fragment.core, at + 1)) {
        (spans ??= []).push([widenBefore(out, at, fragment), widenAfter(out, at + fragment.core.length, fragment)]);
      }
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
 * One encoded rendering of the key, as searched for: `core` is the part that depends on the key
 * bytes alone (hex, or the whole 4-character base64 groups made of key bytes only). Base64 groups
 * that mix key bytes with bytes around the key are partial: `before` and `after` list, nearest
 * first, the characters each position next to the core may hold in such a group (a character that
 * depends on both key bits and other bits may take several values); `padding` is how many `=` may
 * close the last partial group when the key's bytes end the encoded data.
 */
interface Fragment {
  readonly core: string;
  readonly before: readonly string[];
  readonly after: readonly string[];
  readonly padding: number;
}

/** Where the encoded key begins: `at`, moved back over the leading partial group's characters that match. */
function widenBefore(text: string, at: number, fragment: Fragment): number {
  let start = at;
  for (const allowed of fragment.before) {
    const char = text[start - 1];
    if (char === undefined || !allowed.includes(char)) break;
    start -= 1;
  }
  return start;
}

/** Where the encoded key ends: `at`, moved on over the trailing partial group's characters that match (and its `=` padding). */
function widenAfter(text: string, at: number, fragment: Fragment): number {
  let end = at;
  for (const allowed of fragment.after) {
    const char = text[end];
    if (char === undefined || !allowed.includes(char)) return end;
    end += 1;
  }
  for (let i = 0; i < fragment.padding && text[end] === '='; i += 1) end += 1;
  return end;
}

/** A regex alternative matching one character of the key in any of its echoed forms. */
function characterForms(char: string): string {
  const forms = new Set<string>([escapeRegex(char)]);
  // JSON: \uXXXX (any case of the hex digits; a character outside the BMP is two escapes).
  const units = [...Array(char.length).keys()].map((i) => char.charCodeAt(i));
  forms.add(units.map((u) => `\\\\u${caseless(u.toString(16).padStart(4, '0'))}`).join(''));
  const short: Record<string, string> = { '/': '\\\\/', '"': '\\\\"', '\\': '\\\\\\\\', '\b': '\\\\b', '\f': '\\\\f', '\n': '\\\\n', '\r': '\\\\r', '\t': '\\\\t' };
  const shortForm = short[char];
  if (shortForm !== undefined) forms.add(shortForm);
  // URL encoding: %XX per UTF-8 byte (any case), + for a space (form encoding).
  forms.add([...Buffer.from(char, 'utf8')].map((b) => `%${caseless(b.toString(16).padStart(2, '0'))}`).join(''));
  if (char === ' ') forms.add('\\+');
  return `(?:${[...forms].join('|')})`;
}

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** Base64 (standard, URL-safe) and hex renderings of the key, at every byte alignment. */
function encodedFragments(secret: string): Fragment[] {
  const bytes = Buffer.from(secret, 'utf8');
  const hex = bytes.toString('hex');
  const fragments = new Map<string, Fragment>();
  for (const core of [hex, hex.toUpperCase()]) fragments.set(core, { core, before: [], after: [], padding: 0 });
  for (let shift = 0; shift < 3; shift += 1) {
    // With `shift` bytes before it, only the 4-character groups made of key bytes alone are stable.
    const encoded = Buffer.concat([Buffer.alloc(shift), bytes]).toString('base64');
    const from = 4 * Math.ceil(shift / 3);
    const to = 4 * Math.floor((shift + bytes.length) / 3);
    if (to - from < MIN_ENCODED_LENGTH) continue;
    const core = encoded.slice(from, to);
    // The partial groups: the first `3 - shift` key bytes after `shift` other ones, the last `tail` key bytes before other ones.
    const head = shift === 0 ? [] : [...bytes.subarray(0, 3 - shift)];
    const tail = [...bytes.subarray(bytes.length - ((shift + bytes.length) % 3), bytes.length)];
    for (const alphabet of [BASE64, BASE64URL]) {
      const variant = alphabet === BASE64 ? core : core.replace(/\+/g, '-').replace(/\//g, '_');
      const after = partialGroup(tail, 0, alphabet);
      fragments.set(variant, {
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

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}
