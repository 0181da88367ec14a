/** The records the ledger reads and writes (the columns are documented in docs/ledger.md). */
import type { AnnouncedSummary } from '../partner/announced-limit.js';
import type { AttemptRecord, Environment, Operation } from '../partner/types.js';
import type { JobStatus, RowState, RunStatus } from './schema.js';

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
  /** How the job's input is read (see migration 7): `INPUT_READER`, or null for a job begun before. */
  input_reader: number | null;
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
  /** Why the run stopped or halted; null when it ended normally (and before schema version 6). */
  end_reason?: string | null;
  /** For a run a Retry-After halted: when the partner may be called again. */
  retry_after_at?: string | null;
}

/** A row of an earlier job that sent (or may have sent) the same lead. */
export interface SentRow {
  job_id: number;
  row_number: number;
  state: 'succeeded' | 'in_doubt' | 'in_flight' | 'duplicate';
  /**
   * For a `duplicate` row found: the row at the end of its chain that sent (or may have sent) the
   * lead, else that row itself (its chain ends in a pruned job). A row recording this one refers to it.
   */
  origin?: SentRowRef;
}

/** A row of another job whose request, the same body, the partner rejected: its answer. */
export interface RejectedRow {
  job_id: number;
  row_number: number;
  http_status: number | null;
  error_code: string | null;
  error_message: string | null;
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
  /** For a row recorded duplicate because another job sent its lead: that job's row. */
  sentBy?: SentRowRef | null;
}

/** A row of a job: where a `sent_by_other_job` duplicate found its lead sent. */
export interface SentRowRef {
  job_id: number;
  row_number: number;
}

/** One second of a run, for `run_samples` (see migrations 3 and 4). */
export interface RunSample {
  elapsedMs: number;
  concurrencyLimit: number | null;
  inFlight: number;
  attempts: number;
  throttled: number;
  errors: number;
  rowsDone: number;
  latencyP50Ms: number | null;
  /** Requests per second the adaptive limiter paced sends at; null or absent when it did not pace (migration 4). */
  paceRate?: number | null;
  /** The most requests in flight at once during the sample; null or absent when not known (migration 5). */
  inFlightMax?: number | null;
  /** Of the attempts, quotes and leads the partner answered (not a transient failure; a 429 counts); null or absent when not known (migration 8). */
  submitsAnswered?: number | null;
  /** Requests per second the partner's announced limit allowed; null or absent when none was announced (or it was not kept to) (migration 9). */
  announcedRate?: number | null;
}

/**
 * A row's new state and what is kept with it, as the pipeline's row-state module decides it
 * (`src/pipeline/row-state.ts`): the ledger applies it and decides nothing.
 */
export type RowChange = Omit<RowOutcome, 'attempts'>;

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
  /** For a row recorded duplicate because another job sent its lead: that job's row. */
  sentBy?: SentRowRef | null;
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

/**
 * One write of a run to a row, committed with the others of its turn in one transaction
 * ({@link Ledger.commitRowWrites}): the row's changes are decided by the pipeline's row-state
 * module, the ledger applies them.
 */
export type RowWrite =
  /** Marks the row `in_flight` right before its request leaves. */
  | {
      kind: 'mark';
      rowNumber: number;
      /** The state the row is in before the write (a write sent again after a cut connection is then found applied, not applied twice). */
      from?: RowState;
      agentId: string | null;
      requestJson: string | null;
      requestSha256: string | null;
      lookup?: MarkLookup | undefined;
    }
  /** The row's outcome, with the attempts that led to it. */
  | { kind: 'outcome'; rowNumber: number; from?: RowState; change: RowChange; attempts: readonly AttemptRecord[] }
  /** The row back in the state it had before its mark (`change.state`), with the attempts made; what an earlier run kept of it stays. */
  | { kind: 'put_back'; rowNumber: number; from?: RowState; change: RowChange; attempts: readonly AttemptRecord[] };

/** What a {@link RowWrite} found: for a mark, the other job's row that had sent the lead (the row was not marked). */
export interface RowWriteResult {
  sent?: SentRow;
}

/**
 * Looked up in a mark's own transaction (after the mark, so that a job running beside this one sees
 * one or the other): another job of this environment and operation that sent the lead since the row
 * was read. When found, the row is given `sentBy(found)` instead, unsent.
 */
export interface MarkLookup {
  environment: string;
  operation: string;
  rowKey: string;
  sentBy: (sent: SentRow) => RowChange;
}

/** A value now (the SQLite ledger answers at once) or later (PostgreSQL answers over the network). */
export type Awaitable<T> = T | Promise<T>;

/**
 * What a run needs of a ledger while it sends rows, whichever ledger it is: the SQLite `Ledger`
 * answers at once, the PostgreSQL `PgLedger` later; the pipeline awaits both alike.
 */
export interface RunLedger {
  /** The ledger as it may be shown (a file's path, or a connection string without its password). */
  readonly path: string;
  countsByState(jobId: number): Awaitable<Record<RowState, number>>;
  getAgent(environment: string, email: string): Awaitable<AgentRecord | undefined>;
  upsertAgent(agent: AgentRecord): Awaitable<void>;
  recordAttempts(jobId: number, runId: number, rowNumber: number | null, attempts: readonly AttemptRecord[], agentEmail: string | null): Awaitable<void>;
  recordRunSample(runId: number, sample: RunSample): Awaitable<void>;
  recordAnnouncedLimit(runId: number, announced: AnnouncedSummary | null): Awaitable<void>;
  sentByOtherJob(jobId: number, environment: string, operation: string, rowKey: string): Awaitable<SentRow | undefined>;
  hasOtherJob(jobId: number, environment: string, operation: string): Awaitable<boolean>;
  rejectedByOtherJob(jobId: number, environment: string, operation: string, rowKey: string, requestSha256: string): Awaitable<RejectedRow | undefined>;
}
