import { describe, expect, it } from 'vitest';
import { REDACTED, Redactor } from '../../src/partner/redact.js';

const KEY = 'canary-Key_7f3a9/+x';
const redactor = new Redactor(KEY);
const jsonEscapeAll = (text: string): string => [...text].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');
const urlEncodeAll = (text: string): string => [...Buffer.from(text)].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');

describe('Redactor', () => {
  it.each([
    ['raw', KEY],
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
