/** How a wait ended: its time passed, or one of its signals fired. */
export type WaitResult = 'elapsed' | 'aborted';

/** The longest delay `setTimeout` holds (about 24.8 days); longer ones fire at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * One real 'abort' listener per signal, fanning out to the waiters registered here. Dozens of calls
 * wait on the run's one stop signal at once (back-off, breaker, limiter); each adding a listener of
 * its own would trip Node's `MaxListenersExceededWarning` though none leaks.
 */
const waiters = new WeakMap<AbortSignal, Set<() => void>>();

/**
 * Calls `callback` once when `signal` aborts (at once, synchronously, when it already has).
 * Returns the function that unregisters it; call it when the wait ends some other way.
 */
export function onAbort(signal: AbortSignal, callback: () => void): () => void {
  if (signal.aborted) {
    callback();
    return () => {};
  }
  let set = waiters.get(signal);
  if (set === undefined) {
    const created = new Set<() => void>();
    set = created;
    waiters.set(signal, created);
    signal.addEventListener(
      'abort',
      () => {
        waiters.delete(signal);
        for (const waiter of [...created]) waiter();
      },
      { once: true },
    );
  }
  const registered = set;
  registered.add(callback);
  return () => {
    registered.delete(callback);
  };
}

/**
 * Calls `callback` once when any of `signals` aborts (in a microtask when one already has); the
 * returned function unregisters it from all of them.
 */
export function onAnyAbort(signals: readonly (AbortSignal | undefined)[], callback: () => void): () => void {
  // Never synchronously: the caller may not have stored the returned function yet.
  if (signals.some((s) => s?.aborted === true)) {
    let cancelled = false;
    queueMicrotask(() => {
      if (!cancelled) callback();
    });
    return () => {
      cancelled = true;
    };
  }
  const offs: (() => void)[] = [];
  let fired = false;
  const once = (): void => {
    if (fired) return;
    fired = true;
    for (const off of offs) off();
    callback();
  };
  for (const signal of signals) {
    if (signal === undefined) continue;
    offs.push(onAbort(signal, once));
  }
  return () => {
    for (const off of offs) off();
  };
}

/**
 * Waits `ms` milliseconds unless one of `signals` aborts first. Never rejects: the caller branches
 * on the result, because an aborted wait is an outcome here, not an error.
 */
export async function sleep(ms: number, signals: readonly (AbortSignal | undefined)[] = []): Promise<WaitResult> {
  // A wait longer than a timer holds is waited out in pieces.
  let left = ms;
  while (left > MAX_TIMER_MS) {
    if ((await sleepOnce(MAX_TIMER_MS, signals)) === 'aborted') return 'aborted';
    left -= MAX_TIMER_MS;
  }
  return sleepOnce(left, signals);
}

function sleepOnce(ms: number, signals: readonly (AbortSignal | undefined)[]): Promise<WaitResult> {
  if (signals.some((s) => s?.aborted === true)) return Promise.resolve('aborted');
  if (ms <= 0) return Promise.resolve('elapsed');
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      off();
      resolve('elapsed');
    }, ms);
    const off = onAnyAbort(signals, () => {
      clearTimeout(timer);
      resolve('aborted');
    });
  });
}
