import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { MAX_TIMER_MS, onAnyAbort, sleep } from '../../src/partner/_sleep.js';

describe('sleep and abort listeners', () => {
  it('fifty waits on one signal add one listener to it, not fifty (no MaxListenersExceededWarning)', async () => {
    const controller = new AbortController();
    const waits = Array.from({ length: 50 }, () => sleep(60_000, [controller.signal]));
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);
    controller.abort();
    expect(await Promise.all(waits)).toEqual(Array(50).fill('aborted'));
  });

  it('a wait that ends by time unregisters itself; an already aborted signal answers at once', async () => {
    const controller = new AbortController();
    expect(await sleep(5, [controller.signal])).toBe('elapsed');
    let fired = 0;
    const off = onAnyAbort([controller.signal], () => (fired += 1));
    off();
    controller.abort();
    expect(fired).toBe(0);
    expect(await sleep(60_000, [controller.signal])).toBe('aborted');
  });

  it('a wait longer than a timer holds does not fire early', async () => {
    const controller = new AbortController();
    let ended = false;
    void sleep(MAX_TIMER_MS + 1000, [controller.signal]).then(() => (ended = true));
    await new Promise((r) => setTimeout(r, 30));
    expect(ended).toBe(false);
    controller.abort();
    await new Promise((r) => setTimeout(r, 5));
    expect(ended).toBe(true);
  });
});
