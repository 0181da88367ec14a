/**
 * One run of a job: reads the input, records each row, and sends the rows that need sending through
 * the dispatcher to the partner client, recording every outcome (README, "Outcomes, resume and the ledger"). It stops sending on
 * the user's stop (Ctrl-C, SIGTERM, `--max-runtime`) and when the client halts (a key or endpoint
 * the partner refuses, a `Retry-After` too long, an outage past `--max-outage`).
 */
import type { StoreRequests } from '../config/index.js';
import type { InputReader } from '../input/index.js';
import { countUnfinished, FINAL_STATES, type JobRecord, type Ledger, type ResumePoint, type RowState } from '../ledger/index.js';
import type { Logger } from '../log.js';
import { formatRowIssue, type CompiledMapping, type MappedRow } from '../mapping/index.js';
import type { HaltKind, PartnerClient, SendDecision } from '../partner/index.js';
import type { AttemptRecord, Environment, Operation } from '../partner/types.js';
import { AgentResolver } from './agents.js';
import { Dispatcher } from './dispatcher.js';
import { maskIssue, serializeRequest } from './mask.js';
import { OtherJobs } from './other-jobs.js';
import { RowBook } from './row-book.js';
import { decide, sendsAgain, serializeForSend, type RowDecision } from './row-state.js';

/** Row tasks per request allowed in flight (see the dispatcher). */
const TASKS_PER_SLOT = 4;

export interface JobRunnerOptions {
  mapping: CompiledMapping;
  ledger: Ledger;
  environment: Environment;
  operation: Operation;
  concurrency: number;
  limit?: number | undefined;
  retryFailed: boolean;
  resendInDoubt: boolean;
  /**
   * `--resend-sent`: send a row even when another job of this environment and operation sent its
   * lead, or had its very request rejected (see `other-jobs.ts`).
   */
  resendSent?: boolean;
  storeRequests: StoreRequests;
  stop: AbortSignal;
  logger: Logger;
}

export interface ProgressSnapshot {
  jobId: number;
  counts: Record<RowState, number>;
  rowsRead: number;
  /** Rows handled by this run (sent or recorded), excluding skipped ones. */
  rowsDoneThisRun: number;
  /** Rows skipped because an earlier run finished them. */
  rowsSkipped: number;
  bytesRead: number;
  /** Decoded byte offset of the last record read (for estimating the row total). */
  lastOffset: number;
  totalBytes: number;
  /** Known once a run has read the whole file; an estimate is made from the bytes read before. */
  totalRows: number | null;
  /** `--limit`: the run handles at most the first this many rows of the file. */
  limit?: number | null;
  elapsedMs: number;
}

export type RunEnd = 'completed' | 'unfinished' | 'interrupted' | 'halted';

export class JobRunner {
  readonly book: RowBook;
  readonly #agents: AgentResolver;
  /** Aborted on a halt or the user's stop: no new request leaves. */
  readonly #halt = new AbortController();
  #haltReason: string | null = null;
  /** The client's kind of halt when the client halted the run (null for a stop of ours). */
  #haltKind: HaltKind | null = null;
  rowsSkipped: number;
  stoppedByLimit = false;
  readonly #otherJobs: OtherJobs;
  #rowsRead: number;
  #lastRead: ResumePoint | undefined;
  #totalRows: number | null;
  readonly #startedAt = Date.now();

  constructor(
    private readonly options: JobRunnerOptions,
    private readonly reader: InputReader,
    private readonly job: JobRecord,
    private readonly runId: number,
    private readonly client: PartnerClient,
    start: ResumePoint | undefined,
  ) {
    this.#rowsRead = start === undefined ? 0 : start.rowNumber - 1;
    this.rowsSkipped = this.#rowsRead;
    this.#totalRows = job.total_rows;
    this.book = new RowBook(options.ledger, job.id, runId, start);
    this.#otherJobs = new OtherJobs(options.ledger, job.id, options.environment, options.operation, options.resendSent === true, options.logger);
    const warnedAgents = new Set<string>();
    this.#agents = new AgentResolver(client, options.ledger, options.environment, job.id, runId, { signal: this.#halt.signal }, (email) => {
      if (warnedAgents.has(email)) return;
      warnedAgents.add(email);
      options.logger.warn('an agent is valid but the partner gave no agent id: its rows are sent without channel.agent_id', { event: 'agent_without_id' });
    });
  }

  get agentCalls(): number {
    return this.#agents.calls;
  }

  get haltReason(): string | null {
    return this.#haltReason;
  }

  async run(): Promise<{ end: RunEnd; haltReason: string | null; haltKind: HaltKind | null; rowsRead: number }> {
    const { options, book } = this;
    const onStop = (): void => this.#stopAll(typeof options.stop.reason === 'string' ? options.stop.reason : 'interrupted by the user');
    if (options.stop.aborted) onStop();
    options.stop.addEventListener('abort', onStop, { once: true });
    // A ledger that fails under a timer must stop the run as an internal error, not crash it.
    let timerError: { error: unknown } | undefined;
    const guarded = (work: () => void) => (): void => {
      try {
        work();
      } catch (error) {
        timerError ??= { error };
        this.#stopAll('internal error');
      }
    };
    const heartbeat = setInterval(guarded(() => options.ledger.heartbeat(this.runId)), 10_000);
    const checkpoint = setInterval(guarded(() => book.saveResumePoint(this.#lastRead)), 2_000);
    checkpoint.unref();
    heartbeat.unref();

    // More row tasks than requests in flight: a row waiting out a back-off or a Retry-After holds a
    // task, not a slot of the client's limiter, which alone bounds the requests in flight.
    // No queue beyond the tasks: the tasks waiting for a slot are buffer enough, and a row read
    // far ahead lives through young-generation GCs, each of which copies it (then promotes it).
    const dispatcher = new Dispatcher({ concurrency: options.concurrency * TASKS_PER_SLOT, readAhead: 1 });
    let readToEnd = true;
    try {
      for await (const item of this.reader) {
        if (this.#halt.signal.aborted) {
          readToEnd = false;
          break;
        }
        if (options.limit !== undefined && item.rowNumber > options.limit) {
          readToEnd = false;
          this.stoppedByLimit = true;
          break;
        }
        this.#rowsRead = item.rowNumber;
        const position = { rowNumber: item.rowNumber, offset: item.offset, line: item.line };
        this.#lastRead = position;
        const previous = book.stateOf(item.rowNumber);
        if (previous !== undefined && !sendsAgain(previous, options)) {
          this.rowsSkipped += 1;
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
        const initial = previous ?? this.#recordNewRow(mapped, source);
        if (initial !== 'pending' && previous === undefined) continue;
        await dispatcher.ready();
        dispatcher.submit(() => this.#sendRow(mapped, initial));
      }
      book.flushInserts();
      // A reader stopped by its signal (the user's stop) ends as if the file ended: that is not the
      // end of the file. A halt of the client does not stop the reader: the loop breaks at the next
      // row, so a loop that ended without a break while halted did read the last row.
      if (options.stop.aborted) readToEnd = false;
      if (readToEnd) {
        options.ledger.setTotalRows(this.job.id, this.#rowsRead);
        this.#totalRows = this.#rowsRead;
      }
      await dispatcher.drain();
      if (timerError !== undefined) throw timerError.error;
      book.saveResumePoint(this.#lastRead);
    } catch (error) {
      this.#stopAll('internal error');
      await dispatcher.settle();
      // The answers already in are recorded first; a ledger that fails again (busy, full) fails the
      // rows not sent yet only, and the error being thrown says why.
      book.commitWrites();
      try {
        book.flushInserts();
      } catch {
        // Those rows were not recorded: the next run reads them again.
      }
      throw error;
    } finally {
      clearInterval(heartbeat);
      clearInterval(checkpoint);
      options.stop.removeEventListener('abort', onStop);
    }

    if (this.#haltReason !== null) {
      return { end: options.stop.aborted ? 'interrupted' : 'halted', haltReason: this.#haltReason, haltKind: this.#haltKind, rowsRead: this.#rowsRead };
    }
    const unfinished = countUnfinished(book.counts) > 0;
    return { end: readToEnd && !unfinished ? 'completed' : 'unfinished', haltReason: null, haltKind: null, rowsRead: this.#rowsRead };
  }

  snapshot(): ProgressSnapshot {
    return {
      jobId: this.job.id,
      counts: { ...this.book.counts },
      rowsRead: this.#rowsRead,
      rowsDoneThisRun: this.book.rowsDone,
      rowsSkipped: this.rowsSkipped,
      bytesRead: this.reader.bytesRead,
      lastOffset: this.#lastRead?.offset ?? 0,
      totalBytes: this.reader.totalBytes,
      totalRows: this.#totalRows,
      limit: this.options.limit ?? null,
      elapsedMs: Date.now() - this.#startedAt,
    };
  }

  #stopAll(reason: string, kind: HaltKind | null = null): void {
    if (this.#haltReason === null) {
      this.#haltReason = reason;
      this.#haltKind = kind;
    }
    this.#halt.abort();
  }

  /** After a call: a client that halted stops the whole run. */
  #checkClient(): void {
    if (this.client.halted) this.#stopAll(this.client.haltReason ?? 'the partner client halted', this.client.haltKind);
  }

  /** Records a newly read row; returns the state it was given. */
  #recordNewRow(mapped: MappedRow, source: { sourceOffset: number; sourceLine: number }): RowState {
    const decision = decide(this.#readEvent(mapped));
    this.book.record(undefined, { rowNumber: mapped.rowNumber, rowKey: mapped.rowKey, agentEmail: mapped.agentEmail, ...decision, ...source });
    return decision.state;
  }

  /** What reading a row found: its problems, its key seen before, its lead sent by another job, or nothing. */
  #readEvent(mapped: MappedRow): Parameters<typeof decide>[0] {
    if (mapped.errors.length > 0) {
      const keep = this.options.storeRequests === 'full';
      return { type: 'mapping_problems', message: mapped.errors.map((issue) => formatRowIssue(mapped.rowNumber, keep ? issue : maskIssue(issue))).join('; ') };
    }
    if (this.book.hasRowKey(mapped.rowKey)) return { type: 'repeated_key', rowKey: mapped.rowKey };
    const sent = this.#otherJobs.sentWhenRead(mapped);
    if (sent !== undefined) return { type: 'sent_by_other_job', rowKey: mapped.rowKey, sent };
    return { type: 'read' };
  }

  async #sendRow(mapped: MappedRow, initial: RowState): Promise<void> {
    const { book, options } = this;
    const { ledger } = options;
    const jobId = this.job.id;
    const { rowNumber, request } = mapped;
    // The row's state as this run last wrote it; `initial` is the state its send began in.
    let state = initial;
    // Attempts already written (each refused one, when its retry began).
    let recorded = 0;
    const settle = async (change: RowDecision, attempts: readonly AttemptRecord[] = []): Promise<void> => {
      const committed = book.write({ kind: 'outcome', rowNumber, change, attempts });
      book.transition(state, change.state, rowNumber);
      state = change.state;
      await committed;
    };
    if (this.#halt.signal.aborted) return;

    let agentId: string | null = null;
    if (mapped.agentEmail !== null) {
      const agent = await this.#agents.resolve(mapped.agentEmail, rowNumber);
      this.#checkClient();
      // Halted or stopped before validation was decided: the row stays as it was.
      if (agent.kind === 'halted' || agent.kind === 'stopped') return;
      if (agent.kind !== 'valid') {
        await settle(decide({ type: 'agent', verdict: agent }));
        return;
      }
      agentId = agent.agentId ?? null;
      if (agentId !== null) options.mapping.setAgentId(request, agentId);
    }
    if (this.#halt.signal.aborted) return;

    const payload = serializeForSend(request);
    if ('problem' in payload) {
      await settle(decide({ type: 'unsendable', rowNumber, code: payload.code, problem: payload.problem }));
      return;
    }
    const requestHash = this.#otherJobs.requestHash(payload.json);
    const rejected = this.#otherJobs.rejectedBefore(mapped, requestHash);
    if (rejected !== undefined) {
      await settle(decide({ type: 'rejected_by_other_job', rejected }));
      return;
    }
    const requestJson = serializeRequest(request, options.storeRequests);
    const putBack = decide({ type: 'put_back', sentFrom: initial });
    const submitting = this.client.submitJson(options.operation, payload.json, {
      signal: this.#halt.signal,
      beforeSend: async (): Promise<SendDecision> => {
        if (state === 'in_flight') return 'send';
        // Looked up again in the mark's transaction: a job running beside this one may have sent the lead since.
        const lookup = this.#otherJobs.lookupWhenMarked(mapped);
        const { sent } = await book.write({ kind: 'mark', rowNumber, agentId, requestJson, requestSha256: requestHash, lookup }, true);
        if (sent !== undefined) this.#otherJobs.foundWhenMarked(mapped, sent);
        const decision = sent === undefined ? decide({ type: 'marked' }) : decide({ type: 'sent_by_other_job', rowKey: mapped.rowKey, sent });
        book.transition(state, decision.state, rowNumber);
        state = decision.state;
        return state === 'in_flight' ? 'send' : 'withdraw';
      },
      // The partner refused the request (or it never left), and it will be sent again: until then
      // the row is as it was before, with the attempt recorded. A run killed during the wait then
      // sends it again instead of leaving it in doubt; the next attempt marks it in flight anew.
      beforeRetry: async (attempt) => {
        if (state !== 'in_flight') return;
        recorded += 1;
        book.putBack(state, putBack.state);
        state = putBack.state;
        await book.write({ kind: 'put_back', rowNumber, change: putBack, attempts: [attempt] });
      },
    });
    const outcome = await submitting;
    this.#checkClient();
    const unrecorded = outcome.attempts.slice(recorded);
    if (state !== 'in_flight') {
      // Never left (withdrawn, or stopped or halted while waiting): the row stays as it is; keep any attempts.
      if (unrecorded.length > 0) ledger.recordAttempts(jobId, this.runId, rowNumber, unrecorded, null);
      return;
    }
    if (unrecorded.length === 0) {
      // Marked, then stopped before the request left (a halt while its mark was committed): as it was.
      const committed = book.write({ kind: 'put_back', rowNumber, change: putBack, attempts: [] });
      book.transition(state, putBack.state, rowNumber);
      await committed;
      return;
    }
    await settle(decide({ type: 'answer', outcome, agentId, sentFrom: initial }), unrecorded);
  }
}
