/**
 * The partner client's transport on a thread of its own. got spends about a millisecond of CPU on
 * each request; on the main thread that millisecond delays the answers of every other request in
 * flight, while the main thread also maps rows and commits the ledger. Here got runs in a worker
 * (`_transport-thread.ts`) and the main thread only passes it strings: a request's URL and body out,
 * the `RawAttempt` back. The policy (retries, breaker, limiter, classification, redaction) stays on
 * the main thread, so every call keeps the order the ledger's durability needs: the row is marked `in_flight`
 * and committed before its request is handed to the thread.
 *
 * Loading got takes the thread a quarter of a second: `run` starts one as soon as it starts
 * ({@link prestartTransportThread}), and the client adopts it. A thread holds the process open only
 * while a request is out. If it dies once it said it was ready, the requests it held may have left:
 * they end as a transport failure after sending (in doubt for a write); if it dies before, they
 * never left (retried). Either way the next request starts a new thread.
 */
import { Worker } from 'node:worker_threads';
import { THREAD_LOST, type ThreadMessage, type ThreadReply } from './_thread-protocol.js';
import type { RawAttempt, TransportOptions } from './_transport.js';

export { THREAD_LOST } from './_thread-protocol.js';

interface Thread {
  worker: Worker;
  /** True once the thread said it listens: before, nothing handed to it can have left. */
  ready: boolean;
  /** Why it ended, when it failed. */
  failure: string | undefined;
}

/** A thread started ahead of its client, loading got meanwhile. */
let spare: Thread | undefined;

/**
 * Starts an HTTP thread now, for the next client to adopt: the seconds' fraction got takes to load
 * then passes while the run reads its mapping, ledger and input, not before its first request.
 * The thread holds no key until a client adopts it, and does not keep the process alive.
 */
export function prestartTransportThread(): void {
  spare ??= spawn();
}

/**
 * The thread runs compiled JavaScript: the entry beside this module in `dist/`, or `dist/`'s when
 * this module runs from its TypeScript source (the tests build `dist/` before they start).
 */
function threadEntry(): URL {
  const here = import.meta.url;
  return here.endsWith('.ts') ? new URL('../../dist/partner/_transport-thread.js', here) : new URL('./_transport-thread.js', here);
}

/**
 * The thread's young generation, in MB. It holds a few dozen requests' buffers at a time. With V8's
 * default a 40k-row run peaked about 45 MB above the same run with got on the main thread (264 MB);
 * with 8 MB, 5–25 MB above it, at no cost to the latency-bound run.
 */
const THREAD_YOUNG_GENERATION_MB = 8;

function spawn(entry = threadEntry()): Thread {
  const worker = new Worker(entry, { resourceLimits: { maxYoungGenerationSizeMb: THREAD_YOUNG_GENERATION_MB } });
  const thread: Thread = { worker, ready: false, failure: undefined };
  worker.on('message', (reply: ThreadReply) => {
    if (reply.type === 'ready') thread.ready = true;
  });
  // After the listener: adding a 'message' listener refs the thread again.
  worker.unref();
  worker.on('error', (error) => {
    thread.failure = error.message;
  });
  // A spare that dies before a client adopts it is not adopted.
  worker.once('exit', () => {
    if (spare === thread) spare = undefined;
  });
  return thread;
}

export class ThreadTransport {
  readonly #options: TransportOptions;
  /** The thread's entry when not the real one (tests); such a transport adopts no spare. */
  readonly #entry: URL | undefined;
  #thread: Thread | undefined;
  readonly #pending = new Map<number, (raw: RawAttempt) => void>();
  #nextId = 0;
  #closed = false;

  constructor(options: TransportOptions, entry?: URL) {
    this.#options = options;
    this.#entry = entry;
    this.#thread = this.#start();
  }

  /** Sends one POST on the thread and resolves with its answer. Never rejects. */
  post(url: URL, payload: string): Promise<RawAttempt> {
    if (this.#closed) return Promise.resolve(lost('the partner client is closed', false));
    const thread = this.#thread ?? (this.#thread = this.#start());
    // Only a request out keeps the process alive (as a socket of an in-process client would).
    if (this.#pending.size === 0) thread.worker.ref();
    const id = this.#nextId;
    this.#nextId += 1;
    return new Promise<RawAttempt>((resolve) => {
      this.#pending.set(id, resolve);
      thread.worker.postMessage({ type: 'post', id, url: url.href, payload } satisfies ThreadMessage);
    });
  }

  /** Stops the thread (and its keep-alive sockets); requests still out end as lost. */
  close(): void {
    this.#closed = true;
    void this.#thread?.worker.terminate();
  }

  /** Adopts the spare thread, or starts one, and hands it the transport's options. */
  #start(): Thread {
    let thread: Thread;
    if (this.#entry !== undefined) thread = spawn(this.#entry);
    else {
      thread = spare ?? spawn();
      spare = undefined;
    }
    const { worker } = thread;
    worker.postMessage({ type: 'configure', options: this.#options } satisfies ThreadMessage);
    worker.on('message', (reply: ThreadReply) => {
      if (reply.type !== 'answer') return;
      const settle = this.#pending.get(reply.id);
      this.#pending.delete(reply.id);
      if (this.#pending.size === 0) worker.unref();
      settle?.(reply.raw);
    });
    // The listener just added refs the thread: only a request out may keep the process alive.
    worker.unref();
    worker.once('exit', () => {
      if (this.#thread === thread) this.#thread = undefined;
      const why = this.#closed ? 'the partner client was closed' : `the HTTP thread stopped (${thread.failure ?? 'it exited'})`;
      const raw = lost(why, thread.ready);
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
