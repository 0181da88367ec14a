/**
 * The partner client's transport on a thread of its own. got spends about a millisecond of CPU on
 * each request; on the main thread that millisecond delays the answers of every other request in
 * flight, while the main thread also maps rows and commits the ledger. Here got runs in a worker
 * (`_transport-thread.ts`) and the main thread only passes it strings: a request's URL and body out,
 * the `RawAttempt` back. The policy (retries, breaker, limiter, classification, redaction) stays on
 * the main thread, so every call keeps the order the contract needs: the row is marked `in_flight`
 * and committed before its request is handed to the thread.
 *
 * The thread starts with the client (so that got is loaded while the run is still starting) and
 * holds the process open only while a request is out. If it dies, the requests it held may have
 * left: they end as a transport failure after sending (in doubt for a write), and the next request
 * starts a new thread.
 */
import { Worker } from 'node:worker_threads';
import type { PostMessage } from './_transport-thread.js';
import type { RawAttempt, TransportOptions } from './_transport.js';

/** The code of a request lost with its thread. */
export const THREAD_LOST = 'ERR_HTTP_THREAD';

interface Reply {
  id: number;
  raw: RawAttempt;
}

/**
 * The thread runs compiled JavaScript: the entry beside this module in `dist/`, or `dist/`'s when
 * this module runs from its TypeScript source (the tests build `dist/` before they start).
 */
function threadEntry(): URL {
  const here = import.meta.url;
  return here.endsWith('.ts') ? new URL('../../dist/partner/_transport-thread.js', here) : new URL('./_transport-thread.js', here);
}

export class ThreadTransport {
  readonly #options: TransportOptions;
  #thread: { worker: Worker; online: boolean } | undefined;
  readonly #pending = new Map<number, (raw: RawAttempt) => void>();
  #nextId = 0;
  #closed = false;

  constructor(options: TransportOptions) {
    this.#options = options;
    this.#thread = this.#start();
  }

  /** Sends one POST on the thread and resolves with its answer. Never rejects. */
  post(url: URL, payload: string): Promise<RawAttempt> {
    if (this.#closed) return Promise.resolve(lost('the partner client is closed', false));
    const thread = this.#thread ?? (this.#thread = this.#start());
    // Only a request in flight keeps the process alive (as a socket of an in-process client would).
    if (this.#pending.size === 0) thread.worker.ref();
    const id = this.#nextId;
    this.#nextId += 1;
    return new Promise<RawAttempt>((resolve) => {
      this.#pending.set(id, resolve);
      thread.worker.postMessage({ id, url: url.href, payload } satisfies PostMessage);
    });
  }

  /** Stops the thread (and its keep-alive sockets); requests still out end as lost. */
  close(): void {
    this.#closed = true;
    void this.#thread?.worker.terminate();
  }

  #start(): { worker: Worker; online: boolean } {
    const worker = new Worker(threadEntry(), { workerData: this.#options });
    const thread = { worker, online: false };
    let failure = 'it exited';
    worker.unref();
    worker.on('online', () => {
      thread.online = true;
    });
    worker.on('message', (reply: Reply) => {
      const settle = this.#pending.get(reply.id);
      this.#pending.delete(reply.id);
      if (this.#pending.size === 0) worker.unref();
      settle?.(reply.raw);
    });
    worker.on('error', (error) => {
      failure = error.message;
    });
    worker.on('exit', () => {
      if (this.#thread === thread) this.#thread = undefined;
      // Before the thread ran, nothing it was given can have left.
      const raw = lost(this.#closed ? 'the partner client was closed' : `the HTTP thread stopped (${failure})`, thread.online);
      const pending = [...this.#pending.values()];
      this.#pending.clear();
      for (const settle of pending) settle(raw);
    });
    return thread;
  }
}

function lost(detail: string, bodySent: boolean): RawAttempt {
  return { type: 'transport', code: THREAD_LOST, detail, bodySent };
}
