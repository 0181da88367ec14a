/**
 * The PostgreSQL ledger's intake: this process is one of the job's workers. It claims the input in
 * chunks (docs/ledger.md, "Several workers"): a chunk another worker left (its lease ran out), else
 * the next one at the input's frontier, which it reads from its own copy of the file and records
 * while it holds the frontier. Its lease is renewed on a timer; a worker that cannot renew stops
 * sending before the lease runs out. A chunk whose rows all reached a state this worker leaves is
 * done; the job is the workers' together.
 */
import type { StoreRequests } from '../config/index.js';
import { openInput, type InputItem, type InputOptions, type InputReader } from '../input/index.js';
import type { NewRow, ResumePoint, RowState } from '../ledger/index.js';
import type { ClaimedChunk, IntakeLookups, IntakeResult } from '../ledger/postgres/claims.js';
import type { PgLedger } from '../ledger/postgres/ledger.js';
import type { CompiledMapping, MappedRow } from '../mapping/index.js';
import type { Intake, IntakeProgress, RowToSend } from './intake.js';
import { readEvent } from './intake.js';
import type { OtherJobs } from './other-jobs.js';
import { PgRowBook } from './pg-row-book.js';
import { decide, sendsAgain, STOPPED } from './row-state.js';

/**
 * Rows per chunk: small enough that the last chunks of a job spread over its workers (a worker with
 * no chunk left to claim ends its part), large enough that a claim (one transaction) costs little
 * beside a chunk's requests.
 */
export const CHUNK_ROWS = 100;

interface Claimed {
  chunk: ClaimedChunk | null;
  /** The rows read for a frontier chunk; undefined for a chunk taken over (read again from the input). */
  mapped: MappedRow[] | undefined;
}

/** Waits `ms`, or less when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

export interface ChunkIntakeOptions {
  ledger: PgLedger;
  jobId: number;
  runId: number;
  inputPath: string;
  inputOptions: InputOptions;
  mapping: CompiledMapping;
  otherJobs: OtherJobs;
  storeRequests: StoreRequests;
  retryFailed: boolean;
  resendInDoubt: boolean;
  limit?: number | undefined;
  /** The worker's lease, ms: renewed every third of it; sending stops when a renewal has not come for two thirds. */
  leaseMs: number;
  counts: Record<RowState, number>;
  chunkRows?: number;
  /** Told of a chunk this worker took over from a dead one, and what became of its rows in flight. */
  onTakeOver?: (chunk: ClaimedChunk) => void;
}

/** A reader left at the row after the last one read, so that this worker's next frontier chunk goes on from it. */
interface OpenReader {
  reader: InputReader;
  items: AsyncIterator<InputItem>;
  /** The next item, read ahead to learn where the chunk ends. */
  next: InputItem | undefined;
}

export class ChunkIntake implements Intake {
  readonly book: PgRowBook;
  readToEnd = false;
  stoppedByLimit = false;
  /** No rows left to give the senders: the job's other chunks are held by other workers, or none is left. */
  drained = false;
  #open: OpenReader | undefined;
  #rowsRead = 0;
  #rowsSkipped = 0;
  #bytesRead = 0;
  #lastOffset = 0;
  #totalRows: number | null = null;
  #timer: NodeJS.Timeout | undefined;
  #renewedAt = performance.now();
  #halt: ((reason: string) => void) | undefined;
  readonly #chunks: ClaimedChunk[] = [];

  constructor(private readonly options: ChunkIntakeOptions) {
    this.book = new PgRowBook(options.ledger, options.jobId, options.runId, options.counts, (chunk) => this.#chunkSettled(chunk));
  }

  get claimedChunks(): number {
    return this.#chunks.length;
  }

  async *rows(halt: AbortSignal): AsyncGenerator<RowToSend> {
    const { options } = this;
    // One chunk ahead: the next is claimed while this one's rows are sent, so that the senders never
    // wait on a claim's transaction (it reads and records a chunk of input).
    let next: Promise<Claimed> | undefined = this.#claimNext();
    try {
      for (;;) {
        // --limit reached: no chunk past it is claimed (nor is the input's end recorded).
        if (halt.aborted || next === undefined) return;
        const { chunk, mapped } = await next;
        next = undefined;
        if (chunk === null) {
          if (this.stoppedByLimit) return;
          // Chunks other workers hold: wait for them to be done, or for a dead worker's lease to run
          // out (then its chunks are this worker's to take over), so that the job ends complete.
          this.drained = true;
          const { open } = await options.ledger.openChunks(options.jobId);
          if (open > 0 && !halt.aborted) {
            await sleep(Math.min(1000, Math.floor(options.leaseMs / 3)), halt);
            next = this.#claimNext();
            continue;
          }
          this.readToEnd = true;
          return;
        }
        this.drained = false;
        this.#chunks.push(chunk);
        // Rows this worker read and recorded now: counted from here on (its progress line).
        if (mapped !== undefined) for (const state of chunk.states.values()) this.options.counts[state as RowState] += 1;
        if (chunk.takenOver) options.onTakeOver?.(chunk);
        const rows = mapped ?? await this.#readClaimed(chunk);
        const toSend: RowToSend[] = [];
        for (const row of rows) {
          const state = chunk.states.get(row.rowNumber) as RowState | undefined;
          if (state === undefined || !sendsAgain(state, options) || row.errors.length > 0) {
            this.#rowsSkipped += mapped === undefined ? 1 : 0;
            continue;
          }
          toSend.push({ mapped: row, sentFrom: state });
        }
        this.book.claim(chunk, toSend.map((r) => r.mapped.rowNumber));
        if (!this.stoppedByLimit && !halt.aborted) next = this.#claimNext();
        for (const row of toSend) {
          if (halt.aborted) return;
          yield row;
        }
        this.book.allGiven(chunk);
      }
    } finally {
      // A claim under way ends before the intake does (its rows stay pending under this worker's claim).
      await next?.catch(() => {});
    }
  }

  /** Claims the next chunk: the frontier's (read and mapped here), a dead worker's, or none. */
  async #claimNext(): Promise<Claimed> {
    const { options } = this;
    let mapped: MappedRow[] | undefined;
    const known = this.#chunks.map((c) => c.claimId);
    const chunk = await options.ledger.claimChunk(options.jobId, options.runId, known, STOPPED, async (frontier, lookups) => {
      const read = await this.#readFrontier(frontier, lookups);
      mapped = read.readRows as MappedRow[];
      return read;
    });
    return { chunk, mapped };
  }

  /** Reads the frontier chunk: maps its rows and decides each (its problems, a key seen before, a lead another job sent). */
  async #readFrontier(frontier: ResumePoint, lookups: IntakeLookups): Promise<IntakeResult> {
    const { options } = this;
    const chunkRows = Math.min(options.chunkRows ?? CHUNK_ROWS, options.limit === undefined ? Number.POSITIVE_INFINITY : options.limit - frontier.rowNumber + 1);
    const open = await this.#readerAt(frontier);
    const items: InputItem[] = [];
    while (items.length < chunkRows && open.next !== undefined) {
      items.push(open.next);
      open.next = await this.#advance(open);
    }
    if (options.limit !== undefined && frontier.rowNumber + items.length > options.limit && open.next !== undefined) this.stoppedByLimit = true;
    const mapped = items.map((item) => (item.kind === 'error' ? item : options.mapping.mapRow(item.record, item.rowNumber)));
    const candidates = mapped.filter((m): m is MappedRow => !('kind' in m) && m.errors.length === 0).map((m) => m.rowKey);
    const seen = await lookups.keysSeen([...new Set(candidates)]);
    const rows: NewRow[] = [];
    const readRows: MappedRow[] = [];
    for (const [i, m] of mapped.entries()) {
      const item = items[i] as InputItem;
      const source = { sourceOffset: item.offset, sourceLine: item.line };
      if ('kind' in m) {
        rows.push({ rowNumber: item.rowNumber, rowKey: null, agentEmail: null, ...decide({ type: 'unreadable', message: m.message }), ...source });
        continue;
      }
      const decision = decide(await readEvent(m, (key) => seen.has(key), options.otherJobs, options.storeRequests));
      if (decision.state === 'pending') seen.add(m.rowKey);
      rows.push({ rowNumber: m.rowNumber, rowKey: m.rowKey, agentEmail: m.agentEmail, ...decision, ...source });
      readRows.push(m);
    }
    const last = items.at(-1);
    if (last !== undefined) {
      this.#rowsRead = Math.max(this.#rowsRead, last.rowNumber);
      this.#lastOffset = last.offset;
    }
    const end = open.next === undefined
      ? { rowNumber: frontier.rowNumber + items.length, offset: open.reader.bytesRead, line: (last?.line ?? frontier.line) + 1 }
      : { rowNumber: open.next.rowNumber, offset: open.next.offset, line: open.next.line };
    const eof = open.next === undefined && !this.stoppedByLimit;
    if (eof) this.#totalRows = frontier.rowNumber + items.length - 1;
    return { rows, end, eof, readRows };
  }

  /** Reads a claimed chunk's rows again from this worker's file (a chunk another worker read first). */
  async #readClaimed(chunk: ClaimedChunk): Promise<MappedRow[]> {
    const open = await this.#readerAt(chunk.start);
    const rows: MappedRow[] = [];
    while (open.next !== undefined && open.next.rowNumber <= chunk.lastRow) {
      const item = open.next;
      if (item.kind === 'record') rows.push(this.options.mapping.mapRow(item.record, item.rowNumber));
      open.next = await this.#advance(open);
    }
    this.#rowsRead = Math.max(this.#rowsRead, chunk.lastRow);
    return rows;
  }

  /** A reader at `at`: the open one when it stands there, else the file opened anew there. */
  async #readerAt(at: ResumePoint): Promise<OpenReader> {
    const open = this.#open;
    if (open !== undefined && open.next !== undefined && open.next.rowNumber === at.rowNumber) return open;
    await open?.reader.close();
    const reader = await openInput(this.options.inputPath, { ...this.options.inputOptions, ...(at.rowNumber <= 1 ? {} : { start: at }) });
    const items = reader[Symbol.asyncIterator]();
    const fresh: OpenReader = { reader, items, next: undefined };
    fresh.next = await this.#advance(fresh);
    this.#open = fresh;
    return fresh;
  }

  async #advance(open: OpenReader): Promise<InputItem | undefined> {
    const step = await open.items.next();
    this.#bytesRead = open.reader.bytesRead;
    return step.done === true ? undefined : step.value;
  }

  /** Every row of a chunk this worker was given settled: the chunk is done. */
  #chunkSettled(chunk: ClaimedChunk): void {
    void this.options.ledger.finishChunk(chunk.jobId, chunk.chunkNo, chunk.claimId).catch(() => {
      // Not recorded done: a later claim finds its rows settled and gives none again.
    });
  }

  progress(): IntakeProgress {
    return {
      rowsRead: this.#rowsRead, rowsSkipped: this.#rowsSkipped, bytesRead: this.#bytesRead, lastOffset: this.#lastOffset,
      totalBytes: this.#open?.reader.totalBytes ?? 0, totalRows: this.#totalRows,
    };
  }

  async finish(): Promise<void> {
    await this.book.flush();
  }

  salvage(): void {
    void this.book.flush().catch(() => {});
  }

  start(_onError: (error: unknown) => void, halt: (reason: string) => void): void {
    this.#halt = halt;
    const { leaseMs } = this.options;
    this.#renewedAt = performance.now();
    this.#timer = setInterval(() => {
      const asked = performance.now();
      this.options.ledger.renewLease(this.options.runId, leaseMs).then(({ renewed }) => {
        if (renewed) {
          this.#renewedAt = asked;
          return;
        }
        this.#lost('its lease was taken over (the other workers found it dead: frozen, or cut off from the ledger, past its lease)');
      }, () => {
        // The ledger did not answer: go on while the lease certainly runs, stop sending before it ends.
        const since = performance.now() - this.#renewedAt;
        if (since > (leaseMs * 2) / 3) this.#lost(`the ledger has not answered for ${Math.round(since / 1000)} s: this worker stopped sending before its lease (${Math.round(leaseMs / 1000)} s) ran out`);
      });
    }, Math.max(50, Math.floor(leaseMs / 3)));
    this.#timer.unref();
  }

  #lost(reason: string): void {
    this.book.leaseLost();
    this.#halt?.(`this worker lost its claim on the job: ${reason}; run again to go on`);
  }

  close(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    void this.#open?.reader.close();
  }
}
