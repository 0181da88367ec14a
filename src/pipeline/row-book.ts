/**
 * The run's bookkeeping of rows: what it writes to the ledger and when, the in-memory counts per
 * state (for progress and the end state), and how far the input is finished (the resume point).
 *
 * Durability rules (README, "Outcomes, resume and the ledger"): a row is recorded as `pending` (or `invalid`/`duplicate`) when
 * read, marked `in_flight` durably right before its request leaves, and given its outcome when the
 * answer (or the lack of one) is known. Writes of row tasks are committed together, at the end of
 * the event-loop turn: with 64 rows in flight, one commit instead of 128. A task awaits the commit
 * of its write before its request leaves, so `in_flight` is still durable first. The first mark of a
 * turn is committed sooner, as soon as the promise jobs running now are done (with the outcome of
 * the answer that freed its slot): on a busy event loop, waiting behind every other answer of the
 * turn was the larger part of a request's time on our side. Only the first: a turn of many answers
 * (a CPU-bound run) still commits once, where a commit per answer cost a sixth of the CPU.
 *
 * Newly read rows are inserted in batches of up to {@link INSERT_BATCH}, not at every commit: a
 * commit inserts them only when one of its writes concerns a row still waiting to be inserted.
 * Each insert touches a random page of the row-key index, so a batch of 512 writes about as many
 * pages as a handful of rows would (the WAL is written page by page).
 */
import { FINAL_STATES, ROW_STATES, type Ledger, type NewRow, type ResumePoint, type RowState, type RowWrite, type RowWriteResult } from '../ledger/index.js';
import type { AttemptRecord } from '../partner/types.js';

const INSERT_BATCH = 512;

/** Where a run's row writes go, and its counts per state (the SQLite ledger's {@link RowBook}, or a worker's on PostgreSQL). */
export interface RowWriter {
  /** The job's rows per state, kept in step with this run's writes (for progress and the end state). */
  readonly counts: Record<RowState, number>;
  /** Rows that reached a state (final, failed or in doubt) in this run. */
  readonly rowsDone: number;
  /**
   * Queues a write of a row task; resolves with what it found once it is committed (`lost`: the row
   * is not this worker's any more, and the write changed nothing).
   */
  write(write: RowWrite, urgent?: boolean): Promise<RowWriteResult & { lost?: boolean }>;
  /** Keeps the counts in step with a row's new state. */
  transition(from: RowState | undefined, to: RowState, rowNumber?: number): void;
  /** A row back in an earlier state while this run still works on it: counts only. */
  putBack(from: RowState, to: RowState): void;
  /** Attempts of a call whose request never left (stopped or halted while it waited). */
  recordAttempts(rowNumber: number, attempts: readonly AttemptRecord[]): Promise<void>;
}

export class RowBook implements RowWriter {
  readonly counts: Record<RowState, number>;
  /** Rows that reached a state (final, failed or in doubt) in this run. */
  rowsDone = 0;
  readonly #states: Uint8Array;
  #pendingInserts: NewRow[] = [];
  #pendingKeys = new Set<string>();
  #writeQueue: RowWrite[] = [];
  /** True when a queued write concerns a row not inserted yet. */
  #insertBeforeWrites = false;
  #writeCommit: Promise<RowWriteResult[]> | null = null;
  /** True once this turn's early commit is due or done (see `write`). */
  #earlyCommitSpent = false;
  #resolveCommit: ((results: RowWriteResult[]) => void) | null = null;
  #rejectCommit: ((error: unknown) => void) | null = null;
  /**
   * Rows of this run still being worked on (read, not settled), by row number in file order: the
   * first of them is where the next run must start reading, unless a settled row that is not
   * final (`failed`, `in_doubt`, skipped) comes before it. Only that earliest settled one is kept,
   * so memory stays bounded by the rows in progress however many rows fail.
   */
  readonly #inProgress = new Map<number, ResumePoint>();
  #firstUnfinished: ResumePoint | undefined;
  #resumePoint: ResumePoint | undefined;

  constructor(
    private readonly ledger: Ledger,
    private readonly jobId: number,
    private readonly runId: number,
    start: ResumePoint | undefined,
  ) {
    this.counts = ledger.countsByState(jobId);
    this.#states = ledger.rowStates(jobId);
    this.#resumePoint = start;
  }

  /** The state an earlier run recorded for the row, if any. */
  stateOf(rowNumber: number): RowState | undefined {
    const code = this.#states[rowNumber] ?? 0;
    return code === 0 ? undefined : ROW_STATES[code - 1];
  }

  /** True when an earlier row of this job (recorded or about to be) carries the key. */
  hasRowKey(rowKey: string): boolean {
    return this.#pendingKeys.has(rowKey) || this.ledger.hasRowKey(this.jobId, rowKey);
  }

  /** Records a newly read row (batched), or a new state for a row an earlier run recorded. */
  record(previous: RowState | undefined, row: NewRow): void {
    if (previous !== undefined) {
      // A row recorded earlier that can no longer be read (e.g. a smaller --max-record limit).
      this.ledger.recordOutcome(this.jobId, this.runId, row.rowNumber, {
        state: row.state, attempts: 0, errorCode: row.errorCode ?? null, errorMessage: row.errorMessage ?? null, sentBy: row.sentBy ?? null,
      }, []);
      this.transition(previous, row.state, row.rowNumber);
      return;
    }
    this.#pendingInserts.push(row);
    if (row.rowKey !== null && row.state === 'pending') this.#pendingKeys.add(row.rowKey);
    this.transition(undefined, row.state, row.rowNumber);
    if (this.#pendingInserts.length >= INSERT_BATCH) this.flushInserts();
  }

  flushInserts(): void {
    if (this.#pendingInserts.length === 0) return;
    this.ledger.insertRows(this.jobId, this.#pendingInserts);
    this.#pendingInserts = [];
    this.#pendingKeys = new Set();
  }

  /**
   * Queues a ledger write of a row task; resolves with what it found once it is committed: at the end
   * of the event-loop turn or, for the turn's first `urgent` write (a request waits for it), once the
   * promise jobs running now are done (a `process.nextTick` queued from a promise job runs after the
   * whole chain of them).
   */
  write(write: RowWrite, urgent = false): Promise<RowWriteResult> {
    const index = this.#writeQueue.push(write) - 1;
    // Rows are read (and queued for insertion) in file order: a row at or past the first one
    // waiting is not in the ledger yet, and must be inserted by the commit that writes it.
    const firstWaiting = this.#pendingInserts[0];
    if (firstWaiting !== undefined && write.rowNumber >= firstWaiting.rowNumber) this.#insertBeforeWrites = true;
    if (this.#writeCommit === null) {
      this.#writeCommit = new Promise<RowWriteResult[]>((resolve, reject) => {
        this.#resolveCommit = resolve;
        this.#rejectCommit = reject;
      });
      setImmediate(() => this.commitWrites());
    }
    if (urgent && !this.#earlyCommitSpent) {
      this.#earlyCommitSpent = true;
      process.nextTick(() => this.commitWrites());
      setImmediate(() => {
        this.#earlyCommitSpent = false;
      });
    }
    return this.#writeCommit.then((results) => results[index] ?? {});
  }

  /**
   * Commits every queued write now (also called before the resume point is saved). Returns false
   * when the commit failed: the tasks waiting on it are told (their promise rejects, an internal
   * error), and the rows to insert are kept for the next attempt.
   */
  commitWrites(): boolean {
    const writes = this.#writeQueue;
    const resolve = this.#resolveCommit;
    const reject = this.#rejectCommit;
    this.#writeQueue = [];
    this.#writeCommit = null;
    this.#resolveCommit = null;
    this.#rejectCommit = null;
    if (writes.length === 0) {
      resolve?.([]);
      return true;
    }
    // Rows must exist before they are marked: the commit inserts those waiting first.
    const inserts = this.#insertBeforeWrites ? this.#pendingInserts : [];
    this.#insertBeforeWrites = false;
    try {
      const results = this.ledger.commitRowWrites(this.jobId, this.runId, inserts, writes);
      if (inserts.length > 0) {
        this.#pendingInserts = [];
        this.#pendingKeys = new Set();
      }
      resolve?.(results);
      return true;
    } catch (error) {
      // Rolled back: the rows to insert are still waiting, with their keys (for the duplicate check).
      reject?.(error);
      return false;
    }
  }

  /** Keeps the in-memory counts (for progress and the end state) in step with the ledger. */
  transition(from: RowState | undefined, to: RowState, rowNumber?: number): void {
    // Final, or left for a later run (failed, in doubt): this run is done with the row.
    const settled = FINAL_STATES.has(to) || to === 'failed' || to === 'in_doubt';
    if (rowNumber !== undefined && settled) {
      const position = this.#inProgress.get(rowNumber);
      this.#inProgress.delete(rowNumber);
      if (position !== undefined && !FINAL_STATES.has(to)) this.#unfinished(position);
    }
    if (from !== undefined) this.counts[from] -= 1;
    this.counts[to] += 1;
    if (settled) this.rowsDone += 1;
  }

  recordAttempts(rowNumber: number, attempts: readonly AttemptRecord[]): Promise<void> {
    this.ledger.recordAttempts(this.jobId, this.runId, rowNumber, attempts, null);
    return Promise.resolve();
  }

  /** A row back in an earlier state while this run still works on it (its request is sent again later): counts only. */
  putBack(from: RowState, to: RowState): void {
    this.counts[from] -= 1;
    this.counts[to] += 1;
  }

  /** A row read by this run that is not settled yet: the resume point cannot pass it. */
  hold(position: ResumePoint): void {
    this.#inProgress.set(position.rowNumber, position);
  }

  /** A row an earlier run left unfinished and this run does not send: the resume point cannot pass it. */
  holdUnfinished(position: ResumePoint): void {
    this.#unfinished(position);
  }

  /** Persists how far the file is finished; rows before the point must be durable first. */
  saveResumePoint(lastRead: ResumePoint | undefined): void {
    const first = this.#inProgress.values().next();
    const inProgress = first.done === true ? undefined : first.value;
    const candidates = [inProgress, this.#firstUnfinished].filter((p): p is ResumePoint => p !== undefined);
    const point = candidates.length === 0 ? lastRead : candidates.reduce((a, b) => (a.rowNumber <= b.rowNumber ? a : b));
    if (point === undefined || (this.#resumePoint !== undefined && point.rowNumber <= this.#resumePoint.rowNumber)) return;
    // Rows before the point were settled when their outcome was queued: make those durable first.
    if (!this.commitWrites()) return;
    this.flushInserts();
    this.ledger.setResumePoint(this.jobId, point);
    this.#resumePoint = point;
  }

  #unfinished(position: ResumePoint): void {
    if (this.#firstUnfinished === undefined || position.rowNumber < this.#firstUnfinished.rowNumber) this.#firstUnfinished = position;
  }
}
