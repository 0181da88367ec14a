/**
 * Between the reader and the senders: hands each item that needs sending to a task, with at most
 * `concurrency` tasks running and at most `concurrency × readAhead` in all, so that reading stops
 * while the senders are busy (memory is bounded whatever the file size). How many requests are
 * really in flight is the partner client's limiter's business (adaptive or fixed, docs/adaptive.md):
 * `concurrency` here is its ceiling.
 */
import pLimit from 'p-limit';

export interface DispatchOptions {
  /** Tasks running at once (the `--concurrency` ceiling). */
  concurrency: number;
  /** Tasks (running or queued) per running one before reading pauses: 1 queues none. Default 4. */
  readAhead?: number;
}

export class Dispatcher {
  readonly #limit: ReturnType<typeof pLimit>;
  readonly #tasks = new Set<Promise<void>>();
  readonly #maxQueued: number;
  /** The first task failure, kept so that it is thrown even after the task left the set. */
  #failure: { error: unknown } | undefined;
  /** Callers of `ready()` waiting for a task to end. */
  #waiting: (() => void)[] = [];

  constructor(options: DispatchOptions) {
    this.#limit = pLimit(options.concurrency);
    this.#maxQueued = options.concurrency * (options.readAhead ?? 4);
  }

  /** Waits while enough tasks are queued (backpressure on the reader); rejects when a task failed. */
  async ready(): Promise<void> {
    // Woken by the end of a task, not by a race over all of them (hundreds of handlers per row).
    while (this.#tasks.size >= this.#maxQueued) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    this.#throwFailure();
  }

  /** Queues a task. A task that rejects makes `ready()` and `drain()` reject (an internal error). */
  submit(task: () => Promise<void>): void {
    const running = this.#limit(task);
    this.#tasks.add(running);
    void running.then(
      () => this.#ended(running),
      (error: unknown) => {
        this.#failure ??= { error };
        this.#ended(running);
      },
    );
  }

  #ended(task: Promise<void>): void {
    this.#tasks.delete(task);
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const wake of waiting) wake();
  }

  /** Waits for every queued task; rejects with the first failure. */
  async drain(): Promise<void> {
    await Promise.all(this.#tasks);
    this.#throwFailure();
  }

  /** Waits for every queued task, whatever happens to them (after an internal error). */
  async settle(): Promise<void> {
    await Promise.allSettled(this.#tasks);
  }

  #throwFailure(): void {
    if (this.#failure !== undefined) throw this.#failure.error;
  }
}
