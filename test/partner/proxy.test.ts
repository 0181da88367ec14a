/** Which proxy a request to the partner goes through (src/partner/proxy.ts), as curl reads the variables. */
import { describe, expect, it } from 'vitest';
import { chooseProxy, displayProxy, noProxyMatch, parseProxyUrl, proxyPassword } from '../../src/partner/proxy.js';

const PARTNER = new URL('https://api.partner.example.com');
const PROXY = 'http://proxy.corp.example:3128';

describe('chooseProxy', () => {
  it.each([
    // name, target, flag, config, env, proxy (or null), source or reason
    ['nothing set: straight', PARTNER, undefined, undefined, {}, null, 'no proxy set'],
    ['HTTPS_PROXY for an https partner', PARTNER, undefined, undefined, { HTTPS_PROXY: PROXY }, PROXY, 'HTTPS_PROXY'],
    ['https_proxy before HTTPS_PROXY (as curl)', PARTNER, undefined, undefined, { https_proxy: 'http://lower:1', HTTPS_PROXY: 'http://upper:2' }, 'http://lower:1', 'https_proxy'],
    ['an empty https_proxy is not set', PARTNER, undefined, undefined, { https_proxy: ' ', HTTPS_PROXY: PROXY }, PROXY, 'HTTPS_PROXY'],
    ['HTTP_PROXY does not serve an https partner', PARTNER, undefined, undefined, { HTTP_PROXY: PROXY }, null, 'no proxy set'],
    ['ALL_PROXY when no HTTPS_PROXY', PARTNER, undefined, undefined, { ALL_PROXY: PROXY }, PROXY, 'ALL_PROXY'],
    ['http_proxy for an http partner (named by --proxy only on loopback)', new URL('http://localhost:8080'), undefined, undefined, { http_proxy: PROXY }, null, 'loopback'],
    ['--proxy wins over the environment', PARTNER, 'http://flag:1', undefined, { HTTPS_PROXY: PROXY }, 'http://flag:1', '--proxy'],
    ['the environment wins over the config file', PARTNER, undefined, 'http://config:1', { HTTPS_PROXY: PROXY }, PROXY, 'HTTPS_PROXY'],
    ['the config file when nothing else', PARTNER, undefined, 'http://config:1', {}, 'http://config:1', "the config file's proxy:"],
    ['--no-proxy wins over everything', PARTNER, false, 'http://config:1', { HTTPS_PROXY: PROXY }, null, '--no-proxy'],
    ['NO_PROXY covers --proxy too (as curl)', PARTNER, 'http://flag:1', undefined, { NO_PROXY: 'partner.example.com' }, null, 'NO_PROXY has partner.example.com'],
    ['no_proxy before NO_PROXY', PARTNER, undefined, undefined, { HTTPS_PROXY: PROXY, no_proxy: 'other.example', NO_PROXY: '*' }, PROXY, 'HTTPS_PROXY'],
    ['loopback straight with an environment proxy', new URL('https://127.0.0.1:8443'), undefined, undefined, { HTTPS_PROXY: PROXY }, null, 'loopback'],
    ['loopback straight with the config file\'s proxy', new URL('https://[::1]:8443'), undefined, 'http://config:1', {}, null, 'loopback'],
    ['loopback through a proxy named by --proxy', new URL('https://127.0.0.1:8443'), PROXY, undefined, {}, PROXY, '--proxy'],
    ['a bare host:port is http://', PARTNER, 'proxy.corp.example:3128', undefined, {}, PROXY, '--proxy'],
  ] as const)('%s', (_name, target, flag, config, env, proxy, said) => {
    const choice = chooseProxy({ target, flag, config, env });
    if (proxy === null) {
      expect(choice.proxy).toBeNull();
      expect(choice.proxy === null ? choice.reason : '').toContain(said);
    } else {
      expect(choice.proxy === null ? null : displayProxy(choice.proxy)).toBe(displayProxy(new URL(proxy)));
      expect(choice.proxy === null ? '' : choice.source).toBe(said);
    }
  });

  it('refuses a proxy it cannot use, naming where it was set and never its password', () => {
    expect(() => chooseProxy({ target: PARTNER, flag: 'socks5://u:hunter22@proxy:1080', config: undefined, env: {} }))
      .toThrow(/the proxy socks5:\/\/proxy:1080 in --proxy is not supported: only http:\/\/ and https:\/\/ proxies are/);
    expect(() => chooseProxy({ target: PARTNER, flag: undefined, config: undefined, env: { HTTPS_PROXY: 'http://u:hunter22@[bad' } }))
      .toThrow(/^the proxy in HTTPS_PROXY is not a valid URL$/);
    for (const text of ['socks5://u:hunter22@proxy:1080', 'http://u:hunter22@[bad']) {
      try {
        parseProxyUrl(text, 'x');
      } catch (error) {
        expect(String((error as Error).message) + String((error as { hint?: string }).hint)).not.toContain('hunter22');
      }
    }
  });

  it('shows a proxy without its credentials; reads the password percent-decoded', () => {
    const url = parseProxyUrl('http://ops%40corp:p%3Ass%2Fw0rd@proxy.corp:3128', '--proxy');
    expect(displayProxy(url)).toBe('http://proxy.corp:3128');
    expect(proxyPassword(url)).toBe('p:ss/w0rd');
    expect(proxyPassword(parseProxyUrl('http://proxy.corp:3128', '--proxy'))).toBeUndefined();
  });
});

describe('noProxyMatch: the usual NO_PROXY rules', () => {
  const at = (url: string, list: string): string | undefined => noProxyMatch(new URL(url), list);
  it.each([
    // url, NO_PROXY, the entry that covers it (or undefined)
    ['https://api.partner.example.com', '*', '*'],
    ['https://api.partner.example.com', 'partner.example.com', 'partner.example.com'],
    ['https://partner.example.com', 'partner.example.com', 'partner.example.com'],
    ['https://api.partner.example.com', '.example.com', '.example.com'],
    ['https://example.com', '.example.com', '.example.com'],
    ['https://api.partner.example.com', '*.example.com', '*.example.com'],
    ['https://notexample.com', 'example.com', undefined],
    ['https://example.com.evil.test', 'example.com', undefined],
    ['https://API.Partner.Example.COM', 'partner.EXAMPLE.com', 'partner.EXAMPLE.com'],
    ['https://api.partner.example.com.', 'partner.example.com', 'partner.example.com'],
    ['https://api.partner.example.com', 'localhost, 10.0.0.0/8 ,partner.example.com', 'partner.example.com'],
    ['https://api.partner.example.com', 'localhost partner.example.com', 'partner.example.com'],
    // ports
    ['https://api.partner.example.com', 'partner.example.com:443', 'partner.example.com:443'],
    ['https://api.partner.example.com', 'partner.example.com:8443', undefined],
    ['https://api.partner.example.com:8443', 'partner.example.com:8443', 'partner.example.com:8443'],
    ['http://api.partner.example.com', 'partner.example.com:80', 'partner.example.com:80'],
    // addresses and blocks
    ['https://10.1.2.3', '10.1.2.3', '10.1.2.3'],
    ['https://10.1.2.3', '10.1.2.4', undefined],
    ['https://10.1.2.3', '10.0.0.0/8', '10.0.0.0/8'],
    ['https://11.1.2.3', '10.0.0.0/8', undefined],
    ['https://10.1.2.3', '10.0.0.0/40', undefined],
    ['https://[fd00::5]', 'fd00::/8', 'fd00::/8'],
    ['https://[fd00::5]:8443', '[fd00::5]:8443', '[fd00::5]:8443'],
    ['https://[fd00::5]', 'fd00:0:0:0:0:0:0:5', 'fd00:0:0:0:0:0:0:5'],
    ['https://[fd00::5]', '10.0.0.0/8', undefined],
    ['https://10.1.2.3', 'fd00::/8', undefined],
    ['https://api.partner.example.com', '', undefined],
    ['https://api.partner.example.com', ' , ,', undefined],
  ] as const)('%s with NO_PROXY=%j', (url, list, entry) => {
    expect(at(url, list)).toBe(entry);
  });
});
