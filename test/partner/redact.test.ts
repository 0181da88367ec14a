import { describe, expect, it } from 'vitest';
import { networkSecrets, REDACTED, Redactor } from '../../src/partner/redact.js';

const KEY = 'canary-Key_7f3a9/+x';
const redactor = new Redactor(KEY);
const jsonEscapeAll = (text: string): string => [...text].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');
const urlEncodeAll = (text: string): string => [...Buffer.from(text)].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');

describe('Redactor', () => {
  it.each([
    ['raw', KEY],
    ['lower-cased (a gateway echoing the header)', KEY.toLowerCase()],
    ['upper-cased', KEY.toUpperCase()],
    ['lower-cased, then percent-encoded', urlEncodeAll(KEY.toLowerCase())],
    ['lower-cased, then JSON-escaped', jsonEscapeAll(KEY.toLowerCase())],
    ['JSON.stringify', JSON.stringify(KEY).slice(1, -1)],
    ['every character \\u-escaped', jsonEscapeAll(KEY)],
    ['\\u-escaped in upper-case hex', jsonEscapeAll(KEY).toUpperCase().replace(/\\U/g, '\\u')],
    ['the first character escaped only', `\\u0063${KEY.slice(1)}`],
    ['the slash escaped JSON-style', KEY.replace('/', '\\/')],
    ['encodeURIComponent', encodeURIComponent(KEY)],
    ['every byte percent-encoded', urlEncodeAll(KEY)],
    ['percent-encoded in lower-case hex', urlEncodeAll(KEY).toLowerCase()],
    ['a mix of all three', `${KEY.slice(0, 3)}${jsonEscapeAll(KEY.slice(3, 7))}${urlEncodeAll(KEY.slice(7, 12))}${KEY.slice(12)}`],
    ['base64', Buffer.from(KEY).toString('base64')],
    ['base64 inside other text', Buffer.from(`x-api-key: ${KEY}`).toString('base64')],
    ['base64url', Buffer.from(`k=${KEY}`).toString('base64url')],
    ['hex', Buffer.from(KEY).toString('hex')],
  ])('%s', (_name, form) => {
    const text = `{"echo":"${form}","message":"key ${form} refused"}`;
    const out = redactor.redact(text);
    expect(out).toContain(REDACTED);
    expect(out).not.toContain(KEY);
    expect(out).not.toContain(form.length >= 8 ? form : KEY);
    // What is left cannot be decoded back into the key.
    expect(decodeURIComponent(JSON.parse(`"${out.replace(/"/g, '')}"`))).not.toContain(KEY);
  });

  it('leaves text without the key alone, and works with an empty key', () => {
    const text = '{"status":"success","transaction_id":"3f2b9c1e","bridge":"https://x.example/?a=%20b"}';
    expect(redactor.redact(text)).toBe(text);
    expect(new Redactor('').redact(text)).toBe(text);
  });

  it('redacts keys with regex metacharacters and non-ASCII characters', () => {
    const odd = new Redactor('k.e*y(ü)[1]$');
    expect(odd.redact('a k.e*y(ü)[1]$ b')).toBe(`a ${REDACTED} b`);
    expect(odd.redact(encodeURIComponent('k.e*y(ü)[1]$'))).toBe(REDACTED);
    expect(odd.redact('kXeXy(ü)[1]$')).toBe('kXeXy(ü)[1]$');
  });
});

describe('Redactor: base64 of the key, partial groups at both ends', () => {
  // Made-up keys whose UTF-8 length mod 3 is 2, 0, 1 and 1 (the last with non-ASCII bytes and a `+`/`-` in its encoding).
  const keys = ['pk/CANARY+demo=67890&qz', 'fake?tok>~12QRS', 'fake?tok>~12QRST', 'mäde-üp?~>9'];
  // Byte lengths 0..5 and 11: the key starts at offset 0, 1 or 2 mod 3 of the encoded data.
  const prefixes = ['', 'a', 'ab', 'abc', 'key=', 'x-api-key: '];
  const suffixes = ['', 'Z', 'YZ', '&more=1'];
  const encodings = ['base64', 'base64url'] as const;
  const cases = keys.flatMap((key) =>
    prefixes.flatMap((prefix) => suffixes.flatMap((suffix) => encodings.map((encoding) => ({ key, prefix, suffix, encoding })))),
  );

  /**
   * What must be left of `base64(prefix + key + suffix)`: the characters before the first and after
   * the last that carry a bit of the key (and, when the key ends the data, no padding either).
   */
  function expected(prefix: string, key: string, suffix: string, encoding: BufferEncoding): string {
    const encoded = Buffer.from(prefix + key + suffix).toString(encoding);
    const keyFrom = 8 * Buffer.byteLength(prefix);
    const keyTo = keyFrom + 8 * Buffer.byteLength(key);
    const first = Math.floor(keyFrom / 6); // the character holding the key's first bit
    const last = Math.floor((keyTo - 1) / 6); // the character holding its last bit
    const rest = suffix === '' ? '' : encoded.slice(last + 1);
    return `${encoded.slice(0, first)}${REDACTED}${rest}`;
  }

  /** Every 4-character piece of the key's base64/base64url renderings (the characters carrying key bits, padding included). */
  function keyPieces(key: string): Set<string> {
    const pieces = new Set<string>();
    for (let shift = 0; shift < 3; shift += 1) {
      for (const encoding of encodings) {
        const encoded = Buffer.concat([Buffer.alloc(shift), Buffer.from(key)]).toString(encoding);
        const carrying = encoded.slice(Math.floor((8 * shift) / 6));
        for (let i = 0; i + 4 <= carrying.length; i += 1) pieces.add(carrying.slice(i, i + 4));
      }
    }
    return pieces;
  }

  it.each(cases)('$encoding of prefix "$prefix" + key "$key" + suffix "$suffix"', ({ key, prefix, suffix, encoding }) => {
    const redactor = new Redactor(key);
    const encoded = Buffer.from(prefix + key + suffix).toString(encoding);
    const out = redactor.redact(`{"b64":"${encoded}","next":"ok"}`);
    expect(out).toBe(`{"b64":"${expected(prefix, key, suffix, encoding)}","next":"ok"}`);
    for (const piece of keyPieces(key)) expect(out, piece).not.toContain(piece);
  });

  it('the reported case: no partial group (`Jng=`-like) is left after the redacted core', () => {
    const key = 'pk/CANARY+demo=67890&qz';
    const body = `error: bad credentials b64=${Buffer.from(key).toString('base64')}&retry=no`;
    expect(new Redactor(key).redact(body)).toBe(`error: bad credentials b64=${REDACTED}&retry=no`);
  });

  it('keeps base64 characters next to the key when they carry none of its bits', () => {
    const key = 'fake?tok>~12QRS'; // 15 bytes: at offset 0 its encoding is whole groups
    const core = Buffer.from(key).toString('base64');
    const redactor = new Redactor(key);
    expect(redactor.redact(`QUJD${core}REVG`)).toBe(`QUJD${REDACTED}REVG`);
    expect(redactor.redact(`${core},${core}`)).toBe(`${REDACTED},${REDACTED}`);
    expect(redactor.redact(`x${core}${core}y`)).toBe(`x${REDACTED}y`);
  });
});

describe('Redactor: the key and its base64/hex as JSON encoders, URLs and MIME render them', () => {
  // Made-up keys with `/`, `+`, `=`, non-ASCII characters (one outside the BMP) and base64 renderings with `+` and `/`.
  const keys = ['pk/CANARY+demo=67890&qz', 'fäke/Tök+en=ü~>?', '??>>~~ÿþ/+=q9!', 'made-up 🔑 k/+=y'];
  // The last prefix puts the key across the 76th character of the base64 (a MIME line end).
  const prefixes = ['', 'a', 'ab', 'x-api-key: ', 'L'.repeat(55)];
  const suffixes = ['', 'Z', '&more=1'];
  const hex2 = (char: string): string => char.charCodeAt(0).toString(16).padStart(2, '0');
  const wrap = (width: number, lineBreak: string) => (text: string) => text.replace(new RegExp(`.{${width}}`, 'g'), (line) => line + lineBreak);
  const same = (text: string): string => text;

  /** Each encoding: how the base64 is rendered, and how a piece of it without a line break is. */
  const encodings: Array<{ name: string; alphabet: 'base64' | 'base64url'; render: (b64: string) => string; piece: (b64: string) => string; json: boolean }> = [
    { name: 'base64, `/` as `\\/` (PHP json_encode)', alphabet: 'base64', render: (b) => b.replace(/\//g, '\\/'), piece: (b) => b.replace(/\//g, '\\/'), json: true },
    { name: 'base64, `+/=` as `\\u002B`-style escapes', alphabet: 'base64', render: (b) => b.replace(/[+/=]/g, (c) => `\\u00${hex2(c).toUpperCase()}`), piece: (b) => b.replace(/[+/=]/g, (c) => `\\u00${hex2(c).toUpperCase()}`), json: true },
    { name: 'base64, percent-encoded', alphabet: 'base64', render: encodeURIComponent, piece: encodeURIComponent, json: true },
    { name: 'base64, percent-encoded in lower case', alphabet: 'base64', render: (b) => encodeURIComponent(b).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()), piece: (b) => encodeURIComponent(b).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()), json: true },
    { name: 'base64url, percent-encoded `=`-less', alphabet: 'base64url', render: encodeURIComponent, piece: same, json: true },
    { name: 'MIME: lines of 76, CRLF', alphabet: 'base64', render: wrap(76, '\r\n'), piece: same, json: false },
    { name: 'lines of 7, LF', alphabet: 'base64', render: wrap(7, '\n'), piece: same, json: false },
    { name: 'lines of 5 in a JSON string (`\\r\\n`), `/` as `\\/`', alphabet: 'base64', render: (b) => wrap(5, '\r\n')(b).replace(/\//g, '\\/').replace(/\r/g, '\\r').replace(/\n/g, '\\n'), piece: (b) => b.replace(/\//g, '\\/'), json: true },
    { name: 'lines of 6 with `\\n`, URL-encoded', alphabet: 'base64url', render: (b) => encodeURIComponent(wrap(6, '\n')(b)), piece: same, json: true },
    { name: 'lines of 76 with `%0D%0A`, `+/=` percent-encoded', alphabet: 'base64', render: (b) => encodeURIComponent(wrap(76, '\r\n')(b)), piece: encodeURIComponent, json: true },
  ];

  /** The text with every rendering above undone: percent-escapes, JSON escapes and line breaks. */
  const plain = (text: string): string =>
    text
      .replace(/%([0-9a-f]{2})/gi, (_m, code: string) => String.fromCharCode(parseInt(code, 16)))
      .replace(/\\u([0-9a-f]{4})/gi, (_m, code: string) => String.fromCharCode(parseInt(code, 16)))
      .replace(/\\\//g, '/')
      .replace(/\r|\n|\\r|\\n/g, '');

  /** What must be left of the base64 of `prefix + key + suffix`, as in the block above. */
  function expected(prefix: string, key: string, suffix: string, encoding: BufferEncoding): string {
    const encoded = Buffer.from(prefix + key + suffix).toString(encoding);
    const keyFrom = 8 * Buffer.byteLength(prefix);
    const keyTo = keyFrom + 8 * Buffer.byteLength(key);
    const rest = suffix === '' ? '' : encoded.slice(Math.floor((keyTo - 1) / 6) + 1);
    return `${encoded.slice(0, Math.floor(keyFrom / 6))}${REDACTED}${rest}`;
  }

  function keyPieces(key: string, encoding: BufferEncoding): Set<string> {
    const pieces = new Set<string>();
    for (let shift = 0; shift < 3; shift += 1) {
      const encoded = Buffer.concat([Buffer.alloc(shift), Buffer.from(key)]).toString(encoding);
      const carrying = encoded.slice(Math.floor((8 * shift) / 6));
      for (let i = 0; i + 4 <= carrying.length; i += 1) pieces.add(carrying.slice(i, i + 4));
    }
    return pieces;
  }

  const base64Cases = keys.flatMap((key) => prefixes.flatMap((prefix) => suffixes.flatMap((suffix) => encodings.map((encoding) => ({ key, prefix, suffix, encoding })))));
  it.each(base64Cases)('$encoding.name: "$prefix" + "$key" + "$suffix"', ({ key, prefix, suffix, encoding }) => {
    const rendered = encoding.render(Buffer.from(prefix + key + suffix).toString(encoding.alphabet));
    const out = new Redactor(key).redact(`{"data":"${rendered}","next":"ok"}`);
    // Undone, the rendering left is exactly what the plain base64 leaves: the characters carrying no key bit.
    expect(plain(out)).toBe(`{"data":"${expected(prefix, key, suffix, encoding.alphabet)}","next":"ok"}`);
    for (const piece of keyPieces(key, encoding.alphabet)) {
      expect(out, piece).not.toContain(encoding.piece(piece));
      expect(plain(out), piece).not.toContain(piece);
    }
    if (encoding.json) expect(() => JSON.parse(out) as unknown).not.toThrow();
  });

  const cases: Array<[string, (hex: string) => string]> = [
    ['lower', same],
    ['upper', (h) => h.toUpperCase()],
    ['mixed', (h) => [...h].map((c, i) => (i % 2 === 0 ? c.toUpperCase() : c)).join('')],
    ['mixed the other way', (h) => [...h].map((c, i) => (i % 3 === 0 ? c : c.toUpperCase())).join('')],
  ];
  const hexCases = keys.flatMap((key) => prefixes.slice(0, 4).flatMap((prefix) => cases.map(([name, render]) => ({ key, prefix, name, render }))));
  it.each(hexCases)('hex in $name case: "$prefix" + "$key" + "-tail"', ({ key, prefix, render }) => {
    const hex = render(Buffer.from(`${prefix}${key}-tail`).toString('hex'));
    const from = 2 * Buffer.byteLength(prefix);
    const to = from + 2 * Buffer.byteLength(key);
    const out = new Redactor(key).redact(`{"hex":"${hex}","next":"ok"}`);
    expect(out).toBe(`{"hex":"${hex.slice(0, from)}${REDACTED}${hex.slice(to)}","next":"ok"}`);
    const keyHex = Buffer.from(key).toString('hex');
    const kept = (hex.slice(0, from) + hex.slice(to)).toLowerCase();
    for (let i = 0; i + 4 <= keyHex.length; i += 1) {
      const piece = keyHex.slice(i, i + 4);
      if (!kept.includes(piece)) expect(out.toLowerCase(), piece).not.toContain(piece);
    }
  });

  /** JSON as PHP's json_encode writes it by default: `/` as `\/`, every UTF-16 unit past ASCII as `\uXXXX`. */
  const phpJson = (text: string, upper = false): string =>
    JSON.stringify(text)
      .slice(1, -1)
      .replace(/\//g, '\\/')
      .replace(/[^\x20-\x7e]/g, (c) => {
        const code = c.charCodeAt(0).toString(16).padStart(4, '0');
        return `\\u${upper ? code.toUpperCase() : code}`;
      });
  const rawForms: Array<[string, (key: string) => string]> = [
    ['PHP json_encode', (k) => phpJson(k)],
    ['PHP json_encode, upper-case \\u hex', (k) => phpJson(k, true)],
    ['JSON.stringify', (k) => JSON.stringify(k).slice(1, -1)],
    ['encodeURIComponent', encodeURIComponent],
    ['encodeURIComponent in lower case', (k) => encodeURIComponent(k).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase())],
    ['form-encoded (URLSearchParams)', (k) => new URLSearchParams({ k }).toString().slice(2)],
  ];
  const rawCases = keys.flatMap((key) => rawForms.map(([name, render]) => ({ key, name, render })));
  it.each(rawCases)('the key itself, $name: "$key"', ({ key, render }) => {
    const form = render(key);
    const out = new Redactor(key).redact(`{"echo":"${form}","then":"a ${form}/b"}`);
    expect(out).toBe(`{"echo":"${REDACTED}","then":"a ${REDACTED}/b"}`);
  });
});

describe('Redactor: the last check, for encodings the precise pass does not take apart', () => {
  const key = 'pk_demo_Canary7Q2x';
  const redactor = new Redactor(key);
  const hex = (text: string): string => Buffer.from(text).toString('hex');
  const b64 = (text: string): string => Buffer.from(text).toString('base64');
  const spaced = (text: string, every: number, gap: string): string => text.replace(new RegExp(`(.{${every}})(?=.)`, 'g'), `$1${gap}`);
  const forms: Array<[string, string]> = [
    ['hex with colons', spaced(hex(key), 2, ':')],
    ['hex with spaces, upper case', spaced(hex(key), 2, ' ').toUpperCase()],
    ['hex as 0x bytes', [...Buffer.from(key)].map((b) => `0x${b.toString(16)}`).join(',')],
    ['hex as \\\\x escapes', [...Buffer.from(key)].map((b) => `\\\\x${b.toString(16)}`).join('')],
    ['base64 with a space every 4', spaced(b64(key), 4, ' ')],
    ['base64 of the key lower-cased', b64(key.toLowerCase())],
    ['base64url of the key upper-cased', Buffer.from(`k=${key.toUpperCase()}`).toString('base64url')],
    ['hex of the key upper-cased', hex(key.toUpperCase())],
    ['percent-encoded twice', encodeURIComponent(encodeURIComponent(key).replace(/_/g, '%5F'))],
    ['percent-encoded three times', encodeURIComponent(encodeURIComponent([...Buffer.from(key)].map((b) => `%${b.toString(16)}`).join('')))],
    ['letters backslash-escaped', [...key].map((c) => `\\\\${c}`).join('')],
    ['HTML character references', [...key].map((c) => `&#${c.charCodeAt(0)};`).join('')],
    ['HTML hex references, percent-encoded', encodeURIComponent([...key].map((c) => `&#x${c.charCodeAt(0).toString(16)};`).join(''))],
    ['HTML named references (&lowbar;)', key.replace(/_/g, '&lowbar;')],
    ['UTF-16 hex, run together', [...key].map((c) => c.charCodeAt(0).toString(16).padStart(4, '0')).join('')],
    ['UTF-16LE hex with spaces', spaced(Buffer.from(key, 'utf16le').toString('hex'), 2, ' ')],
    ['base64 of UTF-16LE (PowerShell)', Buffer.from(key, 'utf16le').toString('base64')],
    ['base64 of the base64', b64(b64(key))],
    ['hex of the base64', hex(b64(`k=${key}`))],
    ['base64 of the hex', b64(hex(key))],
    ['octal escapes', [...key].map((c) => `\\\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`).join('')],
    ['decimal byte list', [...Buffer.from(key)].join(', ')],
    ['letters apart by spaces', [...key].join(' ')],
    ['letters apart by zero-width spaces', [...key].join('\u200b')],
  ];
  it.each(forms)('%s: the JSON string holding it goes, the rest stays', (_name, form) => {
    const text = `{"status":"error","echo":{"seen":"header ${form} refused"},"list":["ok","${form}"],"code":"E42"}`;
    const out = redactor.redact(text);
    expect(JSON.parse(out)).toEqual({ status: 'error', echo: { seen: REDACTED }, list: ['ok', REDACTED], code: 'E42' });
    expect(out).not.toContain(form);
  });

  it('a text that is not JSON goes whole', () => {
    expect(redactor.redact(`upstream said: ${spaced(hex(key), 2, '-')}`)).toBe(REDACTED);
    expect(redactor.redact(`{"truncated": "${spaced(b64(key), 3, ' ')}`)).toBe(REDACTED);
  });

  it('an object key that shows the key is renamed, and a __proto__ key stays a key', () => {
    const out = redactor.redact(`{"${spaced(hex(key), 2, ' ')}":1,"${b64(key.toUpperCase())}":2,"__proto__":{"x":"y"}}`);
    expect(JSON.parse(out)).toEqual(JSON.parse(`{"${REDACTED}":1,"${REDACTED} 2":2,"__proto__":{"x":"y"}}`));
  });

  it('leaves ordinary answers alone: escapes, hex ids, base64 and HTML that do not hold the key', () => {
    const texts = [
      '{"status":"success","quote_id":"Q-7f3a9c1e2b4d","premium":{"annual":1234.5},"note":"caf\\u00e9 \\/ 100%25 &amp; &#233;"}',
      `{"trace":"${spaced(hex('some other token value'), 2, ':')}","blob":"${spaced(b64('pk_demo_Canary7Q2y is not it'), 4, ' ')}"}`,
      'plain text with 0x1f, \\x41 and %2525 in it',
      `{"ids":[1,2,3,4,5,6,7,8,9,10],"token":"${b64(b64('a different secret, 2026'))}","hex":"${hex(b64('not the key at all'))}","text":"p k demo and canary, apart"}`,
      '{"note":"&lt;b&gt; &sol; &unknownentity; \\101\\102 \\u200b"}',
    ];
    for (const text of texts) expect(redactor.redact(text)).toBe(text);
  });

  it('short keys: only the decoded view is searched', () => {
    const short = new Redactor('k3y!');
    expect(short.redact('{"a":"%256b%2533%2579!"}')).toBe(`{"a":"${REDACTED}"}`);
    expect(short.redact(`{"a":"${hex('k3y!')}"}`)).toBe(`{"a":"${hex('k3y!')}"}`);
  });
});

describe('Redactor: the key across an answer\'s structure, and odd spreads of it', () => {
  const key = 'pk_demo_Canary7Q2x';
  const redactor = new Redactor(key);
  it('a 2xx that failed, with the key as an array of its bytes: the array goes, status and error_code stay (the answer is still read as failed)', () => {
    const text = JSON.stringify({ status: 'failed', error_code: 'bad_key_echo', debug: { bytes: [...Buffer.from(key)], note: 'kept' } });
    expect(JSON.parse(redactor.redact(text))).toEqual({ status: 'failed', error_code: 'bad_key_echo', debug: { bytes: REDACTED, note: 'kept' } });
  });
  it('an array of its characters, hex split over two items: the array goes', () => {
    expect(JSON.parse(redactor.redact(JSON.stringify({ status: 'error', chars: [...key] })))).toEqual({ status: 'error', chars: REDACTED });
    const h = hexOf(key);
    expect(JSON.parse(redactor.redact(JSON.stringify({ status: 'error', parts: [h.slice(0, 12), h.slice(12)] })))).toEqual({ status: 'error', parts: REDACTED });
  });
  it('the key across a field name and its value: status and error_code kept, with a note', () => {
    const out = redactor.redact('{"status":"error","error_code":"E1","pk_demo":"Canary7Q2x"}');
    expect(JSON.parse(out)).toEqual({ status: 'error', error_code: 'E1', quote_batch_note: 'the answer showed the API key: withheld' });
  });
  it.each([
    ['UTF-16 read as Latin-1 (NULs between letters)', Buffer.from(key, 'utf16le').toString('latin1')],
    ['letters apart by dots', [...key].join('.')],
    ['sig_ and the hex of its base64', `sig_${hexOf(b64Of(key))}`],
  ])('%s', (_name, form) => {
    expect(JSON.parse(redactor.redact(JSON.stringify({ status: 'success', echo: form, id: 'Q-1' })))).toEqual({ status: 'success', echo: REDACTED, id: 'Q-1' });
  });
  it('a field renamed for showing the key takes a name no other field has', () => {
    const out = JSON.parse(redactor.redact(`{"${key}":1,"${hexOf(key).replace(/(..)(?=.)/g, '$1 ')}":2}`)) as Record<string, number>;
    expect(out).toEqual({ [REDACTED]: 1, [`${REDACTED} 2`]: 2 });
  });
  it('a long run of numbers apart by underscores is read in linear time (the regex does not try every split)', () => {
    const started = performance.now();
    const text = JSON.stringify({ n: '1_ '.repeat(60_000) });
    expect(redactor.redact(text)).toBe(text);
    // Quadratic, this took 16 s; linear, a few ms. The bound only tells the two apart.
    expect(performance.now() - started).toBeLessThan(5000);
  });
});
const hexOf = (text: string): string => Buffer.from(text).toString('hex');
const b64Of = (text: string): string => Buffer.from(text).toString('base64');

describe('Redactor: large answers (up to the 1 MiB read)', () => {
  const key = 'pk_demo_Canary7Q2x';
  const redactor = new Redactor(key);
  it('a 1 MiB list of numbers, a 1 MiB base64 blob and 10,000 base64 tokens: checked without error, the key found where it is', () => {
    const numbers = Array.from({ length: 260_000 }, (_, i) => String(i % 256)).join(',');
    expect(redactor.redact(`{"n":[${numbers}]}`)).toBe(`{"n":[${numbers}]}`);
    const blob = Buffer.alloc(786_432, 7).toString('base64');
    const withKey = `${blob.slice(0, 4096)}${Buffer.from(`x${key.toUpperCase()}y`).toString('base64')}${blob.slice(4096)}`;
    expect(redactor.redact(JSON.stringify({ doc: blob }))).toBe(JSON.stringify({ doc: blob }));
    expect(JSON.parse(redactor.redact(JSON.stringify({ doc: withKey, ok: 1 })))).toEqual({ doc: REDACTED, ok: 1 });
    const tokens = Array.from({ length: 10_000 }, (_, i) => Buffer.from(`token ${i} of some other data`).toString('base64'));
    expect(redactor.redact(JSON.stringify(tokens))).toBe(JSON.stringify(tokens));
  });
});

describe('Redactor: the other secrets of the way to the partner (README, "Behind a proxy…")', () => {
  const PROXY_PASSWORD = 'Pr0xy-canary:pw/7Hq';
  const PASSPHRASE = 'key passphrase canary 42';
  const all = new Redactor(KEY, [PROXY_PASSWORD, PASSPHRASE, undefined, '', KEY]);
  it.each([
    ['the proxy password, raw', PROXY_PASSWORD],
    ['the proxy password, percent-encoded as in its URL', encodeURIComponent(PROXY_PASSWORD)],
    ['the proxy password in a Proxy-Authorization header echoed back', `Basic ${Buffer.from(`ops:${PROXY_PASSWORD}`).toString('base64')}`],
    ['the proxy password in a whole proxy URL', `http://ops:${encodeURIComponent(PROXY_PASSWORD)}@proxy.corp:3128`],
    ['the proxy password JSON-escaped', jsonEscapeAll(PROXY_PASSWORD)],
    ['the passphrase, raw', PASSPHRASE],
    ['the passphrase, form-encoded', encodeURIComponent(PASSPHRASE).replace(/%20/g, '+')],
    ['the passphrase in hex', Buffer.from(PASSPHRASE).toString('hex')],
    ['the key beside them', `${KEY} ${PASSPHRASE}`],
  ])('%s', (_name, form) => {
    const out = all.redact(`{"echo":"${form}","status":"failed"}`);
    expect(out).toContain(REDACTED);
    for (const secret of [KEY, PROXY_PASSWORD, PASSPHRASE]) expect(out).not.toContain(secret);
    expect(out).not.toContain(form);
    expect(out).toContain('"status":"failed"');
  });

  it('networkSecrets: the proxy URL\'s password (decoded) and the passphrase, nothing when there are none', () => {
    expect(networkSecrets({ proxy: `http://ops:${encodeURIComponent(PROXY_PASSWORD)}@proxy:3128`, passphrase: PASSPHRASE })).toEqual([PROXY_PASSWORD, PASSPHRASE]);
    expect(networkSecrets({ proxy: 'http://proxy:3128' })).toEqual([]);
    expect(networkSecrets(undefined)).toEqual([]);
  });
});
