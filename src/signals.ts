/**
 * What a SIGINT or SIGTERM asks for, given the first one the process received (README, "Outcomes, resume and the ledger"):
 * the first asks for a graceful stop; a second Ctrl-C exits at once. A signal that repeats the
 * first within a short window is the same request delivered twice, not a second one: GNU
 * `timeout` and process managers signal both the process and its group, and `npm start` forwards
 * the Ctrl-C that the terminal already sent to the whole group.
 */

export type StopSignal = 'SIGINT' | 'SIGTERM';

/** `stop`: stop gracefully; `repeat`: the same request again (ignore it); `exit`: exit at once. */
export type SignalDecision = 'stop' | 'repeat' | 'exit';

/** A SIGTERM this soon after the first signal is the same request. */
export const SIGTERM_REPEAT_WINDOW_MS = 2000;
/** A SIGINT this soon after the first signal is the same request (no one presses Ctrl-C twice this fast). */
export const SIGINT_REPEAT_WINDOW_MS = 250;

export function decideSignal(first: { signal: StopSignal; atMs: number } | undefined, signal: StopSignal, atMs: number): SignalDecision {
  if (first === undefined) return 'stop';
  const window = signal === 'SIGTERM' ? SIGTERM_REPEAT_WINDOW_MS : SIGINT_REPEAT_WINDOW_MS;
  return atMs - first.atMs < window ? 'repeat' : 'exit';
}
