/**
 * A worker's row writes on the PostgreSQL ledger: committed a batch at a time, in the order they
 * were queued ({@link CommitLane}), each write fenced by its row's claim (`ledger/postgres/claims.ts`).
 * A commit the database did not answer (a connection cut, even during COMMIT) is sent again: each
 * write names the state it expects the row in, so a write that had in fact committed is found
 * applied, not applied twice. Once the worker's lease is lost, nothing more is written: a mark not
 * made means the request does not leave.
 */
import { FINAL_STATES, type RowState, type RowWrite, type RowWriteResult } from '../ledger/index.js';
import type { ClaimedChunk } from '../ledger/postgres/claims.js';
import { isTransient, type FencedRowWrite, type PgLedger } from '../ledger/postgres/ledger.js';
import type { AttemptRecord } from '../partner/types.js';
import type { RowWriter } from './row-book.js';

type Result = RowWriteResult & { lost?: boolean };

/** First pause before a commit is sent again; it doubles up to the last. */
const RETRY_PAUSES_MS = [100, 250, 500, 1000, 2000, 4000];

interface Queued {
  write: FencedRowWrite;
  resolve: (r: Result) => void;
  reject: (e: unknown) => void;
}

interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
}

function deferred(): Deferred {
  let resolve = (): void => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/**
 * Writes committed one commit at a time: those queued during a commit go together in the next, as
 * soon as it ends (group commit). A commit is one statement whatever its size
 * (`ledger/postgres/row-writes.ts`), so a write waits for at most the commit under way and its own.
 */
class CommitLane {
  #queue: Queued[] = [];
  /** Settles when the writes in `#queue` are committed. */
  #queued: Deferred | undefined;
  /** The commit under way (it never rejects: each write's promise says how it went). */
  #committing: Promise<void> | undefined;
  #scheduled = false;

  constructor(private readonly send: (batch: Queued[]) => Promise<void>) {}

  push(item: Queued, urgent: boolean): void {
    this.#queue.push(item);
    this.#queued ??= deferred();
    if (this.#committing !== undefined) return; // taken with the others queued when the commit under way ends
    if (urgent) {
      // Its request waits for it: committed once this tick's writes are queued.
      process.nextTick(() => this.commit());
    } else if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(() => this.commit());
    }
  }

  commit(): void {
    this.#scheduled = false;
    if (this.#committing !== undefined || this.#queue.length === 0) return;
    const batch = this.#queue;
    const queued = this.#queued;
    this.#queue = [];
    this.#queued = undefined;
    this.#committing = this.send(batch).finally(() => {
      this.#committing = undefined;
      queued?.resolve();
      this.commit();
    });
  }

  /** Settles once every write queued so far is committed (or given up). */
  settledSoFar(): Promise<void> {
    return this.#queued?.promise ?? this.#committing ?? Promise.resolve();
  }

  get idle(): boolean {
    return this.#queued === undefined && this.#committing === undefined;
  }
}

interface ChunkLeft {
  left: number;
  allGiven: boolean;
}

export class PgRowBook implements RowWriter {
  rowsDone = 0;
  readonly #claims = new Map<number, ClaimedChunk>();
  readonly #left = new Map<ClaimedChunk, ChunkLeft>();
  /**
   * Every write in one lane, a batch one statement (`ledger/postgres/row-writes.ts`). A mark is so
   * committed with or after the outcomes queued before it: a slot freed by an answer is taken by the
   * next mark, and were that mark committed first, a worker killed between the two would leave one
   * row more in flight than its concurrency (test/robustness/workers.test.ts caught 5 of 4).
   */
  readonly #lane = new CommitLane((batch) => this.#send(batch));
  #chunksTold: Promise<void> = Promise.resolve();
  #leaseLost = false;

  constructor(
    private readonly ledger: PgLedger,
    private readonly jobId: number,
    private readonly runId: number,
    readonly counts: Record<RowState, number>,
    private readonly onChunkDone: (chunk: ClaimedChunk) => void,
  ) {}

  /** The rows of `chunk` this worker will be given to send. */
  claim(chunk: ClaimedChunk, rowNumbers: readonly number[]): void {
    for (const row of rowNumbers) this.#claims.set(row, chunk);
    this.#left.set(chunk, { left: rowNumbers.length, allGiven: false });
  }

  /** Every row of `chunk` to send was given to the runner: once they have settled, the chunk is done. */
  allGiven(chunk: ClaimedChunk): void {
    const left = this.#left.get(chunk);
    if (left === undefined) return;
    left.allGiven = true;
    this.#maybeDone(chunk, left);
  }

  write(write: RowWrite, urgent = false): Promise<Result> {
    const chunk = this.#claims.get(write.rowNumber);
    if (this.#leaseLost || chunk === undefined) return Promise.resolve({ lost: true });
    return new Promise<Result>((resolve, reject) => {
      this.#lane.push({ write: { ...write, claimId: chunk.claimId }, resolve, reject }, urgent);
    });
  }

  async #send(batch: Queued[]): Promise<void> {
    for (let attempt = 0; ; attempt += 1) {
      if (this.#leaseLost) {
        for (const item of batch) item.resolve({ lost: true });
        return;
      }
      try {
        const results = await this.ledger.commitRowWrites(this.jobId, this.runId, batch.map((b) => b.write));
        batch.forEach((item, i) => item.resolve(results[i] ?? {}));
        return;
      } catch (error) {
        const pause = RETRY_PAUSES_MS[Math.min(attempt, RETRY_PAUSES_MS.length - 1)] as number;
        // Sent again until the lease is lost (the intake stops the worker then): the database may be back.
        // A statement the database refused (a constraint, a trigger, a full disk) is refused again: the run halts on it.
        if (!isTransient(error) || attempt >= 200) {
          for (const item of batch) item.reject(error);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, pause));
      }
    }
  }

  /** Waits for every write queued so far to be committed (or given up), and the chunks done meanwhile to be told. */
  async flush(): Promise<void> {
    this.#lane.commit();
    while (!this.#lane.idle) await this.#lane.settledSoFar();
    await this.#chunksTold;
  }

  /** The lease is lost: every write from now on (and those waiting) changes nothing. */
  leaseLost(): void {
    this.#leaseLost = true;
  }

  transition(from: RowState | undefined, to: RowState, rowNumber?: number): void {
    if (from !== undefined) this.counts[from] -= 1;
    this.counts[to] += 1;
    const settled = FINAL_STATES.has(to) || to === 'failed' || to === 'in_doubt';
    if (!settled) return;
    this.rowsDone += 1;
    const chunk = rowNumber === undefined ? undefined : this.#claims.get(rowNumber);
    if (chunk === undefined || rowNumber === undefined) return;
    this.#claims.delete(rowNumber);
    const left = this.#left.get(chunk);
    if (left === undefined) return;
    left.left -= 1;
    this.#maybeDone(chunk, left);
  }

  #maybeDone(chunk: ClaimedChunk, left: ChunkLeft): void {
    if (!left.allGiven || left.left > 0 || this.#leaseLost) return;
    this.#left.delete(chunk);
    // After the outcomes queued so far are committed: the chunk is done only once they are.
    const told = this.#lane.settledSoFar().then(() => this.onChunkDone(chunk));
    this.#chunksTold = Promise.all([this.#chunksTold, told]).then(() => {});
  }

  putBack(from: RowState, to: RowState): void {
    this.counts[from] -= 1;
    this.counts[to] += 1;
  }

  async recordAttempts(rowNumber: number, attempts: readonly AttemptRecord[]): Promise<void> {
    await this.ledger.recordAttempts(this.jobId, this.runId, rowNumber, attempts, null);
  }
}
