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
