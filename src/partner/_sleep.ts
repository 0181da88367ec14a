/** How a wait ended: its time passed, one of its signals fired, or it was woken early. */
export type WaitResult = 'elapsed' | 'aborted';

/**
 * Waits `ms` milliseconds unless one of `signals` aborts first. Never rejects: the caller branches
 * on the result, because an aborted wait is an outcome here, not an error.
 */
export function sleep(ms: number, signals: readonly (AbortSignal | undefined)[] = []): Promise<WaitResult> {
  const live = signals.filter((s): s is AbortSignal => s !== undefined);
  if (live.some((s) => s.aborted)) return Promise.resolve('aborted');
  if (ms <= 0) return Promise.resolve('elapsed');
  return new Promise((resolve) => {
    const finish = (result: WaitResult): void => {
      clearTimeout(timer);
      for (const s of live) s.removeEventListener('abort', onAbort);
      resolve(result);
    };
    const onAbort = (): void => finish('aborted');
    const timer = setTimeout(() => finish('elapsed'), ms);
    for (const s of live) s.addEventListener('abort', onAbort, { once: true });
  });
}
