/**
 * One run of a job: takes the rows to send from its intake (read, mapped and recorded there), sends
 * them through the dispatcher to the partner client, and records every outcome (README, "Outcomes,
 * resume and the ledger"). It stops sending on the user's stop (Ctrl-C, SIGTERM, `--max-runtime`)
 * and when the client halts (a key or endpoint the partner refuses, a `Retry-After` too long, an
 * outage past `--max-outage`).
 */
import type { StoreRequests } from '../config/index.js';
import { countUnfinished, type JobRecord, type RowState, type RunLedger } from '../ledger/index.js';
import type { Logger } from '../log.js';
import type { CompiledMapping, MappedRow } from '../mapping/index.js';
import type { HaltKind, PartnerClient, SendDecision } from '../partner/index.js';
import type { AttemptRecord, Environment, Operation } from '../partner/types.js';
import { AgentResolver } from './agents.js';
import { Dispatcher } from './dispatcher.js';
import type { Intake } from './intake.js';
import { serializeRequest } from './mask.js';
import type { OtherJobs } from './other-jobs.js';
import type { RowWriter } from './row-book.js';
import { decide, serializeForSend, type RowDecision } from './row-state.js';

/** Row tasks per request allowed in flight (see the dispatcher). */
const TASKS_PER_SLOT = 4;

export interface JobRunnerOptions {
  mapping: CompiledMapping;
  ledger: RunLedger;
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
  readonly book: RowWriter;
  readonly #agents: AgentResolver;
  /** Aborted on a halt or the user's stop: no new request leaves. */
  readonly #halt = new AbortController();
  #haltReason: string | null = null;
  /** The client's kind of halt when the client halted the run (null for a stop of ours). */
  #haltKind: HaltKind | null = null;
  readonly #startedAt = Date.now();
  /** A ledger that failed under a timer (heartbeat, checkpoint, lease): the run ends with it. */
  #timerError: { error: unknown } | undefined;

  constructor(
    private readonly options: JobRunnerOptions,
    private readonly intake: Intake,
    private readonly otherJobs: OtherJobs,
    private readonly job: JobRecord,
    private readonly runId: number,
    private readonly client: PartnerClient,
  ) {
    this.book = intake.book;
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

  get rowsSkipped(): number {
    return this.intake.progress().rowsSkipped;
  }

  get stoppedByLimit(): boolean {
    return this.intake.stoppedByLimit;
  }

  /** Stops the run with an error a timer met (the ledger failing under a heartbeat, a checkpoint or a lease). */
  private readonly failFromTimer = (error: unknown): void => {
    this.#timerError ??= { error };
    this.#stopAll('internal error');
  };

  async run(): Promise<{ end: RunEnd; haltReason: string | null; haltKind: HaltKind | null; rowsRead: number }> {
    const { options, intake } = this;
    const onStop = (): void => this.#stopAll(typeof options.stop.reason === 'string' ? options.stop.reason : 'interrupted by the user');
    if (options.stop.aborted) onStop();
    options.stop.addEventListener('abort', onStop, { once: true });

    // More row tasks than requests in flight: a row waiting out a back-off or a Retry-After holds a
    // task, not a slot of the client's limiter, which alone bounds the requests in flight.
    // No queue beyond the tasks: the tasks waiting for a slot are buffer enough, and a row read
    // far ahead lives through young-generation GCs, each of which copies it (then promotes it).
    const dispatcher = new Dispatcher({ concurrency: options.concurrency * TASKS_PER_SLOT, readAhead: 1 });
    intake.start(this.failFromTimer, (reason) => this.#stopAll(reason));
    try {
      for await (const row of intake.rows(this.#halt.signal)) {
        await dispatcher.ready();
        dispatcher.submit(() => this.#sendRow(row.mapped, row.sentFrom));
      }
      await dispatcher.drain();
      if (this.#timerError !== undefined) throw this.#timerError.error;
      await intake.finish();
    } catch (error) {
      this.#stopAll('internal error');
      await dispatcher.settle();
      intake.salvage();
      throw error;
    } finally {
      intake.close();
      options.stop.removeEventListener('abort', onStop);
    }

    const { rowsRead } = intake.progress();
    if (this.#haltReason !== null) {
      return { end: options.stop.aborted ? 'interrupted' : 'halted', haltReason: this.#haltReason, haltKind: this.#haltKind, rowsRead };
    }
    const unfinished = countUnfinished(this.book.counts) > 0;
    return { end: intake.readToEnd && !unfinished ? 'completed' : 'unfinished', haltReason: null, haltKind: null, rowsRead };
  }

  snapshot(): ProgressSnapshot {
    const progress = this.intake.progress();
    return {
      jobId: this.job.id,
      counts: { ...this.book.counts },
      rowsRead: progress.rowsRead,
      rowsDoneThisRun: this.book.rowsDone,
      rowsSkipped: progress.rowsSkipped,
      bytesRead: progress.bytesRead,
      lastOffset: progress.lastOffset,
      totalBytes: progress.totalBytes,
      totalRows: progress.totalRows,
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

  async #sendRow(mapped: MappedRow, initial: RowState): Promise<void> {
    const { book, options } = this;
    const { rowNumber, request } = mapped;
    // The row's state as this run last wrote it; `initial` is the state its send began in.
    let state = initial;
    // Attempts already written (each refused one, when its retry began).
    let recorded = 0;
    const settle = async (change: RowDecision, attempts: readonly AttemptRecord[] = []): Promise<void> => {
      const committed = book.write({ kind: 'outcome', rowNumber, from: state, change, attempts });
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
    const requestHash = this.otherJobs.requestHash(payload.json);
    const rejected = await this.otherJobs.rejectedBefore(mapped, requestHash);
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
        const lookup = this.otherJobs.lookupWhenMarked(mapped);
        const { sent, lost } = await book.write({ kind: 'mark', rowNumber, from: state, agentId, requestJson, requestSha256: requestHash, lookup }, true);
        // Not this worker's row any more (its claim was taken over): the request does not leave.
        if (lost === true) return 'withdraw';
        if (sent !== undefined) this.otherJobs.foundWhenMarked(mapped, sent);
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
        const written = book.write({ kind: 'put_back', rowNumber, from: state, change: putBack, attempts: [attempt] });
        book.putBack(state, putBack.state);
        state = putBack.state;
        await written;
      },
    });
    const outcome = await submitting;
    this.#checkClient();
    const unrecorded = outcome.attempts.slice(recorded);
    if (state !== 'in_flight') {
      // Never left (withdrawn, or stopped or halted while waiting): the row stays as it is; keep any attempts.
      if (unrecorded.length > 0) await book.recordAttempts(rowNumber, unrecorded);
      return;
    }
    if (unrecorded.length === 0) {
      // Marked, then stopped before the request left (a halt while its mark was committed): as it was.
      const committed = book.write({ kind: 'put_back', rowNumber, from: state, change: putBack, attempts: [] });
      book.transition(state, putBack.state, rowNumber);
      await committed;
      return;
    }
    await settle(decide({ type: 'answer', outcome, agentId, sentFrom: initial }), unrecorded);
  }
}
