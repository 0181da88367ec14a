import { describe, expect, it } from 'vitest';
import { decideSignal, SIGINT_REPEAT_WINDOW_MS, SIGTERM_REPEAT_WINDOW_MS, type SignalDecision, type StopSignal } from '../../src/signals.js';

describe('decideSignal', () => {
  it.each<[string, { signal: StopSignal; atMs: number } | undefined, StopSignal, number, SignalDecision]>([
    ['the first SIGTERM stops', undefined, 'SIGTERM', 0, 'stop'],
    ['the first SIGINT stops', undefined, 'SIGINT', 0, 'stop'],
    ['SIGTERM to the group right after SIGTERM to the process: the same request', { signal: 'SIGTERM', atMs: 1000 }, 'SIGTERM', 1050, 'repeat'],
    ['SIGTERM just inside the window', { signal: 'SIGTERM', atMs: 1000 }, 'SIGTERM', 1000 + SIGTERM_REPEAT_WINDOW_MS - 1, 'repeat'],
    ['SIGTERM after the window: a second request, exit at once', { signal: 'SIGTERM', atMs: 1000 }, 'SIGTERM', 1000 + SIGTERM_REPEAT_WINDOW_MS, 'exit'],
    ['SIGTERM from a supervisor soon after Ctrl-C: the same request', { signal: 'SIGINT', atMs: 0 }, 'SIGTERM', 500, 'repeat'],
    ['Ctrl-C delivered twice at once (npm start forwards it)', { signal: 'SIGINT', atMs: 0 }, 'SIGINT', 20, 'repeat'],
    ['a second Ctrl-C pressed by a person exits at once', { signal: 'SIGINT', atMs: 0 }, 'SIGINT', SIGINT_REPEAT_WINDOW_MS, 'exit'],
    ['Ctrl-C after a SIGTERM, later than a doubled delivery', { signal: 'SIGTERM', atMs: 0 }, 'SIGINT', 1000, 'exit'],
  ])('%s', (_name, first, signal, atMs, expected) => {
    expect(decideSignal(first, signal, atMs)).toBe(expected);
  });
});
