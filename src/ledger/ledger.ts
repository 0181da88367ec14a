/**
 * The SQLite ledger: one file, WAL mode, created 0600. better-sqlite3 is synchronous, so the
 * pipeline awaits the network first and then records synchronously (never `await` inside a
 * transaction). Statements are prepared once. A process working on a job holds the job's lock
 * (`_job-lock.ts`); every free text stored is bounded (`limits.ts`); `_open.ts` opens, creates and
 * migrates the file.
 */
import { realpathSync } from 'node:fs';
import { hostname } from 'node:os';
import type Database from 'better-sqlite3';
import { QuoteBatchError } from '../errors.js';
import type { AnnouncedSummary } from '../partner/announced-limit.js';
import type { AttemptRecord } from '../partner/types.js';
import { jobLockPath, tryAcquireJobLock, type JobLock } from './_job-lock.js';
import { heartbeatIsFresh, pidExists, ranHere } from './_liveness.js';
import { openDatabase } from './_open.js';
import { findSentByOtherJob } from './_sent-by.js';
import { prepareStatements, type LedgerStatements } from './_statements.js';
import { boundJson, boundKey, boundText, MAX_STORED_ID_CHARS } from './limits.js';
import { ROW_STATES, type JobStatus, type RowState, type RunStatus } from './schema.js';
import type { AgentRecord, JobIdentity, JobRecord, NewRow, ResumePoint, RejectedRow, RowChange, RowOutcome, RowWrite, RowWriteResult, RunLedger, RunRecord, RunSample, SentRow } from './types.js';

export const now = (): string => new Date().toISOString();

/** The time stamps compared come from two clocks (file system, process): allow this much. */
const CLOCK_SLACK_MS = 1000;
export class Ledger implements RunLedger {
  readonly path: string;
  readonly db: Database.Database;
  private readonly stmts: LedgerStatements;
  /** The row writes in a transaction of their own, for callers outside one. */
  readonly #insertRowsTx: Database.Transaction<(jobId: number, rows: readonly NewRow[]) => void>;
  readonly #recordOutcomeTx: Database.Transaction<Ledger['recordOutcomeNow']>;
  readonly #commitRowWritesTx: Database.Transaction<Ledger['commitRowWritesNow']>;
  /** The ledger's real path: lock files sit beside the file itself, whatever link named it. */
  readonly #realPath: string;
  /** Job locks this connection holds (see `_job-lock.ts`). */
  readonly #locks = new Map<number, JobLock>();
  /** Runs this connection started, by id, with their job: finishing one releases the job. */
  readonly #runJobs = new Map<number, number>();

  private constructor(path: string, db: Database.Database) {
    this.path = path;
    this.db = db;
    this.stmts = prepareStatements(db);
    this.#insertRowsTx = db.transaction((jobId: number, rows: readonly NewRow[]) => this.insertRowsNow(jobId, rows));
    this.#recordOutcomeTx = db.transaction((...args: Parameters<Ledger['recordOutcomeNow']>) => this.recordOutcomeNow(...args));
    this.#commitRowWritesTx = db.transaction((...args: Parameters<Ledger['commitRowWritesNow']>) => this.commitRowWritesNow(...args));
    this.#realPath = realpathSync(path);
  }

  /**
   * Opens (creating with mode 0600 when absent) and migrates the ledger at `path`.
   * `readonly` opens an existing ledger for reports without migrating it; `mustExist` refuses to
   * create one (for commands that change an existing ledger: `resolve`, `prune`).
   */
  static open(path: string, options: { readonly?: boolean; mustExist?: boolean } = {}): Ledger {
    return new Ledger(path, openDatabase(path, options));
  }

  /** Releases every job lock this connection holds, then closes it. */
  close(): void {
    for (const lock of this.#locks.values()) lock.release();
    this.#locks.clear();
    if (this.db.open) this.db.close();
  }

  // --- job locks --------------------------------------------------------------------------

  /**
   * Takes the lock of `jobId` for this connection (a no-op when it holds it already). Throws
   * `QuoteBatchError('E_JOB_LOCKED')` when another live process holds it. The lock is released by
   * {@link unlockJob}, {@link finishRun} of a run this connection started, {@link close}, or the
   * death of the process.
   */
  lockJob(jobId: number, what = `job ${jobId}`): void {
    if (!this.tryLockJob(jobId)) throw this.lockedError(jobId, what);
  }

  /** Like {@link lockJob}, but returns false instead of throwing when another process holds it. */
  tryLockJob(jobId: number): boolean {
    if (this.#locks.has(jobId)) return true;
    const lock = tryAcquireJobLock(this.#realPath, jobId);
    if (lock === undefined) return false;
    if (this.mayHoldDeletedLock(jobId, lock.fileCreatedMs)) {
      lock.release();
      return false;
    }
    this.#locks.set(jobId, lock);
    return true;
  }

  /**
   * A lock file made after the start of the job's last run still marked `running` means that its
   * run's lock file was deleted (by hand: quote-batch never deletes the lock of a live job), so
   * that run may still hold the deleted one. Then only its own signs of life can tell: its pid on
   * this host, or a recent heartbeat from another host.
   */
  private mayHoldDeletedLock(jobId: number, fileCreatedMs: number): boolean {
    const run = this.stmts.lastRunningRun.get(jobId) as RunRecord | undefined;
    if (run === undefined || fileCreatedMs <= Date.parse(run.started_at) + CLOCK_SLACK_MS) return false;
    // On this host the pid decides, so a job whose lock file was deleted after a kill is free at once.
    return ranHere(run) ? pidExists(run.pid) : heartbeatIsFresh(run);
  }

  unlockJob(jobId: number): void {
    this.#locks.get(jobId)?.release();
    this.#locks.delete(jobId);
  }

  /** Deletes the lock file of a job this connection holds and no longer keeps, then releases it. */
  removeJobLock(jobId: number): void {
    this.#locks.get(jobId)?.remove();
    this.#locks.delete(jobId);
  }

  /** Runs `fn` holding the lock of `jobId` (taken here unless held already, and then released). */
  withJobLock<T>(jobId: number, fn: () => T): T {
    const held = this.#locks.has(jobId);
    this.lockJob(jobId);
    try {
      return fn();
    } finally {
      if (!held) this.unlockJob(jobId);
    }
  }

  private lockedError(jobId: number, what: string): QuoteBatchError {
    const run = this.stmts.lastRunningRun.get(jobId) as RunRecord | undefined;
    // The run row is only a clue (the holder may be a resolve or a prune): the lock is the fact.
    const clue = run === undefined ? '' : ` (its run ${run.id} was started by pid ${run.pid ?? '?'} on ${run.hostname ?? '?'} at ${run.started_at})`;
    return new QuoteBatchError('E_JOB_LOCKED', `${what} is in use by another live quote-batch process${clue}; nothing was done`, {
      hint: `wait for that run, resolve or prune to end (or stop it with SIGTERM), then try again; the lock is ${jobLockPath(this.#realPath, jobId)}`,
    });
  }

  // --- jobs -------------------------------------------------------------------------------

  /**
   * The newest job of this input, mapping, environment and operation, whatever its status. Only it
   * may be resumed or called completed: an older unfinished job was set aside by `--fresh`, and
   * resuming it would send again what the newer job sent.
   */
  latestJobOf(identity: JobIdentity): JobRecord | undefined {
    return this.stmts.latestJobOf.get(identity.inputSha256, identity.mappingSha256, identity.environment, identity.operation) as
      | JobRecord
      | undefined;
  }

  getJob(id: number): JobRecord | undefined {
    return this.stmts.getJob.get(id) as JobRecord | undefined;
  }

  latestJob(): JobRecord | undefined {
    return this.stmts.latestJob.get() as JobRecord | undefined;
  }

  /**
   * Creates a job and takes its lock (see {@link lockJob}). Refuses with `E_JOB_LOCKED` while
   * another process holds an unfinished job of the same identity: two processes that both found
   * no job to resume must not both start sending the same file. With `onlyIfFirst` (a run without
   * `--fresh` that found no job of this identity), also refuses when one appeared meanwhile.
   */
  createJob(
    job: Omit<JobRecord, 'id' | 'status' | 'total_rows' | 'created_at' | 'finished_at' | 'resume_row' | 'resume_offset' | 'resume_line' | 'input_reader'>,
    options: { onlyIfFirst?: boolean } = {},
  ): JobRecord {
    const create = this.db.transaction(() => {
      const others = this.stmts.unfinishedJobsOf.all(job.input_sha256, job.mapping_sha256, job.environment, job.operation) as { id: number }[];
      for (const { id } of others) {
        if (this.#locks.has(id)) continue;
        const probe = tryAcquireJobLock(this.#realPath, id);
        if (probe === undefined) throw this.lockedError(id, `job ${id}, with the same input, mapping, environment and operation,`);
        probe.release();
      }
      // No live process holds one, but one appeared since the caller looked (and finished, or died).
      if (options.onlyIfFirst === true) {
        const other = this.latestJobOf(identityOf(job));
        if (other !== undefined) throw startedMeanwhile(`another process started job ${other.id} for the same input`);
      }
      const id = Number(this.stmts.insertJob.run({ ...job, created_at: now() }).lastInsertRowid);
      this.lockJob(id);
      return id;
    });
    return this.getJob(create.immediate()) as JobRecord;
  }

  setJobStatus(jobId: number, status: JobStatus): void {
    this.stmts.setJobStatus.run(status, status === 'completed' ? now() : null, jobId);
  }

  setTotalRows(jobId: number, totalRows: number): void {
    this.stmts.setTotalRows.run(totalRows, jobId);
  }

  /** Records that every row before `point.rowNumber` is final (call only once that is durable). */
  setResumePoint(jobId: number, point: ResumePoint): void {
    this.stmts.setResumePoint.run(point.rowNumber, point.offset, point.line, jobId);
  }

  resumePoint(job: JobRecord): ResumePoint | undefined {
    if (job.resume_row === null || job.resume_offset === null || job.resume_line === null) return undefined;
    return { rowNumber: job.resume_row, offset: job.resume_offset, line: job.resume_line };
  }

  // --- runs -------------------------------------------------------------------------------

  /**
   * Starts a run of `jobId`: takes the job's lock (`E_JOB_LOCKED` when another live process
   * holds it), then settles earlier runs. Holding the lock proves that a run still marked
   * `running` belongs to a dead process: it is marked `crashed` and its `in_flight` rows become
   * `in_doubt`. The lock is held until {@link finishRun}, {@link close} or the process's death.
   *
   * The job is read again under the lock: another process may have completed it, or started a
   * newer job of the same identity (`--fresh`), since the caller chose it. Either refuses with
   * `E_JOB_LOCKED` before anything is sent; running the command again sees the job as it is.
   */
  startRun(jobId: number, optionsJson: string, toolVersion: string, stopped: RowChange): { run: RunRecord; crashedRuns: number; newlyInDoubt: number } {
    const held = this.#locks.has(jobId);
    this.lockJob(jobId);
    const start = this.db.transaction(() => {
      this.assertStillRunnable(jobId);
      const { crashedRuns, newlyInDoubt, at } = this.settleCrashedRuns(jobId, stopped);
      const info = this.stmts.insertRun.run(jobId, at, optionsJson, toolVersion, process.pid, hostname(), at);
      this.setJobStatus(jobId, 'running');
      const run = this.stmts.getRun.get(Number(info.lastInsertRowid)) as RunRecord;
      return { run, crashedRuns, newlyInDoubt };
    });
    try {
      const result = start.immediate();
      this.#runJobs.set(result.run.id, jobId);
      return result;
    } catch (error) {
      if (!held) this.unlockJob(jobId);
      throw error;
    }
  }

  /**
   * Settles what dead processes left of `jobId`: runs still `running` become `crashed`, their
   * `in_flight` rows what `stopped` says (`in_doubt`). Only for a caller holding the job's lock (which
   * proves those processes dead), inside a write transaction: {@link startRun}, and `resolve` before it looks.
   */
  settleCrashedRuns(jobId: number, stopped: RowChange): { crashedRuns: number; newlyInDoubt: number; at: string } {
    const at = now();
    const crashedRuns = this.stmts.crashRunningRuns.run(at, jobId).changes;
    this.stmts.inFlightAttempts.run({ job: jobId, at });
    const newlyInDoubt = this.stmts.inFlightToInDoubt.run({ state: stopped.state, message: boundText(stopped.errorMessage ?? null), at, job: jobId }).changes;
    return { crashedRuns, newlyInDoubt, at };
  }

  private assertStillRunnable(jobId: number): void {
    const job = this.getJob(jobId);
    if (job === undefined) throw new QuoteBatchError('E_LEDGER', `job ${jobId} is not in the ledger (pruned meanwhile?); nothing was sent`);
    const newest = this.latestJobOf(identityOf(job));
    const changed = job.status === 'completed'
      ? `another process completed job ${jobId}`
      : newest !== undefined && newest.id !== jobId ? `another process started job ${newest.id} for the same input (--fresh)` : undefined;
    if (changed !== undefined) throw startedMeanwhile(changed);
  }

  heartbeat(runId: number): void {
    this.stmts.heartbeat.run(now(), runId);
  }

  /**
   * Records how run `runId` ended, why when it stopped or halted (`endReason`), and until when the
   * partner asked not to be called when a Retry-After halted it (`retryAfter`); for a run this
   * connection started, then releases its job's lock.
   */
  finishRun(runId: number, status: RunStatus, endReason: string | null = null, retryAfter: Date | null = null): void {
    this.stmts.finishRun.run(status, now(), boundText(endReason), retryAfter?.toISOString() ?? null, runId);
    const jobId = this.#runJobs.get(runId);
    if (jobId === undefined) return;
    this.#runJobs.delete(runId);
    this.unlockJob(jobId);
  }

  /**
   * The latest time a run of job `jobId` was asked by a Retry-After to wait until, or found the
   * partner's quota spent until (`quota`), when it is still to come at `at`. Only the job's own runs: another job (tomorrow's file) asks the partner itself, and
   * `--fresh` starts a job that does, when the time recorded is wrong.
   */
  retryAfterOf(jobId: number, at: Date = new Date()): { run_id: number; job_id: number; until: Date; quota: boolean } | undefined {
    const found = this.stmts.retryAfterOf.get(jobId, at.toISOString()) as
      { run_id: number; job_id: number; retry_after_at: string; quota: number } | undefined;
    return found === undefined ? undefined : { run_id: found.run_id, job_id: found.job_id, until: new Date(found.retry_after_at), quota: found.quota === 1 };
  }

  runsOf(jobId: number): RunRecord[] {
    return this.stmts.runsOf.all(jobId) as RunRecord[];
  }

  // --- rows -------------------------------------------------------------------------------

  /**
   * Every recorded row of a job as a compact array indexed by row number: 0 = not recorded,
   * otherwise 1 + the index of its state in ROW_STATES. A byte per row keeps a 1M-row resume
   * at about 1 MB instead of a Map of a million entries.
   */
  rowStates(jobId: number): Uint8Array {
    const max = (this.stmts.maxRowNumber.get(jobId) as { n: number | null }).n ?? 0;
    const states = new Uint8Array(max + 1);
    const codes = new Map<string, number>(ROW_STATES.map((state, i) => [state, i + 1]));
    for (const row of this.stmts.rowStates.raw().iterate(jobId) as Iterable<[number, RowState]>) {
      states[row[0]] = codes.get(row[1]) ?? 0;
    }
    return states;
  }

  /** True when an earlier row of the job (any state but `duplicate`/`invalid`) has this key. */
  hasRowKey(jobId: number, rowKey: string): boolean {
    return this.stmts.hasRowKey.get(jobId, boundKey(rowKey)) !== undefined;
  }

  /**
   * A row of another job of this environment and operation with this key whose lead reached the
   * partner (`succeeded`) or may have (`in_doubt`, or `in_flight`: that job runs now, or was killed),
   * or that a later job found sent (`duplicate`, `sent_by_other_job`: it still counts once the job
   * that sent it is pruned); the earliest. A duplicate counts only while the row it found sent still
   * counts (or is gone with a pruned job): one whose only evidence was a row since resolved `pending`
   * (the partner never had the lead; that row may be this job's own) does not. Keys made from a row
   * number (`row-<n>`, when the mapping names no key) say nothing across files and never match.
   */
  sentByOtherJob(jobId: number, environment: string, operation: string, rowKey: string): SentRow | undefined {
    return findSentByOtherJob(this.stmts, jobId, environment, operation, boundKey(rowKey));
  }

  /** True when the ledger holds a job of this environment and operation other than `jobId`. */
  hasOtherJob(jobId: number, environment: string, operation: string): boolean {
    return this.stmts.hasOtherJob.get(environment, operation, jobId) !== undefined;
  }

  /**
   * A row of another job of this environment and operation with this key whose request, the very
   * same body (`requestSha256`), the partner rejected; the newest if several.
   */
  rejectedByOtherJob(jobId: number, environment: string, operation: string, rowKey: string, requestSha256: string): RejectedRow | undefined {
    return this.stmts.rejectedByOtherJob.get(boundKey(rowKey), jobId, requestSha256, environment, operation) as RejectedRow | undefined;
  }

  /**
   * Commits a turn of a run's writes in one transaction: first the newly read rows some of them
   * concern (`inserts`), then the writes in order. All or nothing: when it throws, nothing of it is
   * in the ledger. A turn that marks rows `in_flight` is durable when this returns (synchronous
   * FULL: the WAL is fsynced), so that no power cut can lose a mark whose request then left; the
   * others stay NORMAL (docs/ledger.md, "What survives a killed process, and a power cut").
   */
  commitRowWrites(jobId: number, runId: number, inserts: readonly NewRow[], writes: readonly RowWrite[]): RowWriteResult[] {
    if (!writes.some((write) => write.kind === 'mark')) return this.#commitRowWritesTx(jobId, runId, inserts, writes);
    // A pragma cannot change inside a transaction: around it. Compiled each time: SQLite applies
    // this pragma while preparing it, so a statement prepared once did not reliably apply it again.
    this.db.exec('PRAGMA synchronous = FULL');
    try {
      return this.#commitRowWritesTx(jobId, runId, inserts, writes);
    } finally {
      this.db.exec('PRAGMA synchronous = NORMAL');
    }
  }

  private commitRowWritesNow(jobId: number, runId: number, inserts: readonly NewRow[], writes: readonly RowWrite[]): RowWriteResult[] {
    if (inserts.length > 0) this.insertRowsNow(jobId, inserts);
    return writes.map((write): RowWriteResult => {
      switch (write.kind) {
        case 'mark': {
          this.markInFlight(jobId, write.rowNumber, write.agentId, write.requestJson, write.requestSha256);
          const { lookup } = write;
          const sent = lookup === undefined ? undefined : this.sentByOtherJob(jobId, lookup.environment, lookup.operation, lookup.rowKey);
          if (sent === undefined || lookup === undefined) return {};
          this.recordOutcomeNow(jobId, runId, write.rowNumber, { ...lookup.sentBy(sent), attempts: 0 }, []);
          return { sent };
        }
        case 'outcome':
          this.recordOutcomeNow(jobId, runId, write.rowNumber, { ...write.change, attempts: write.attempts.length }, write.attempts);
          return {};
        case 'put_back':
          this.putBack(jobId, runId, write.rowNumber, write.change.state, write.attempts);
          return {};
      }
    });
  }

  insertRows(jobId: number, rows: readonly NewRow[]): void {
    if (this.db.inTransaction) this.insertRowsNow(jobId, rows);
    else this.#insertRowsTx(jobId, rows);
  }

  private insertRowsNow(jobId: number, rows: readonly NewRow[]): void {
    const at = now();
    for (const row of rows) {
      this.stmts.insertRow.run({
        job_id: jobId,
        row_number: row.rowNumber,
        row_key: boundKey(row.rowKey),
        agent_email: boundKey(row.agentEmail),
        state: row.state,
        error_code: boundText(row.errorCode ?? null, MAX_STORED_ID_CHARS),
        error_message: boundText(row.errorMessage ?? null),
        input_issues_json: boundJson(row.inputIssuesJson ?? null),
        source_offset: row.sourceOffset ?? null,
        source_line: row.sourceLine ?? null,
        updated_at: at,
        sent_by_job: row.sentBy?.job_id ?? null,
        sent_by_row: row.sentBy?.row_number ?? null,
      });
    }
  }

  /**
   * Marks a row `in_flight` right before its request leaves: one statement, committed on its own
   * or, from the pipeline, in the turn's transaction that the request waits for.
   */
  markInFlight(jobId: number, rowNumber: number, agentId: string | null, requestJson: string | null, requestSha256: string | null = null): void {
    this.stmts.markInFlight.run(boundText(agentId, MAX_STORED_ID_CHARS), boundJson(requestJson), requestSha256, now(), jobId, rowNumber);
  }

  /**
   * Puts a row marked `in_flight` back in the state it had, with the attempts it made (a refusal
   * to be sent again, or none when its request never left), leaving what an earlier run recorded of
   * it (error, answer) as it was: a row in doubt stays in doubt for the same reason. In the caller's
   * transaction when one is open, as {@link recordOutcome}.
   */
  putBack(jobId: number, runId: number, rowNumber: number, state: RowState, attempts: readonly AttemptRecord[]): void {
    const write = (): void => {
      this.stmts.putBack.run(state, attempts.length, now(), jobId, rowNumber);
      for (const attempt of attempts) this.insertAttemptRow(jobId, runId, rowNumber, attempt, null);
    };
    if (this.db.inTransaction) write();
    else this.db.transaction(write)();
  }

  /**
   * Records a row's outcome and its attempts together, in one transaction: its own, or the
   * caller's when one is open (the pipeline commits a turn's writes together; a nested
   * transaction would only add a savepoint per row).
   */
  recordOutcome(jobId: number, runId: number, rowNumber: number, outcome: RowOutcome, attempts: readonly AttemptRecord[]): void {
    if (this.db.inTransaction) this.recordOutcomeNow(jobId, runId, rowNumber, outcome, attempts);
    else this.#recordOutcomeTx(jobId, runId, rowNumber, outcome, attempts);
  }

  private recordOutcomeNow(jobId: number, runId: number, rowNumber: number, outcome: RowOutcome, attempts: readonly AttemptRecord[]): void {
    this.stmts.recordOutcome.run({
      job_id: jobId,
      row_number: rowNumber,
      state: outcome.state,
      agent_id: boundText(outcome.agentId ?? null, MAX_STORED_ID_CHARS),
      attempts: outcome.attempts,
      http_status: outcome.httpStatus ?? null,
      error_code: boundText(outcome.errorCode ?? null, MAX_STORED_ID_CHARS),
      error_message: boundText(outcome.errorMessage ?? null),
      transaction_id: boundText(outcome.transactionId ?? null, MAX_STORED_ID_CHARS),
      quote_number: boundText(outcome.quoteNumber ?? null, MAX_STORED_ID_CHARS),
      total_premium: outcome.totalPremium ?? null,
      input_issues_json: boundJson(outcome.inputIssuesJson ?? null),
      request_json: boundJson(outcome.requestJson ?? null),
      response_json: boundJson(outcome.responseJson ?? null),
      updated_at: now(),
      sent_by_job: outcome.sentBy?.job_id ?? null,
      sent_by_row: outcome.sentBy?.row_number ?? null,
    });
    for (const attempt of attempts) this.insertAttemptRow(jobId, runId, rowNumber, attempt, null);
  }

  recordAttempts(jobId: number, runId: number, rowNumber: number | null, attempts: readonly AttemptRecord[], agentEmail: string | null): void {
    this.db.transaction(() => {
      for (const attempt of attempts) this.insertAttemptRow(jobId, runId, rowNumber, attempt, agentEmail);
    })();
  }

  private insertAttemptRow(jobId: number, runId: number, rowNumber: number | null, a: AttemptRecord, agentEmail: string | null): void {
    this.stmts.insertAttempt.run(
      jobId, rowNumber, runId, a.kind, a.startedAt, a.durationMs, a.httpStatus, boundText(a.errorCode, MAX_STORED_ID_CHARS), a.outcome,
      boundKey(agentEmail),
    );
  }

  /** Records one second of a run (`run_samples`). */
  recordRunSample(runId: number, sample: RunSample): void {
    this.stmts.insertRunSample.run(
      runId, Math.round(sample.elapsedMs), now(), sample.concurrencyLimit, sample.inFlight, sample.attempts,
      sample.throttled, sample.errors, sample.rowsDone, sample.latencyP50Ms, sample.paceRate ?? null, sample.inFlightMax ?? null,
      sample.submitsAnswered ?? null, sample.announcedRate ?? null,
    );
  }

  /** Records what the partner announced of its limit during a run (`runs.announced_json`, migration 9). */
  recordAnnouncedLimit(runId: number, announced: AnnouncedSummary | null): void {
    this.stmts.recordAnnounced.run(announced === null ? null : JSON.stringify(announced), runId);
  }

  countsByState(jobId: number): Record<RowState, number> {
    const counts = Object.fromEntries(
      ['pending', 'in_flight', 'succeeded', 'rejected', 'agent_invalid', 'invalid', 'duplicate', 'failed', 'in_doubt'].map(
        (s) => [s, 0],
      ),
    ) as Record<RowState, number>;
    for (const row of this.stmts.countsByState.all(jobId) as { state: RowState; n: number }[]) counts[row.state] = row.n;
    return counts;
  }

  topErrors(jobId: number, limit: number): { state: RowState; error_code: string | null; error_message: string | null; n: number }[] {
    return this.stmts.topErrors.all(jobId, limit) as {
      state: RowState;
      error_code: string | null;
      error_message: string | null;
      n: number;
    }[];
  }

  rowsInState(jobId: number, state: RowState, limit: number): { row_number: number; row_key: string | null; error_message: string | null }[] {
    return this.stmts.rowsInState.all(jobId, state, limit) as { row_number: number; row_key: string | null; error_message: string | null }[];
  }

  // --- agents -----------------------------------------------------------------------------

  getAgent(environment: string, email: string): AgentRecord | undefined {
    return this.stmts.getAgent.get(environment, boundKey(email)) as AgentRecord | undefined;
  }

  upsertAgent(agent: AgentRecord): void {
    this.stmts.upsertAgent.run({
      ...agent,
      email: boundKey(agent.email),
      agent_id: boundText(agent.agent_id, MAX_STORED_ID_CHARS),
      message: boundText(agent.message),
    });
  }
}

/** Another process changed the job (or made a newer one) while this run was starting: refused before anything is sent. */
function startedMeanwhile(what: string): QuoteBatchError {
  return new QuoteBatchError('E_JOB_LOCKED', `${what} while this run was starting; nothing was sent`, {
    hint: 'run the same command again: it will see the job as it is now',
  });
}

/** What makes two jobs the same job: input, mapping, environment and operation. */
function identityOf(job: Pick<JobRecord, 'input_sha256' | 'mapping_sha256' | 'environment' | 'operation'>): JobIdentity {
  return { inputSha256: job.input_sha256, mappingSha256: job.mapping_sha256, environment: job.environment, operation: job.operation };
}
