import { describe, expect, it } from 'vitest';
import { QuoteBatchError } from '../../src/errors.js';
import { assertSafeBaseUrl, displayUrl } from '../../src/partner/index.js';

function errorOf(url: string): QuoteBatchError {
  try {
    assertSafeBaseUrl(url);
  } catch (error) {
    if (error instanceof QuoteBatchError) return error;
    throw error;
  }
  throw new Error(`expected ${url} to be refused`);
}

describe('assertSafeBaseUrl', () => {
  it.each([
    'https://partner.example.com',
    'https://partner.example.com/api/',
    'http://127.0.0.1:4010',
    'http://127.8.9.10',
    'http://localhost:3000',
    'http://LOCALHOST:3000',
    'http://[::1]:8080',
  ])('accepts %s', (url) => {
    expect(assertSafeBaseUrl(url)).toBeInstanceOf(URL);
  });

  it.each([
    ['http://partner.example.com', /must use https:\/\//],
    ['http://128.0.0.1', /must use https:\/\//],
    ['http://localhost.example.com', /must use https:\/\//],
    ['ftp://partner.example.com', /must use https:\/\//],
    ['not a url', /not a valid URL/],
    ['https://partner.example.com/?token=abc', /query or fragment/],
  ])('refuses %s with E_CONFIG', (url, pattern) => {
    const error = errorOf(url);
    expect(error.code).toBe('E_CONFIG');
    expect(error.message).toMatch(pattern);
  });

  it('refuses credentials in the URL without echoing them', () => {
    for (const url of ['https://user:s3cret-pass@partner.example.com', 'http://user:s3cret-pass@not valid']) {
      const error = errorOf(url);
      expect(error.code).toBe('E_CONFIG');
      expect(`${error.message} ${error.hint ?? ''}`).not.toContain('s3cret-pass');
    }
  });

  it('does not echo a query secret', () => {
    expect(errorOf('https://partner.example.com/?token=abc123').message).not.toContain('abc123');
  });

  it('displayUrl keeps scheme, host and path only', () => {
    expect(displayUrl(new URL('https://u:p@h.example.com:8443/base?x=1#y'))).toBe('https://h.example.com:8443/base');
  });
});
