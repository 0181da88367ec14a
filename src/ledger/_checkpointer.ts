/**
 * WAL checkpoints off the event loop, for the length of a run.
 *
 * Why: by default SQLite checkpoints inside the commit that fills the WAL past 1000 pages, on the
 * writer's thread: it copies the pages into the database file and fsyncs both files, which stalls
 * the event loop for 15–40 ms every few hundred rows, and every request in flight waits that long
 * for its answer to be read. Here a worker thread with its own connection does that copy and those
 * fsyncs, and the writer only finishes the job: a PASSIVE checkpoint of the few pages committed
 * while the worker was busy (a few ms). Only a WAL checkpointed to its end lets the next commit
 * start the WAL over, so without that last step a busy writer's WAL would grow without bound.
 *
 * Durability is SQLite's own either way: the worker's connection syncs like the writer's
 * (`synchronous = NORMAL`), and a process killed during a checkpoint is recovered by SQLite.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';

/** How often the worker is asked to checkpoint (unless the previous checkpoint is still running). */
const DEFAULT_INTERVAL_MS = 500;
/**
 * The writer's own automatic checkpoint while the worker runs: a safety net for a worker that
 * falls far behind (a slow disk), not the normal path. SQLite's default is 1000 pages.
 */
const FALLBACK_AUTOCHECKPOINT_PAGES = 16_000;
const DEFAULT_AUTOCHECKPOINT_PAGES = 1000;
/** A worker that does not stop within this is terminated. */
const STOP_TIMEOUT_MS = 5000;

// CommonJS, run with `eval`: no file to find next to the compiled module (tests run the sources).
// Two passes: the first copies the bulk; the second what the writer committed meanwhile, so that
// what is left for the writer's own pass is small.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma('synchronous = NORMAL');
db.pragma('wal_autocheckpoint = 0');
parentPort.on('message', (message) => {
  if (message === 'stop') {
    db.close();
    parentPort.close();
    return;
  }
  db.pragma('wal_checkpoint(PASSIVE)');
  db.pragma('wal_checkpoint(PASSIVE)');
  parentPort.postMessage('done');
});
`;

/** Checkpoints running in the background; see {@link Ledger.checkpointInBackground}. */
export interface BackgroundCheckpoints {
  /** Checkpoint rounds completed (the worker's passes, then the writer's). */
  readonly rounds: number;
  /** Stops the worker (after the checkpoint it is running) and gives checkpoints back to the writer. */
  stop(): Promise<void>;
}

export class BackgroundCheckpointer implements BackgroundCheckpoints {
  rounds = 0;
  readonly #db: Database.Database;
  readonly #worker: Worker;
  readonly #timer: NodeJS.Timeout;
  #busy = false;
  #stopped = false;
  readonly #exited: Promise<void>;

  /** Starts checkpointing the WAL of `db` (the file at `path`) from a worker thread. */
  constructor(db: Database.Database, path: string, intervalMs = DEFAULT_INTERVAL_MS) {
    this.#db = db;
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    this.#worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { path, driver } });
    this.#worker.unref();
    this.#exited = new Promise((resolve) => this.#worker.once('exit', () => resolve()));
    db.pragma(`wal_autocheckpoint = ${FALLBACK_AUTOCHECKPOINT_PAGES}`);
    this.#worker.on('message', () => this.#finish());
    // A worker that cannot run (or dies) leaves the checkpoints to the writer, as without it.
    this.#worker.once('error', () => this.#fallBack());
    this.#worker.once('exit', () => this.#fallBack());
    this.#timer = setInterval(() => this.#request(), intervalMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    this.#worker.ref(); // the process waits for it to close its connection
    if (!this.#stopped) {
      this.#fallBack();
      this.#worker.postMessage('stop');
    }
    const timer = setTimeout(() => void this.#worker.terminate(), STOP_TIMEOUT_MS);
    await this.#exited;
    clearTimeout(timer);
  }

  /** Like {@link stop}, without waiting: for a connection being closed at once. */
  terminate(): void {
    this.#fallBack();
    void this.#worker.terminate();
  }

  #request(): void {
    if (this.#busy || this.#stopped) return;
    this.#busy = true;
    this.#worker.postMessage('checkpoint');
  }

  /** The worker has copied the bulk: the writer checkpoints the rest, so the WAL can start over. */
  #finish(): void {
    this.#busy = false;
    // Messages arrive between event-loop turns, so never inside a (synchronous) transaction; the
    // check is a guard. PASSIVE never waits for a lock.
    if (this.#stopped || !this.#db.open || this.#db.inTransaction) return;
    try {
      this.#db.pragma('wal_checkpoint(PASSIVE)');
      this.rounds += 1;
    } catch {
      // An I/O error here would surface in the next commit anyway: checkpoint as without a worker.
      this.terminate();
    }
  }

  #fallBack(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    clearInterval(this.#timer);
    if (this.#db.open) this.#db.pragma(`wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT_PAGES}`);
  }
}
