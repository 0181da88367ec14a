/**
 * The HTTP thread's life: requests go through it and come back; a thread that dies loses only the
 * requests it held — as sent, since they may have left (a write is then in doubt, never resent
 * blindly) — and the next request starts a new thread.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { THREAD_LOST, ThreadTransport } from '../../src/partner/thread-transport.js';

const OPTIONS = { apiKey: 'test-key', sockets: 2, timeoutMs: 5000, maxBodyBytes: 1024 };
const DYING = new URL('../fixtures/partner/dying-thread.mjs', import.meta.url);
const URL_ = new URL('http://127.0.0.1:9/partner/v2/policy/quote');

describe('ThreadTransport', () => {
  it('a thread that dies loses the requests it held, as sent; the next request starts a new thread', async () => {
    const transport = new ThreadTransport(OPTIONS, DYING);
    try {
      expect(await transport.post(URL_, '{}')).toMatchObject({ type: 'response', status: 200 });
      const held = transport.post(URL_, 'hold');
      const dying = transport.post(URL_, 'die');
      for (const raw of await Promise.all([held, dying])) {
        expect(raw).toMatchObject({ type: 'transport', code: THREAD_LOST, bodySent: true, detail: expect.stringContaining('the HTTP thread stopped') });
      }
      expect(await transport.post(URL_, '{}')).toMatchObject({ type: 'response', status: 200 });
    } finally {
      transport.close();
    }
  });

  it('a thread that dies before it is ready loses its requests as never sent (retried, not in doubt)', async () => {
    const transport = new ThreadTransport(OPTIONS, new URL('../fixtures/partner/unloadable-thread.mjs', import.meta.url));
    try {
      expect(await transport.post(URL_, '{}')).toMatchObject({
        type: 'transport', code: THREAD_LOST, bodySent: false, detail: expect.stringContaining('cannot load the HTTP client'),
      });
    } finally {
      transport.close();
    }
  });

  it('closing with a request out ends it as lost (it may have left)', async () => {
    const transport = new ThreadTransport(OPTIONS, DYING);
    expect(await transport.post(URL_, '{}')).toMatchObject({ type: 'response', status: 200 });
    const held = transport.post(URL_, 'hold');
    transport.close();
    expect(await held).toMatchObject({ type: 'transport', code: THREAD_LOST, bodySent: true, detail: expect.stringContaining('closed') });
  });

  it('once closed, sends nothing: a request is refused as never sent', async () => {
    const transport = new ThreadTransport(OPTIONS, DYING);
    transport.close();
    expect(await transport.post(URL_, '{}')).toMatchObject({ type: 'transport', code: THREAD_LOST, bodySent: false });
  });

  it('the real thread answers a request got cannot make as never sent (refused connection)', async () => {
    const transport = new ThreadTransport(OPTIONS);
    try {
      // Port 9 (discard) on loopback: nothing listens, the connection is refused.
      const raw = await transport.post(URL_, '{}');
      expect(raw).toMatchObject({ type: 'transport', code: 'ECONNREFUSED', bodySent: false });
    } finally {
      transport.close();
    }
  });

  it('the real thread passes an answer\'s rate-limit headers back with it: those only, bounded, redacted', async () => {
    const server = createServer((req, res) => {
      req.resume();
      const extra = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`x-ratelimit-extra-${i}`, String(i)]));
      res.writeHead(200, {
        'content-type': 'application/json', 'retry-after': '1', 'x-request-id': 'abc',
        'ratelimit-policy': '"default";q=100;w=60', ratelimit: '"default";r=42;t=17',
        // A gateway that echoes the key somewhere: never past the thread.
        'x-ratelimit-limit': `10, 10;w=1;name="${OPTIONS.apiKey}"`,
        'x-ratelimit-remaining': '9'.repeat(3000),
        ...extra,
      });
      res.end('{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const transport = new ThreadTransport(OPTIONS);
    try {
      const raw = await transport.post(new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/partner/v2/policy/quote`), '{}');
      expect(raw.type).toBe('response');
      const headers = raw.type === 'response' ? raw.rateLimit ?? {} : {};
      expect(Object.keys(headers)).toHaveLength(16);
      expect(headers).toMatchObject({ 'ratelimit-policy': '"default";q=100;w=60', ratelimit: '"default";r=42;t=17' });
      expect(headers['x-ratelimit-limit']).not.toContain(OPTIONS.apiKey);
      expect(headers['x-ratelimit-remaining']).toHaveLength(1024);
      expect(Object.keys(headers).filter((name) => !/^(x-)?ratelimit/.test(name))).toEqual([]);
    } finally {
      transport.close();
      server.close();
    }
  });

  it('an answer without rate-limit headers carries none', async () => {
    const server = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const transport = new ThreadTransport(OPTIONS);
    try {
      const raw = await transport.post(new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/x`), '{}');
      expect(raw).toMatchObject({ type: 'response', status: 200 });
      expect(raw.type === 'response' && raw.rateLimit).toBeFalsy();
    } finally {
      transport.close();
      server.close();
    }
  });
});
