/**
 * A worker's row writes on the PostgreSQL ledger: committed a turn at a time (as the SQLite row book
 * does), each fenced by its row's claim (`ledger/postgres/claims.ts`). A commit the database did not
 * answer (a connection cut, even during COMMIT) is sent again: each write names the state it expects
 * the row in, so a write that had in fact committed is found applied, not applied twice. Once the
 * worker's lease is lost, nothing more is written: a mark not made means the request does not leave.
 */
import { FINAL_STATES, type RowState, type RowWrite, type RowWriteResult } from '../ledger/index.js';
import type { ClaimedChunk } from '../ledger/postgres/claims.js';
import type { FencedRowWrite, PgLedger } from '../ledger/postgres/ledger.js';
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

interface ChunkLeft {
  left: number;
  allGiven: boolean;
}

export class PgRowBook implements RowWriter {
  rowsDone = 0;
  readonly #claims = new Map<number, ClaimedChunk>();
  readonly #left = new Map<ClaimedChunk, ChunkLeft>();
  #queue: Queued[] = [];
  #scheduled = false;
  #earlySpent = false;
  #inFlight: Promise<void> = Promise.resolve();
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
      this.#queue.push({ write: { ...write, claimId: chunk.claimId }, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.#commit());
      }
      if (urgent && !this.#earlySpent) {
        this.#earlySpent = true;
        process.nextTick(() => this.#commit());
        setImmediate(() => {
          this.#earlySpent = false;
        });
      }
    });
  }

  /** Commits what is queued, one commit after another (the ledger's transactions do not overlap a row's). */
  #commit(): void {
    this.#scheduled = false;
    const batch = this.#queue;
    if (batch.length === 0) return;
    this.#queue = [];
    this.#inFlight = this.#inFlight.then(() => this.#send(batch));
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
        if (attempt >= 200) {
          for (const item of batch) item.reject(error);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, pause));
      }
    }
  }

  /** Waits for every write queued so far to be committed (or given up). */
  async flush(): Promise<void> {
    this.#commit();
    await this.#inFlight;
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
    this.#inFlight = this.#inFlight.then(() => this.onChunkDone(chunk));
  }

  putBack(from: RowState, to: RowState): void {
    this.counts[from] -= 1;
    this.counts[to] += 1;
  }

  async recordAttempts(rowNumber: number, attempts: readonly AttemptRecord[]): Promise<void> {
    await this.ledger.recordAttempts(this.jobId, this.runId, rowNumber, attempts, null);
  }
}
