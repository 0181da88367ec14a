/**
 * Where a run's rows come from, and how they are recorded before anything is sent: read → map →
 * decide (row-state) → record. The runner takes the rows to send from an intake and does the rest
 * (claim, mark, send, record). Two intakes:
 *
 * - {@link LocalIntake}, the SQLite ledger's: one process reads the whole input, from the job's
 *   resume point, recording each row as it is read (the row book batches the inserts).
 * - `ChunkIntake` (`chunk-intake.ts`), the PostgreSQL ledger's: several workers claim the input in
 *   chunks; a chunk's rows are recorded when it is claimed.
 */
import { FINAL_STATES, type JobRecord, type ResumePoint, type RowState } from '../ledger/index.js';
import type { Ledger } from '../ledger/index.js';
import type { InputReader } from '../input/index.js';
import { formatRowIssue, type CompiledMapping, type MappedRow } from '../mapping/index.js';
import type { StoreRequests } from '../config/index.js';
import { maskIssue } from './mask.js';
import type { OtherJobs } from './other-jobs.js';
import { RowBook, type RowWriter } from './row-book.js';
import { decide, sendsAgain, type RowEvent } from './row-state.js';

/** A row to send, and the state its send begins in (`pending`, or `failed`/`in_doubt` sent again). */
export interface RowToSend {
  mapped: MappedRow;
  sentFrom: RowState;
}

/** How far an intake has read, for the progress line. */
export interface IntakeProgress {
  rowsRead: number;
  rowsSkipped: number;
  bytesRead: number;
  lastOffset: number;
  totalBytes: number;
  totalRows: number | null;
}

export interface Intake {
  /** Where the runner's writes go (and its counts per state). */
  readonly book: RowWriter;
  /** The rows to send, in file order; stops at `halt`. */
  rows(halt: AbortSignal): AsyncIterable<RowToSend>;
  /** True once every row of the input was read (the job can complete when every row is final). */
  readonly readToEnd: boolean;
  /** True when `--limit` stopped the reading. */
  readonly stoppedByLimit: boolean;
  progress(): IntakeProgress;
  /** After the sends drained: what the next run needs made durable (the resume point). */
  finish(): Promise<void>;
  /** After an internal error: records what it can (the answers in), and forgets the rest. */
  salvage(): void;
  /**
   * Starts its timers (heartbeat, checkpoints, leases): a ledger that fails under one is told to
   * `onError` (the run ends with it); `halt` stops the sends for a reason of the ledger's (a lost lease).
   */
  start(onError: (error: unknown) => void, halt: (reason: string) => void): void;
  /** Stops its timers. */
  close(): void;
}

/** What reading a row found: its problems, its key seen before, its lead sent by another job, or nothing. */
export async function readEvent(mapped: MappedRow, seen: (key: string) => boolean, otherJobs: OtherJobs, storeRequests: StoreRequests): Promise<RowEvent> {
  if (mapped.errors.length > 0) {
    const keep = storeRequests === 'full';
    return { type: 'mapping_problems', message: mapped.errors.map((issue) => formatRowIssue(mapped.rowNumber, keep ? issue : maskIssue(issue))).join('; ') };
  }
  if (seen(mapped.rowKey)) return { type: 'repeated_key', rowKey: mapped.rowKey };
  const sent = await otherJobs.sentWhenRead(mapped);
  if (sent !== undefined) return { type: 'sent_by_other_job', rowKey: mapped.rowKey, sent };
  return { type: 'read' };
}

export interface LocalIntakeOptions {
  ledger: Ledger;
  job: JobRecord;
  runId: number;
  reader: InputReader;
  mapping: CompiledMapping;
  otherJobs: OtherJobs;
  storeRequests: StoreRequests;
  retryFailed: boolean;
  resendInDoubt: boolean;
  limit?: number | undefined;
  /** Where the reader starts (the job's resume point), when not at the first row. */
  start: ResumePoint | undefined;
  /** The user's stop: a reader it stopped did not reach the end of the file. */
  stop: AbortSignal;
}

/** The SQLite ledger's intake: this process reads the whole input and records each row as read. */
export class LocalIntake implements Intake {
  readonly book: RowBook;
  readToEnd = true;
  stoppedByLimit = false;
  #rowsRead: number;
  #rowsSkipped: number;
  #lastRead: ResumePoint | undefined;
  #totalRows: number | null;
  #timers: NodeJS.Timeout[] = [];

  constructor(private readonly options: LocalIntakeOptions) {
    const { ledger, job, runId, start } = options;
    this.#rowsRead = start === undefined ? 0 : start.rowNumber - 1;
    this.#rowsSkipped = this.#rowsRead;
    this.#totalRows = job.total_rows;
    this.book = new RowBook(ledger, job.id, runId, start);
  }

  start(onError: (error: unknown) => void): void {
    const guarded = (work: () => void) => (): void => {
      try {
        work();
      } catch (error) {
        onError(error);
      }
    };
    this.#timers = [
      setInterval(guarded(() => this.options.ledger.heartbeat(this.options.runId)), 10_000),
      setInterval(guarded(() => this.book.saveResumePoint(this.#lastRead)), 2_000),
    ];
    for (const timer of this.#timers) timer.unref();
  }

  async *rows(halt: AbortSignal): AsyncGenerator<RowToSend> {
    const { options, book } = this;
    for await (const item of options.reader) {
      if (halt.aborted) {
        this.readToEnd = false;
        break;
      }
      if (options.limit !== undefined && item.rowNumber > options.limit) {
        this.readToEnd = false;
        this.stoppedByLimit = true;
        break;
      }
      this.#rowsRead = item.rowNumber;
      const position = { rowNumber: item.rowNumber, offset: item.offset, line: item.line };
      this.#lastRead = position;
      const previous = book.stateOf(item.rowNumber);
      if (previous !== undefined && !sendsAgain(previous, options)) {
        this.#rowsSkipped += 1;
        if (!FINAL_STATES.has(previous)) book.holdUnfinished(position);
        continue;
      }
      book.hold(position);
      const source = { sourceOffset: item.offset, sourceLine: item.line };
      if (item.kind === 'error') {
        book.record(previous, { rowNumber: item.rowNumber, rowKey: null, agentEmail: null, ...decide({ type: 'unreadable', message: item.message }), ...source });
        continue;
      }
      const mapped = options.mapping.mapRow(item.record, item.rowNumber);
      if (previous !== undefined) {
        yield { mapped, sentFrom: previous };
        continue;
      }
      const decision = decide(await readEvent(mapped, (key) => book.hasRowKey(key), options.otherJobs, options.storeRequests));
      book.record(undefined, { rowNumber: mapped.rowNumber, rowKey: mapped.rowKey, agentEmail: mapped.agentEmail, ...decision, ...source });
      if (decision.state === 'pending') yield { mapped, sentFrom: 'pending' };
    }
    book.flushInserts();
    // A reader stopped by its signal (the user's stop) ends as if the file ended: that is not the
    // end of the file. A halt of the client does not stop the reader: the loop breaks at the next
    // row, so a loop that ended without a break while halted did read the last row.
    if (options.stop.aborted) this.readToEnd = false;
    if (this.readToEnd) {
      options.ledger.setTotalRows(options.job.id, this.#rowsRead);
      this.#totalRows = this.#rowsRead;
    }
  }

  progress(): IntakeProgress {
    return {
      rowsRead: this.#rowsRead, rowsSkipped: this.#rowsSkipped, bytesRead: this.options.reader.bytesRead,
      lastOffset: this.#lastRead?.offset ?? 0, totalBytes: this.options.reader.totalBytes, totalRows: this.#totalRows,
    };
  }

  finish(): Promise<void> {
    this.book.saveResumePoint(this.#lastRead);
    return Promise.resolve();
  }

  salvage(): void {
    // The answers already in are recorded first; a ledger that fails again (busy, full) fails the
    // rows not sent yet only, and the error being thrown says why.
    this.book.commitWrites();
    try {
      this.book.flushInserts();
    } catch {
      // Those rows were not recorded: the next run reads them again.
    }
  }

  close(): void {
    for (const timer of this.#timers) clearInterval(timer);
  }
}
