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
  readonly #fragments: readonly string[];

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
    let out = text.replace(this.#pattern, REDACTED);
    for (const fragment of this.#fragments) {
      if (out.includes(fragment)) out = out.split(fragment).join(REDACTED);
    }
    return out;
  }
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

/** Base64 (standard, URL-safe) and hex renderings of the key, at every byte alignment. */
function encodedFragments(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const fragments = new Set<string>([bytes.toString('hex'), bytes.toString('hex').toUpperCase()]);
  for (let shift = 0; shift < 3; shift += 1) {
    // With `shift` bytes before it, only the 4-character groups made of key bytes alone are stable.
    const encoded = Buffer.concat([Buffer.alloc(shift), bytes]).toString('base64');
    const from = 4 * Math.ceil(shift / 3);
    const to = 4 * Math.floor((shift + bytes.length) / 3);
    if (to - from < MIN_ENCODED_LENGTH) continue;
    const inner = encoded.slice(from, to);
    fragments.add(inner);
    fragments.add(inner.replace(/\+/g, '-').replace(/\//g, '_'));
  }
  return [...fragments];
}

function caseless(hex: string): string {
  return [...hex].map((c) => (/[a-f]/.test(c) ? `[${c}${c.toUpperCase()}]` : c)).join('');
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}
