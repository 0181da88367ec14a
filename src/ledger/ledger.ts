/**
 * The SQLite ledger: one file, WAL mode, created 0600. better-sqlite3 is synchronous, so the
 * pipeline awaits the network first and then records synchronously (never `await` inside a
 * transaction). Statements are prepared once.
 */
import { chmodSync, closeSync, existsSync, openSync } from 'node:fs';
import { hostname } from 'node:os';
import Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import { QuoteBatchError } from '../errors.js';
import type { AttemptRecord, Environment, Operation } from '../partner/types.js';
import { MIGRATIONS, ROW_STATES, SCHEMA_VERSION, type JobStatus, type RowState, type RunStatus } from './schema.js';

export interface JobIdentity {
  inputSha256: string;
  mappingSha256: string;
  environment: Environment;
  operation: Operation;
}

export interface JobRecord {
  id: number;
  input_path: string;
  input_sha256: string;
  input_format: string;
  mapping_path: string;
  mapping_sha256: string;
  environment: Environment;
  operation: Operation;
  base_url: string | null;
  status: JobStatus;
  total_rows: number | null;
  created_at: string;
  finished_at: string | null;
  resume_row: number | null;
  resume_offset: number | null;
  resume_line: number | null;
}

/** Where a resumed run may start reading (see migration 2). */
export interface ResumePoint {
  rowNumber: number;
  offset: number;
  line: number;
}

export interface RunRecord {
  id: number;
  job_id: number;
  started_at: string;
  finished_at: string | null;
  status: RunStatus;
  options_json: string;
  tool_version: string;
  pid: number | null;
  hostname: string | null;
  heartbeat_at: string | null;
}

export interface NewRow {
  rowNumber: number;
  rowKey: string | null;
  agentEmail: string | null;
  state: RowState;
  errorCode?: string | null;
  errorMessage?: string | null;
  inputIssuesJson?: string | null;
  /** Where the row's record starts in the (decoded) input: byte offset and line. */
  sourceOffset?: number | null;
  sourceLine?: number | null;
}

/** One second of a run, for `run_samples` (see migration 3). */
export interface RunSample {
  elapsedMs: number;
  concurrencyLimit: number | null;
  inFlight: number;
  attempts: number;
  throttled: number;
  errors: number;
  rowsDone: number;
  latencyP50Ms: number | null;
}

export interface RowOutcome {
  state: RowState;
  agentId?: string | null;
  httpStatus?: number | null;
  errorCode?: string | null;
  errorMessage?: string | null;
  transactionId?: string | null;
  quoteNumber?: string | null;
  totalPremium?: number | null;
  inputIssuesJson?: string | null;
  requestJson?: string | null;
  responseJson?: string | null;
  /** Attempts made by this call; added to the row's running total. */
  attempts: number;
}

export interface AgentRecord {
  environment: string;
  email: string;
  is_valid: number;
  agent_id: string | null;
  message: string | null;
  checked_at: string;
  job_id: number | null;
}

/** A run whose heartbeat is older than this is presumed dead even on another host. */
const STALE_HEARTBEAT_MS = 5 * 60_000;

export const now = (): string => new Date().toISOString();

export class Ledger {
  readonly path: string;
  readonly db: Database.Database;
  private readonly stmts: ReturnType<typeof prepareStatements>;

  private constructor(path: string, db: Database.Database) {
    this.path = path;
    this.db = db;
    this.stmts = prepareStatements(db);
  }

  /**
   * Opens (creating with mode 0600 when absent) and migrates the ledger at `path`.
   * `readonly` opens an existing ledger for reports without migrating it.
   */
  static open(path: string, options: { readonly?: boolean } = {}): Ledger {
    const readonly = options.readonly === true;
    if (readonly && !existsSync(path)) {
      throw new QuoteBatchError('E_LEDGER', `ledger ${path} does not exist`, {
        hint: 'run `quote-batch run …` first, or pass --ledger <file>',
      });
    }
    if (!readonly) createPrivateFile(path);
    let db: Database.Database;
    try {
      db = new Database(path, { readonly, fileMustExist: readonly });
      db.pragma('busy_timeout = 5000');
      if (!readonly) {
        db.pragma('journal_mode = WAL');
        // NORMAL in WAL mode: a commit survives a process crash (SIGKILL) without an fsync per
        // row; only a power loss could drop the last commits, and those rows are then re-read
        // as pending/in_flight and handled by the resume rules.
        db.pragma('synchronous = NORMAL');
        db.pragma('foreign_keys = ON');
      }
    } catch (error) {
      throw new QuoteBatchError('E_LEDGER', `cannot open ledger ${path}: ${(error as Error).message}`, { cause: error });
    }
    try {
      migrate(db, path, readonly);
    } catch (error) {
      db.close();
      if (error instanceof QuoteBatchError) throw error;
      throw new QuoteBatchError('E_LEDGER', `cannot open ledger ${path}: ${(error as Error).message}`, {
        cause: error,
        hint: 'pass --ledger <file> naming a quote-batch ledger (a SQLite file written by `quote-batch run`)',
      });
    }
    if (!readonly) {
      // SQLite gives -wal/-shm the database file's mode; make sure of it once they exist.
      for (const suffix of ['-wal', '-shm']) {
        if (existsSync(path + suffix)) chmodSync(path + suffix, 0o600);
      }
    }
    return new Ledger(path, db);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  // --- jobs -------------------------------------------------------------------------------

  findJob(identity: JobIdentity, status: 'unfinished' | 'completed'): JobRecord | undefined {
    const stmt = status === 'unfinished' ? this.stmts.findUnfinishedJob : this.stmts.findCompletedJob;
    return stmt.get(identity.inputSha256, identity.mappingSha256, identity.environment, identity.operation) as
      | JobRecord
      | undefined;
  }

  getJob(id: number): JobRecord | undefined {
    return this.stmts.getJob.get(id) as JobRecord | undefined;
  }

  latestJob(): JobRecord | undefined {
    return this.stmts.latestJob.get() as JobRecord | undefined;
  }

  createJob(
    job: Omit<JobRecord, 'id' | 'status' | 'total_rows' | 'created_at' | 'finished_at' | 'resume_row' | 'resume_offset' | 'resume_line'>,
  ): JobRecord {
    const info = this.stmts.insertJob.run({ ...job, created_at: now() });
    return this.getJob(Number(info.lastInsertRowid)) as JobRecord;
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
   * Starts a run of `jobId` after settling earlier runs: a run still marked `running` whose
   * process is gone is marked `crashed` and its `in_flight` rows become `in_doubt`. A run whose
   * process is alive makes this call refuse (two processes must not drive one job).
   * Done in one IMMEDIATE transaction so two starting processes cannot both win.
   */
  startRun(jobId: number, optionsJson: string, toolVersion: string): { run: RunRecord; crashedRuns: number; newlyInDoubt: number } {
    const start = this.db.transaction(() => {
      let crashedRuns = 0;
      for (const run of this.stmts.runningRuns.all(jobId) as RunRecord[]) {
        if (isRunAlive(run)) {
          throw new QuoteBatchError(
            'E_JOB_LOCKED',
            `job ${jobId} is being run by another process (pid ${run.pid ?? '?'} on ${run.hostname ?? '?'}, run ${run.id})`,
            { hint: 'wait for it to finish, or stop it; a second process on the same job would send rows twice' },
          );
        }
        this.stmts.finishRun.run('crashed', now(), run.id);
        crashedRuns += 1;
      }
      const newlyInDoubt = this.stmts.inFlightToInDoubt.run(now(), jobId).changes;
      const info = this.stmts.insertRun.run(jobId, now(), optionsJson, toolVersion, process.pid, hostname(), now());
      this.setJobStatus(jobId, 'running');
      const run = this.stmts.getRun.get(Number(info.lastInsertRowid)) as RunRecord;
      return { run, crashedRuns, newlyInDoubt };
    });
    return start.immediate();
  }

  heartbeat(runId: number): void {
    this.stmts.heartbeat.run(now(), runId);
  }

  finishRun(runId: number, status: RunStatus): void {
    this.stmts.finishRun.run(status, now(), runId);
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
    return this.stmts.hasRowKey.get(jobId, rowKey) !== undefined;
  }

  insertRows(jobId: number, rows: readonly NewRow[]): void {
    this.insertRowsTx(jobId, rows);
  }

  private readonly insertRowsTx = (jobId: number, rows: readonly NewRow[]): void => {
    this.db.transaction(() => {
      const at = now();
      for (const row of rows) {
        this.stmts.insertRow.run({
          job_id: jobId,
          row_number: row.rowNumber,
          row_key: row.rowKey,
          agent_email: row.agentEmail,
          state: row.state,
          error_code: row.errorCode ?? null,
          error_message: row.errorMessage ?? null,
          input_issues_json: row.inputIssuesJson ?? null,
          source_offset: row.sourceOffset ?? null,
          source_line: row.sourceLine ?? null,
          updated_at: at,
        });
      }
    })();
  };

  /** Durably marks a row `in_flight` (one autocommit statement) right before its request leaves. */
  markInFlight(jobId: number, rowNumber: number, agentId: string | null, requestJson: string | null): void {
    this.stmts.markInFlight.run(agentId, requestJson, now(), jobId, rowNumber);
  }

  /** Records a row's outcome and its attempts together, in one transaction. */
  recordOutcome(jobId: number, runId: number, rowNumber: number, outcome: RowOutcome, attempts: readonly AttemptRecord[]): void {
    this.recordOutcomeTx(jobId, runId, rowNumber, outcome, attempts);
  }

  private readonly recordOutcomeTx = (
    jobId: number,
    runId: number,
    rowNumber: number,
    outcome: RowOutcome,
    attempts: readonly AttemptRecord[],
  ): void => {
    this.db.transaction(() => {
      this.stmts.recordOutcome.run({
        job_id: jobId,
        row_number: rowNumber,
        state: outcome.state,
        agent_id: outcome.agentId ?? null,
        attempts: outcome.attempts,
        http_status: outcome.httpStatus ?? null,
        error_code: outcome.errorCode ?? null,
        error_message: outcome.errorMessage ?? null,
        transaction_id: outcome.transactionId ?? null,
        quote_number: outcome.quoteNumber ?? null,
        total_premium: outcome.totalPremium ?? null,
        input_issues_json: outcome.inputIssuesJson ?? null,
        request_json: outcome.requestJson ?? null,
        response_json: outcome.responseJson ?? null,
        updated_at: now(),
      });
      for (const attempt of attempts) this.insertAttemptRow(jobId, runId, rowNumber, attempt, null);
    })();
  };

  recordAttempts(jobId: number, runId: number, rowNumber: number | null, attempts: readonly AttemptRecord[], agentEmail: string | null): void {
    this.db.transaction(() => {
      for (const attempt of attempts) this.insertAttemptRow(jobId, runId, rowNumber, attempt, agentEmail);
    })();
  }

  private insertAttemptRow(jobId: number, runId: number, rowNumber: number | null, a: AttemptRecord, agentEmail: string | null): void {
    this.stmts.insertAttempt.run(jobId, rowNumber, runId, a.kind, a.startedAt, a.durationMs, a.httpStatus, a.errorCode, a.outcome, agentEmail);
  }

  /** Records one second of a run (`run_samples`). */
  recordRunSample(runId: number, sample: RunSample): void {
    this.stmts.insertRunSample.run(
      runId, Math.round(sample.elapsedMs), now(), sample.concurrencyLimit, sample.inFlight, sample.attempts,
      sample.throttled, sample.errors, sample.rowsDone, sample.latencyP50Ms,
    );
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
    return this.stmts.getAgent.get(environment, email) as AgentRecord | undefined;
  }

  upsertAgent(agent: AgentRecord): void {
    this.stmts.upsertAgent.run(agent);
  }
}

function createPrivateFile(path: string): void {
  if (existsSync(path)) return;
  try {
    closeSync(openSync(path, 'a', 0o600));
    chmodSync(path, 0o600); // the umask may have narrowed it further; never widened
  } catch (error) {
    throw new QuoteBatchError('E_LEDGER', `cannot create ledger ${path}: ${(error as Error).message}`, { cause: error });
  }
}

function migrate(db: Database.Database, path: string, readonly: boolean): void {
  const version = db.pragma('user_version', { simple: true }) as number;
  if (version > SCHEMA_VERSION) {
    throw new QuoteBatchError(
      'E_LEDGER',
      `ledger ${path} has schema version ${version}, newer than this quote-batch understands (${SCHEMA_VERSION})`,
      { hint: 'upgrade quote-batch, or use another --ledger file' },
    );
  }
  if (version === SCHEMA_VERSION) return;
  if (readonly) {
    throw new QuoteBatchError('E_LEDGER', `ledger ${path} has schema version ${version}; open it with \`run\` once to migrate it`);
  }
  db.transaction(() => {
    for (let v = version; v < SCHEMA_VERSION; v++) db.exec(MIGRATIONS[v] as string);
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
  }).immediate();
}

function isRunAlive(run: RunRecord): boolean {
  if (run.hostname === hostname() && run.pid !== null) {
    if (run.pid === process.pid) return false;
    try {
      process.kill(run.pid, 0);
      return true;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'EPERM';
    }
  }
  // Another host: trust a recent heartbeat.
  const beat = run.heartbeat_at === null ? 0 : Date.parse(run.heartbeat_at);
  return Date.now() - beat < STALE_HEARTBEAT_MS;
}

function prepareStatements(db: Database.Database) {
  const p = (sql: string): Statement => db.prepare(sql);
  return {
    findUnfinishedJob: p(
      `SELECT * FROM jobs WHERE input_sha256 = ? AND mapping_sha256 = ? AND environment = ? AND operation = ?
       AND status != 'completed' ORDER BY id DESC LIMIT 1`,
    ),
    findCompletedJob: p(
      `SELECT * FROM jobs WHERE input_sha256 = ? AND mapping_sha256 = ? AND environment = ? AND operation = ?
       AND status = 'completed' ORDER BY id DESC LIMIT 1`,
    ),
    getJob: p('SELECT * FROM jobs WHERE id = ?'),
    latestJob: p('SELECT * FROM jobs ORDER BY id DESC LIMIT 1'),
    insertJob: p(
      `INSERT INTO jobs (input_path, input_sha256, input_format, mapping_path, mapping_sha256, environment, operation,
         base_url, status, created_at)
       VALUES (@input_path, @input_sha256, @input_format, @mapping_path, @mapping_sha256, @environment, @operation,
         @base_url, 'running', @created_at)`,
    ),
    setJobStatus: p('UPDATE jobs SET status = ?, finished_at = ? WHERE id = ?'),
    setTotalRows: p('UPDATE jobs SET total_rows = ? WHERE id = ?'),
    setResumePoint: p('UPDATE jobs SET resume_row = ?, resume_offset = ?, resume_line = ? WHERE id = ?'),
    runningRuns: p(`SELECT * FROM runs WHERE job_id = ? AND status = 'running'`),
    insertRun: p(
      `INSERT INTO runs (job_id, started_at, status, options_json, tool_version, pid, hostname, heartbeat_at)
       VALUES (?, ?, 'running', ?, ?, ?, ?, ?)`,
    ),
    getRun: p('SELECT * FROM runs WHERE id = ?'),
    runsOf: p('SELECT * FROM runs WHERE job_id = ? ORDER BY id'),
    heartbeat: p('UPDATE runs SET heartbeat_at = ? WHERE id = ?'),
    finishRun: p('UPDATE runs SET status = ?, finished_at = ? WHERE id = ?'),
    inFlightToInDoubt: p(
      `UPDATE rows SET state = 'in_doubt', updated_at = ?,
         error_message = COALESCE(error_message, 'the process stopped while the request was in flight')
       WHERE job_id = ? AND state = 'in_flight'`,
    ),
    rowStates: p('SELECT row_number, state FROM rows WHERE job_id = ?'),
    maxRowNumber: p('SELECT MAX(row_number) AS n FROM rows WHERE job_id = ?'),
    // INDEXED BY: without statistics the planner scans the job's rows for the NOT IN, which
    // makes every read slower than the last on a large file.
    hasRowKey: p(
      `SELECT 1 FROM rows INDEXED BY rows_key WHERE job_id = ? AND row_key = ? AND state NOT IN ('duplicate', 'invalid') LIMIT 1`,
    ),
    insertRow: p(
      `INSERT INTO rows (job_id, row_number, row_key, agent_email, state, error_code, error_message, input_issues_json,
         source_offset, source_line, updated_at)
       VALUES (@job_id, @row_number, @row_key, @agent_email, @state, @error_code, @error_message, @input_issues_json,
         @source_offset, @source_line, @updated_at)`,
    ),
    markInFlight: p(
      `UPDATE rows SET state = 'in_flight', agent_id = COALESCE(?, agent_id), request_json = ?, updated_at = ?
       WHERE job_id = ? AND row_number = ?`,
    ),
    recordOutcome: p(
      `UPDATE rows SET state = @state, agent_id = COALESCE(@agent_id, agent_id), attempts = attempts + @attempts,
         http_status = @http_status, error_code = @error_code, error_message = @error_message,
         transaction_id = @transaction_id, quote_number = @quote_number, total_premium = @total_premium,
         input_issues_json = COALESCE(@input_issues_json, input_issues_json),
         request_json = COALESCE(@request_json, request_json), response_json = @response_json, updated_at = @updated_at
       WHERE job_id = @job_id AND row_number = @row_number`,
    ),
    insertAttempt: p(
      `INSERT INTO attempts (job_id, row_number, run_id, kind, started_at, duration_ms, http_status, error_code, outcome, agent_email)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    countsByState: p('SELECT state, COUNT(*) AS n FROM rows WHERE job_id = ? GROUP BY state'),
    insertRunSample: p(
      `INSERT OR REPLACE INTO run_samples (run_id, elapsed_ms, at, concurrency_limit, in_flight, attempts, throttled, errors,
         rows_done, latency_p50_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    topErrors: p(
      `SELECT state, error_code, error_message, COUNT(*) AS n FROM rows
       WHERE job_id = ? AND state IN ('rejected', 'agent_invalid', 'invalid', 'failed', 'in_doubt')
       GROUP BY state, error_code, error_message ORDER BY n DESC, state LIMIT ?`,
    ),
    rowsInState: p('SELECT row_number, row_key, error_message FROM rows WHERE job_id = ? AND state = ? ORDER BY row_number LIMIT ?'),
    getAgent: p('SELECT * FROM agents WHERE environment = ? AND email = ?'),
    upsertAgent: p(
      `INSERT INTO agents (environment, email, is_valid, agent_id, message, checked_at, job_id)
       VALUES (@environment, @email, @is_valid, @agent_id, @message, @checked_at, @job_id)
       ON CONFLICT (environment, email) DO UPDATE SET is_valid = excluded.is_valid, agent_id = excluded.agent_id,
         message = excluded.message, checked_at = excluded.checked_at, job_id = excluded.job_id`,
    ),
  };
}
