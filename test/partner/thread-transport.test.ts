/**
 * The HTTP thread's life: requests go through it and come back; a thread that dies loses only the
 * requests it held — as sent, since they may have left (a write is then in doubt, never resent
 * blindly) — and the next request starts a new thread.
 */
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
});
