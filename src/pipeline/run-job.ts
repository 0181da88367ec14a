/**
 * The main job: read → map → validate → agent → send → record, streaming with backpressure.
 *
 * Durability rules (contract §5): a row is recorded as `pending` (or `invalid`/`duplicate`)
 * when read, marked `in_flight` in its own committed statement right before its request leaves,
 * and given its outcome when the answer (or the lack of one) is known. A process that dies
 * leaves `in_flight` rows, which the next run turns into `in_doubt` and does not resend blindly.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import pLimit from 'p-limit';
import type { StoreRequests } from '../config/index.js';
import { openInput, type InputReader } from '../input/index.js';
import { FINAL_STATES, ROW_STATES, type JobRecord, type Ledger, type NewRow, type ResumePoint, type RowState } from '../ledger/index.js';
import type { Logger } from '../log.js';
import { formatRowIssue, resolveInputOptions, type CompiledMapping, type MappedRow } from '../mapping/index.js';
import type { PartnerClient } from '../partner/index.js';
import type { QuoteSuccessResponse } from '../partner/schemas.js';
import type { CallOutcome, Environment, Operation } from '../partner/types.js';
import { TOOL_VERSION } from '../version.js';
import { AgentResolver } from './agents.js';
import { maskIssue, serializeRequest } from './mask.js';

export interface PartnerTarget {
  client: PartnerClient;
  baseUrl: string;
  close(): Promise<void>;
}

export interface RunJobOptions {
  inputPath: string;
  mapping: CompiledMapping;
  ledger: Ledger;
  environment: Environment;
  operation: Operation;
  /** Opens the partner connection; called only when there is something to send. */
  connect: () => Promise<PartnerTarget>;
  concurrency: number;
  /** Process at most this many data rows of the file (the first N). */
  limit?: number | undefined;
  fresh: boolean;
  retryFailed: boolean;
  resendInDoubt: boolean;
  storeRequests: StoreRequests;
  /** Recorded in `runs.options_json` (no secret in it). */
  options: Record<string, unknown>;
  stop: AbortSignal;
  logger: Logger;
  onProgress?: (snapshot: ProgressSnapshot) => void;
  /** How often `onProgress` fires, in ms. */
  progressIntervalMs?: number;
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
  totalRows: number | null;
  elapsedMs: number;
}

export type RunEnd = 'completed' | 'unfinished' | 'interrupted' | 'halted';

export interface RunJobResult {
  job: JobRecord;
  runId: number | null;
  /** True when the job was already completed and nothing was run. */
  alreadyCompleted: boolean;
  resumed: boolean;
  end: RunEnd;
  haltReason: string | null;
  counts: Record<RowState, number>;
  newlyInDoubt: number;
  agentCalls: number;
  rowsSkipped: number;
  /** The --limit that stopped this run before the end of the file, if any. */
  limitedTo: number | null;
  durationMs: number;
  exitCode: 0 | 1 | 3;
}

const DATA_PROBLEM_STATES: readonly RowState[] = ['invalid', 'rejected', 'agent_invalid'];
const UNFINISHED_STATES: readonly RowState[] = ['pending', 'in_flight', 'failed', 'in_doubt'];
/** Rows read ahead of the senders: bounds memory whatever the file size. */
const READ_AHEAD_FACTOR = 4;
const INSERT_BATCH = 512;
const CIRCUIT_OPEN = 'circuit breaker open: too many consecutive transient failures (the partner looks down)';

export async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Opens the input and checks the mapping's columns against its header, then closes it. */
export async function checkInputHeader(inputPath: string, mapping: CompiledMapping): Promise<void> {
  const reader = await openInput(inputPath, resolveInputOptions(inputPath, mapping));
  try {
    if (reader.columns !== null) mapping.checkColumns(reader.columns);
  } finally {
    await reader.close();
  }
}

export function exitCodeFor(end: RunEnd, counts: Record<RowState, number>): 0 | 1 | 3 {
  if (end !== 'completed') return 3;
  return DATA_PROBLEM_STATES.some((s) => counts[s] > 0) ? 1 : 0;
}

export async function runJob(options: RunJobOptions): Promise<RunJobResult> {
  const started = Date.now();
  const { ledger, mapping, logger } = options;
  let reader = await openInput(options.inputPath, resolveInputOptions(options.inputPath, mapping));
  try {
    if (reader.columns !== null) mapping.checkColumns(reader.columns);
    const identity = {
      inputSha256: await sha256File(options.inputPath),
      mappingSha256: mapping.sha256,
      environment: options.environment,
      operation: options.operation,
    };

    if (!options.fresh) {
      const done = ledger.findJob(identity, 'completed');
      if (done !== undefined && ledger.findJob(identity, 'unfinished') === undefined) {
        const counts = ledger.countsByState(done.id);
        logger.info(`job ${done.id} already completed on ${done.finished_at ?? '?'}: nothing to send (use --fresh to run it again)`);
        return {
          job: done, runId: null, alreadyCompleted: true, resumed: false, end: 'completed', haltReason: null,
          counts, newlyInDoubt: 0, agentCalls: 0, rowsSkipped: 0, limitedTo: null, durationMs: Date.now() - started,
          exitCode: exitCodeFor('completed', counts),
        };
      }
    }

    let job = options.fresh ? undefined : ledger.findJob(identity, 'unfinished');
    const resumed = job !== undefined;
    const target = await options.connect();
    try {
      job ??= ledger.createJob({
        input_path: options.inputPath,
        input_sha256: identity.inputSha256,
        input_format: reader.format,
        mapping_path: mapping.path,
        mapping_sha256: mapping.sha256,
        environment: options.environment,
        operation: options.operation,
        base_url: target.baseUrl,
      });
      const { run, crashedRuns, newlyInDoubt } = ledger.startRun(job.id, JSON.stringify(options.options), TOOL_VERSION);
      if (resumed) {
        logger.info(`resuming job ${job.id} (run ${run.id})`, { job: job.id, run: run.id });
      } else {
        logger.info(`started job ${job.id} (run ${run.id})`, { job: job.id, run: run.id });
      }
      if (crashedRuns > 0) logger.warn(`${crashedRuns} earlier run(s) of job ${job.id} ended without recording it (crash or kill)`);
      const inDoubtNow = ledger.countsByState(job.id).in_doubt;
      if (inDoubtNow > 0) {
        logger.warn(
          options.resendInDoubt
            ? `${inDoubtNow} row(s) in doubt will be sent again (--resend-in-doubt)`
            : `${inDoubtNow} row(s) are in doubt (they may have reached the partner): not resent; list them with \`quote-batch export --status in_doubt\`, resend with --resend-in-doubt`,
        );
      }
      const { reader: jobReader, start } = await openFromResumePoint(options, reader, ledger.resumePoint(job), logger);
      reader = jobReader;
      const runner = new JobRunner(options, reader, job, run.id, target.client, start);
      let outcome: Awaited<ReturnType<JobRunner['run']>>;
      try {
        outcome = await runner.run();
      } catch (error) {
        // Record how the run ended; its rows are settled by the next run's resume rules.
        ledger.finishRun(run.id, 'failed');
        ledger.setJobStatus(job.id, 'interrupted');
        throw error;
      }
      const counts = ledger.countsByState(job.id);
      // The run itself ended normally unless stopped or halted; the job is completed only when
      // every row reached a final state.
      ledger.finishRun(run.id, outcome.end === 'completed' || outcome.end === 'unfinished' ? 'completed' : outcome.end);
      ledger.setJobStatus(job.id, outcome.end === 'completed' ? 'completed' : 'interrupted');
      return {
        job: ledger.getJob(job.id) as JobRecord,
        runId: run.id,
        alreadyCompleted: false,
        resumed,
        end: outcome.end,
        haltReason: outcome.haltReason,
        counts,
        newlyInDoubt,
        agentCalls: runner.agentCalls,
        rowsSkipped: runner.rowsSkipped,
        limitedTo: runner.stoppedByLimit ? (options.limit ?? null) : null,
        durationMs: Date.now() - started,
        exitCode: exitCodeFor(outcome.end, counts),
      };
    } finally {
      await target.close();
    }
  } finally {
    await reader.close();
  }
}

/**
 * Re-opens the input at the job's resume point, so that a resumed run seeks past the finished
 * prefix instead of parsing it again. Falls back to the start of the file when the point does not
 * fit the file (the rows are then skipped one by one by their recorded states).
 */
async function openFromResumePoint(
  options: RunJobOptions,
  reader: InputReader,
  point: ResumePoint | undefined,
  logger: Logger,
): Promise<{ reader: InputReader; start: ResumePoint | undefined }> {
  if (point === undefined || point.rowNumber <= 1) return { reader, start: undefined };
  try {
    const resumed = await openInput(options.inputPath, { ...resolveInputOptions(options.inputPath, options.mapping), start: point });
    await reader.close();
    logger.info(`skipping rows 1-${point.rowNumber - 1}: already final (reading from line ${point.line})`);
    return { reader: resumed, start: point };
  } catch (error) {
    logger.warn(`cannot resume reading at row ${point.rowNumber} (${(error as Error).message}); reading from the start`);
    return { reader, start: undefined };
  }
}

class JobRunner {
  private readonly ledger: Ledger;
  private readonly jobId: number;
  private readonly counts: Record<RowState, number>;
  private readonly states: Uint8Array;
  private readonly agents: AgentResolver;
  /** Aborted on 403, an open circuit, or the user's stop: no new request leaves. */
  private readonly halt = new AbortController();
  private haltReason: string | null = null;
  private pendingInserts: NewRow[] = [];
  private pendingKeys = new Set<string>();
  /**
   * Ledger writes of row tasks (in_flight marks, outcomes), committed together in one
   * transaction per event-loop turn: with 64 rows in flight, one commit instead of 128.
   * A task awaits the commit of its write before its request leaves, so `in_flight` is still
   * durable first, and at most one row per slot is ever `in_flight`.
   */
  private writeQueue: (() => void)[] = [];
  private writeCommit: Promise<void> | null = null;
  private resolveCommit: (() => void) | null = null;
  private rejectCommit: ((error: unknown) => void) | null = null;
  rowsSkipped: number;
  stoppedByLimit = false;
  private rowsRead: number;
  /**
   * Rows read by this run that are not final yet, in file order, for the resume point: the
   * first of them still open is where the next run must start reading.
   */
  private readonly openRows: ResumePoint[] = [];
  private readonly openSet = new Set<number>();
  private lastRead: ResumePoint | undefined;
  private resumePoint: ResumePoint | undefined;
  private totalRows: number | null;
  private rowsDone = 0;
  private readonly startedAt = Date.now();

  constructor(
    private readonly options: RunJobOptions,
    private readonly reader: InputReader,
    private readonly job: JobRecord,
    private readonly runId: number,
    private readonly client: PartnerClient,
    start: ResumePoint | undefined,
  ) {
    this.rowsRead = start === undefined ? 0 : start.rowNumber - 1;
    this.rowsSkipped = this.rowsRead;
    this.resumePoint = start;
    this.totalRows = job.total_rows;
    this.ledger = options.ledger;
    this.jobId = job.id;
    this.counts = this.ledger.countsByState(job.id);
    this.states = this.ledger.rowStates(job.id);
    this.agents = new AgentResolver(client, this.ledger, options.environment, job.id, runId, { signal: this.halt.signal });
  }

  get agentCalls(): number {
    return this.agents.calls;
  }

  async run(): Promise<{ end: RunEnd; haltReason: string | null }> {
    const { options } = this;
    const onStop = (): void => this.stopAll('interrupted by the user');
    if (options.stop.aborted) onStop();
    options.stop.addEventListener('abort', onStop, { once: true });
    const heartbeat = setInterval(() => this.ledger.heartbeat(this.runId), 10_000);
    const checkpoint = setInterval(() => this.saveResumePoint(), 2_000);
    checkpoint.unref();
    heartbeat.unref();
    const progress = options.onProgress === undefined
      ? undefined
      : setInterval(() => options.onProgress?.(this.snapshot()), options.progressIntervalMs ?? 1000);
    progress?.unref();

    const limit = pLimit(options.concurrency);
    const inFlight = new Set<Promise<void>>();
    let readToEnd = false;
    try {
      readToEnd = true;
      for await (const item of this.reader) {
        if (this.halt.signal.aborted) {
          readToEnd = false;
          break;
        }
        if (options.limit !== undefined && item.rowNumber > options.limit) {
          readToEnd = false;
          this.stoppedByLimit = true;
          break;
        }
        this.rowsRead = item.rowNumber;
        const position = { rowNumber: item.rowNumber, offset: item.offset, line: item.line };
        this.lastRead = position;
        const previous = this.stateOf(item.rowNumber);
        if (previous !== undefined && !this.shouldSend(previous)) {
          this.rowsSkipped += 1;
          if (!FINAL_STATES.has(previous)) this.holdResumePoint(position);
          continue;
        }
        this.holdResumePoint(position);
        if (item.kind === 'error') {
          this.record(item.rowNumber, previous, { rowNumber: item.rowNumber, rowKey: null, agentEmail: null, state: 'invalid', errorCode: 'unreadable_row', errorMessage: item.message });
          continue;
        }
        const mapped = options.mapping.mapRow(item.record, item.rowNumber);
        const initial = previous ?? this.classifyNewRow(mapped);
        if (initial !== 'pending' && previous === undefined) continue;
        // Backpressure: wait while enough rows are queued for the senders.
        while (inFlight.size >= options.concurrency * READ_AHEAD_FACTOR) await Promise.race(inFlight);
        const task = limit(() => this.sendRow(mapped, initial));
        inFlight.add(task);
        void task.finally(() => inFlight.delete(task));
      }
      this.flushInserts();
      if (readToEnd) {
        this.ledger.setTotalRows(this.jobId, this.rowsRead);
        this.totalRows = this.rowsRead;
      }
      await Promise.all(inFlight);
      this.saveResumePoint();
    } catch (error) {
      this.stopAll('internal error');
      await Promise.allSettled(inFlight);
      this.flushInserts();
      throw error;
    } finally {
      clearInterval(heartbeat);
      clearInterval(checkpoint);
      if (progress !== undefined) clearInterval(progress);
      options.stop.removeEventListener('abort', onStop);
      options.onProgress?.(this.snapshot());
    }

    if (this.haltReason !== null) {
      return { end: options.stop.aborted ? 'interrupted' : 'halted', haltReason: this.haltReason };
    }
    const unfinished = UNFINISHED_STATES.some((s) => this.counts[s] > 0);
    return { end: readToEnd && !unfinished ? 'completed' : 'unfinished', haltReason: null };
  }

  snapshot(): ProgressSnapshot {
    return {
      jobId: this.jobId,
      counts: { ...this.counts },
      rowsRead: this.rowsRead,
      rowsDoneThisRun: this.rowsDone,
      rowsSkipped: this.rowsSkipped,
      bytesRead: this.reader.bytesRead,
      lastOffset: this.lastRead?.offset ?? 0,
      totalBytes: this.reader.totalBytes,
      totalRows: this.totalRows,
      elapsedMs: Date.now() - this.startedAt,
    };
  }

  private stopAll(reason: string): void {
    if (this.haltReason === null) this.haltReason = reason;
    this.halt.abort();
  }

  private stateOf(rowNumber: number): RowState | undefined {
    const code = this.states[rowNumber] ?? 0;
    return code === 0 ? undefined : ROW_STATES[code - 1];
  }

  private shouldSend(state: RowState): boolean {
    if (FINAL_STATES.has(state)) return false;
    if (state === 'failed') return this.options.retryFailed;
    if (state === 'in_doubt') return this.options.resendInDoubt;
    return true; // pending (in_flight was turned into in_doubt when the run started)
  }

  /** Records a newly read row; returns the state it was given. */
  private classifyNewRow(mapped: MappedRow): RowState {
    const base = { rowNumber: mapped.rowNumber, rowKey: mapped.rowKey, agentEmail: mapped.agentEmail };
    if (mapped.errors.length > 0) {
      const keep = this.options.storeRequests === 'full';
      const message = mapped.errors.map((issue) => formatRowIssue(mapped.rowNumber, keep ? issue : maskIssue(issue))).join('; ');
      this.record(mapped.rowNumber, undefined, { ...base, state: 'invalid', errorCode: 'mapping_error', errorMessage: message });
      return 'invalid';
    }
    if (this.pendingKeys.has(mapped.rowKey) || this.ledger.hasRowKey(this.jobId, mapped.rowKey)) {
      this.record(mapped.rowNumber, undefined, {
        ...base, state: 'duplicate', errorCode: 'duplicate_row_key', errorMessage: `row key "${mapped.rowKey}" already appeared earlier in this job`,
      });
      return 'duplicate';
    }
    this.pendingKeys.add(mapped.rowKey);
    this.record(mapped.rowNumber, undefined, { ...base, state: 'pending' });
    return 'pending';
  }

  private record(rowNumber: number, previous: RowState | undefined, row: NewRow): void {
    if (previous !== undefined) {
      // A row recorded earlier that can no longer be read (e.g. a smaller --max-record limit).
      this.ledger.recordOutcome(this.jobId, this.runId, rowNumber, { state: row.state, attempts: 0, errorCode: row.errorCode ?? null, errorMessage: row.errorMessage ?? null }, []);
      this.transition(previous, row.state, rowNumber);
      return;
    }
    this.pendingInserts.push(row);
    this.transition(undefined, row.state, rowNumber);
    if (this.pendingInserts.length >= INSERT_BATCH) this.flushInserts();
  }

  private flushInserts(): void {
    if (this.pendingInserts.length === 0) return;
    this.ledger.insertRows(this.jobId, this.pendingInserts);
    this.pendingInserts = [];
    this.pendingKeys = new Set();
  }

  /** Queues a ledger write; resolves once it is committed. */
  private write(op: () => void): Promise<void> {
    this.writeQueue.push(op);
    if (this.writeCommit === null) {
      this.writeCommit = new Promise<void>((resolve, reject) => {
        this.resolveCommit = resolve;
        this.rejectCommit = reject;
      });
      setImmediate(() => this.commitWrites());
    }
    return this.writeCommit;
  }

  /** Commits every queued write now (also called before the resume point is saved). */
  private commitWrites(): void {
    const ops = this.writeQueue;
    const resolve = this.resolveCommit;
    const reject = this.rejectCommit;
    this.writeQueue = [];
    this.writeCommit = null;
    this.resolveCommit = null;
    this.rejectCommit = null;
    if (ops.length === 0) {
      resolve?.();
      return;
    }
    try {
      this.ledger.db.transaction(() => {
        this.flushInserts(); // rows must exist before they are marked
        for (const op of ops) op();
      })();
      resolve?.();
    } catch (error) {
      reject?.(error);
    }
  }

  private holdResumePoint(position: ResumePoint): void {
    this.openRows.push(position);
    this.openSet.add(position.rowNumber);
  }

  private releaseResumePoint(rowNumber: number): void {
    this.openSet.delete(rowNumber);
  }

  /** Persists how far the file is finished; rows before the point must be durable first. */
  private saveResumePoint(): void {
    let head = 0;
    while (head < this.openRows.length && !this.openSet.has((this.openRows[head] as ResumePoint).rowNumber)) head += 1;
    this.openRows.splice(0, head);
    const point = this.openRows[0] ?? this.lastRead;
    if (point === undefined || (this.resumePoint !== undefined && point.rowNumber <= this.resumePoint.rowNumber)) return;
    // Rows before the point were released when their outcome was queued: make those durable.
    this.commitWrites();
    this.flushInserts();
    this.ledger.setResumePoint(this.jobId, point);
    this.resumePoint = point;
  }

  /** Keeps the in-memory counts (for progress and the end state) in step with the ledger. */
  private transition(from: RowState | undefined, to: RowState, rowNumber?: number): void {
    if (rowNumber !== undefined && FINAL_STATES.has(to)) this.releaseResumePoint(rowNumber);
    if (from !== undefined) this.counts[from] -= 1;
    this.counts[to] += 1;
    if (FINAL_STATES.has(to) || to === 'failed' || to === 'in_doubt') this.rowsDone += 1;
  }

  private async sendRow(mapped: MappedRow, initial: RowState): Promise<void> {
    let current = initial;
    const finish = (row: Parameters<Ledger['recordOutcome']>[3], outcome?: CallOutcome<QuoteSuccessResponse>): Promise<void> => {
      const committed = this.write(() => this.ledger.recordOutcome(this.jobId, this.runId, mapped.rowNumber, row, outcome?.attempts ?? []));
      this.transition(current, row.state, mapped.rowNumber);
      current = row.state;
      return committed;
    };
    if (this.halt.signal.aborted) return;
    const { rowNumber, request } = mapped;
    const { ledger, jobId, runId } = this;
    let agentId: string | null = null;
    if (mapped.agentEmail !== null) {
      const agent = await this.agents.resolve(mapped.agentEmail, rowNumber);
      if (agent.kind === 'forbidden') {
        this.onForbidden(agent.message);
        return;
      }
      if (agent.kind !== 'valid') {
        if (this.client.halted) this.stopAll(CIRCUIT_OPEN);
        // Stopped, or the breaker halted, before validation was sent: nothing was decided.
        if (agent.kind === 'failed' && (agent.errorCode === 'aborted' || agent.errorCode === 'circuit_open')) return;
        const state: RowState = agent.kind === 'invalid' ? 'agent_invalid' : agent.kind === 'bad_request' ? 'invalid' : 'failed';
        await finish({
          state,
          attempts: 0,
          httpStatus: agent.kind === 'invalid' ? 200 : agent.httpStatus,
          errorCode: agent.kind === 'invalid' ? 'agent_invalid' : agent.errorCode,
          errorMessage: agent.message,
        });
        return;
      }
      agentId = agent.agentId;
      this.options.mapping.setAgentId(request, agentId);
    }
    if (this.halt.signal.aborted) return;

    let marked = false;
    const requestJson = serializeRequest(request, this.options.storeRequests);
    const outcome = await this.client.submit(this.options.operation, request, {
      signal: this.halt.signal,
      beforeSend: async () => {
        if (marked) return;
        await this.write(() => ledger.markInFlight(jobId, rowNumber, agentId, requestJson));
        this.transition(current, 'in_flight');
        current = 'in_flight';
        marked = true;
      },
    });
    if (this.client.halted) this.stopAll(CIRCUIT_OPEN);
    const attempts = outcome.attempts;
    if (!marked) {
      // Never left (stopped while waiting): the row stays as it was; keep any attempts for the record.
      if (attempts.length > 0) ledger.recordAttempts(jobId, runId, rowNumber, attempts, null);
      return;
    }
    if (outcome.kind === 'forbidden') {
      this.onForbidden(outcome.message);
      await finish({ state: 'pending', attempts: attempts.length, httpStatus: 403, errorCode: 'forbidden', errorMessage: outcome.message }, outcome);
      return;
    }
    await finish(outcomeToRow(outcome, agentId), outcome);
  }

  private onForbidden(message: string): void {
    if (this.haltReason === null) this.options.logger.error(`the partner answered 403 Forbidden: the API key is not valid for this environment; halting (${message})`);
    this.stopAll('403 Forbidden: the API key is not valid for this environment');
  }

}

function outcomeToRow(outcome: CallOutcome<QuoteSuccessResponse>, agentId: string | null): Parameters<Ledger['recordOutcome']>[3] {
  const base = {
    attempts: outcome.attempts.length,
    agentId,
    httpStatus: outcome.httpStatus,
    responseJson: outcome.body === undefined ? null : JSON.stringify(outcome.body),
  };
  switch (outcome.kind) {
    case 'ok': {
      const body = outcome.parsed;
      return {
        ...base,
        state: 'succeeded',
        transactionId: body?.transaction_id ?? null,
        quoteNumber: body?.quote?.quote_number ?? null,
        totalPremium: body?.quote?.premium_summary?.total_premium ?? null,
        inputIssuesJson: body?.input_issues !== undefined && body.input_issues.length > 0 ? JSON.stringify(body.input_issues) : null,
      };
    }
    case 'rejected':
      return { ...base, state: 'rejected', errorCode: outcome.errorCode, errorMessage: reasonOf(outcome) };
    case 'in_doubt':
      return { ...base, state: 'in_doubt', errorCode: outcome.errorCode, errorMessage: reasonOf(outcome) };
    default:
      return { ...base, state: 'failed', errorCode: outcome.errorCode, errorMessage: reasonOf(outcome) };
  }
}


/**
 * The reason kept in `rows.error_message`: the partner's own message when it sent one (so that
 * analysts can group rows by it), else the client's one-line description.
 */
function reasonOf(outcome: CallOutcome): string {
  const body = outcome.body;
  if (body !== null && typeof body === 'object' && typeof (body as { message?: unknown }).message === 'string') {
    const message = (body as { message: string }).message.trim();
    if (message !== '') return message;
  }
  return outcome.message;
}
