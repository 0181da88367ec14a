/**
 * The ledger's schema as numbered migrations. `PRAGMA user_version` holds the number applied;
 * a ledger with a higher number than this build knows is refused rather than misread.
 * The tables and views are what users rely on (docs/ledger.md): add columns,
 * never rename or drop them.
 */
export const ROW_STATES = [
  'pending',
  'in_flight',
  'succeeded',
  'rejected',
  'agent_invalid',
  'invalid',
  'duplicate',
  'failed',
  'in_doubt',
] as const;
export type RowState = (typeof ROW_STATES)[number];

/**
 * `attempts.error_code` of a request a stopped process (or a run that failed) left in flight, recorded
 * when its run is found stopped: no answer came, so latency and answer counts leave it out.
 */
export const STOPPED_IN_FLIGHT = 'process_stopped';

/** States a later run leaves alone. */
export const FINAL_STATES: ReadonlySet<RowState> = new Set<RowState>([
  'succeeded',
  'rejected',
  'agent_invalid',
  'invalid',
  'duplicate',
]);

/** Rows of these counts that are not final: what a further run (or `resolve`) still handles. */
export function countUnfinished(counts: Readonly<Record<RowState, number>>): number {
  return ROW_STATES.reduce((sum, state) => (FINAL_STATES.has(state) ? sum : sum + counts[state]), 0);
}

export const JOB_STATUSES = ['running', 'interrupted', 'completed'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

/** `crashed`: the process died without recording an end (found by the next run). */
export const RUN_STATUSES = ['running', 'completed', 'interrupted', 'halted', 'crashed', 'failed'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

const inList = (values: readonly string[]): string => values.map((v) => `'${v}'`).join(', ');

export const MIGRATIONS: readonly string[] = [
  // 1: the documented tables and views.
  `
  CREATE TABLE jobs (
    id              INTEGER PRIMARY KEY,
    input_path      TEXT    NOT NULL,
    input_sha256    TEXT    NOT NULL,
    input_format    TEXT    NOT NULL,
    mapping_path    TEXT    NOT NULL,
    mapping_sha256  TEXT    NOT NULL,
    environment     TEXT    NOT NULL,
    operation       TEXT    NOT NULL CHECK (operation IN ('quote', 'lead')),
    base_url        TEXT,
    status          TEXT    NOT NULL CHECK (status IN (${inList(JOB_STATUSES)})),
    total_rows      INTEGER,
    created_at      TEXT    NOT NULL,
    finished_at     TEXT
  );
  CREATE INDEX jobs_identity ON jobs (input_sha256, mapping_sha256, environment, operation);

  CREATE TABLE runs (
    id            INTEGER PRIMARY KEY,
    job_id        INTEGER NOT NULL REFERENCES jobs (id),
    started_at    TEXT    NOT NULL,
    finished_at   TEXT,
    status        TEXT    NOT NULL CHECK (status IN (${inList(RUN_STATUSES)})),
    options_json  TEXT    NOT NULL,
    tool_version  TEXT    NOT NULL,
    pid           INTEGER,
    hostname      TEXT,
    heartbeat_at  TEXT
  );
  CREATE INDEX runs_job ON runs (job_id);

  CREATE TABLE rows (
    job_id             INTEGER NOT NULL REFERENCES jobs (id),
    row_number         INTEGER NOT NULL,
    row_key            TEXT,
    agent_email        TEXT,
    agent_id           TEXT,
    state              TEXT    NOT NULL CHECK (state IN (${inList(ROW_STATES)})),
    attempts           INTEGER NOT NULL DEFAULT 0,
    http_status        INTEGER,
    error_code         TEXT,
    error_message      TEXT,
    transaction_id     TEXT,
    quote_number       TEXT,
    total_premium      REAL,
    input_issues_json  TEXT,
    request_json       TEXT,
    response_json      TEXT,
    updated_at         TEXT    NOT NULL,
    PRIMARY KEY (job_id, row_number)
  ) WITHOUT ROWID;
  CREATE INDEX rows_key ON rows (job_id, row_key);
  CREATE INDEX rows_state ON rows (job_id, state);

  CREATE TABLE attempts (
    id           INTEGER PRIMARY KEY,
    job_id       INTEGER NOT NULL REFERENCES jobs (id),
    row_number   INTEGER,
    run_id       INTEGER NOT NULL REFERENCES runs (id),
    kind         TEXT    NOT NULL CHECK (kind IN ('agent_validate', 'quote', 'lead')),
    started_at   TEXT    NOT NULL,
    duration_ms  REAL    NOT NULL,
    http_status  INTEGER,
    error_code   TEXT,
    outcome      TEXT    NOT NULL,
    agent_email  TEXT
  );
  CREATE INDEX attempts_job ON attempts (job_id, kind);

  CREATE TABLE agents (
    environment  TEXT    NOT NULL,
    email        TEXT    NOT NULL,
    is_valid     INTEGER NOT NULL,
    agent_id     TEXT,
    message      TEXT,
    checked_at   TEXT    NOT NULL,
    job_id       INTEGER,
    PRIMARY KEY (environment, email)
  );

  CREATE VIEW job_summary AS
  SELECT
    j.id AS job_id,
    j.input_path,
    j.environment,
    j.operation,
    j.status,
    j.total_rows,
    COUNT(r.row_number) AS rows_recorded,
    COALESCE(SUM(r.state = 'pending'), 0)       AS pending,
    COALESCE(SUM(r.state = 'in_flight'), 0)     AS in_flight,
    COALESCE(SUM(r.state = 'succeeded'), 0)     AS succeeded,
    COALESCE(SUM(r.state = 'rejected'), 0)      AS rejected,
    COALESCE(SUM(r.state = 'agent_invalid'), 0) AS agent_invalid,
    COALESCE(SUM(r.state = 'invalid'), 0)       AS invalid,
    COALESCE(SUM(r.state = 'duplicate'), 0)     AS duplicate,
    COALESCE(SUM(r.state = 'failed'), 0)        AS failed,
    COALESCE(SUM(r.state = 'in_doubt'), 0)      AS in_doubt,
    ROUND(1.0 * COALESCE(SUM(r.state = 'succeeded'), 0) / NULLIF(COUNT(r.row_number), 0), 4) AS success_rate,
    j.created_at,
    j.finished_at,
    ROUND((julianday(COALESCE(j.finished_at, MAX(r.updated_at))) - julianday(j.created_at)) * 86400.0, 3)
      AS duration_seconds
  FROM jobs j
  LEFT JOIN rows r ON r.job_id = j.id
  GROUP BY j.id;

  CREATE VIEW row_outcomes AS
  SELECT
    r.job_id,
    j.input_path,
    j.environment,
    j.operation,
    r.row_number,
    r.row_key,
    r.state,
    r.agent_email,
    r.agent_id,
    r.attempts,
    r.http_status,
    r.error_code,
    r.error_message,
    r.transaction_id,
    r.quote_number,
    r.total_premium,
    r.updated_at
  FROM rows r
  JOIN jobs j ON j.id = r.job_id;
  `,
  // 2: where a resumed run may start reading. Every row before resume_row is in a final state,
  // and resume_row's record starts at byte resume_offset (line resume_line) of the decoded input.
  `
  ALTER TABLE jobs ADD COLUMN resume_row INTEGER;
  ALTER TABLE jobs ADD COLUMN resume_offset INTEGER;
  ALTER TABLE jobs ADD COLUMN resume_line INTEGER;
  CREATE INDEX rows_updated ON rows (job_id, updated_at);
  `,
  // 3: unattended operation and the partner's limit.
  // - rows.source_offset/source_line: where each row's record starts in the (decoded) input, so
  //   that `export --format source` can copy the lead source's own records back out.
  // - resolutions: what `resolve` decided for rows in doubt, with the operator's note.
  // - run_samples: one row per second of a run (adaptive concurrency, throughput, 429s), for the
  //   report's charts and for ops to see the limit the partner settled at.
  `
  ALTER TABLE rows ADD COLUMN source_offset INTEGER;
  ALTER TABLE rows ADD COLUMN source_line INTEGER;

  CREATE TABLE resolutions (
    id           INTEGER PRIMARY KEY,
    job_id       INTEGER NOT NULL REFERENCES jobs (id),
    row_number   INTEGER NOT NULL,
    from_state   TEXT    NOT NULL,
    to_state     TEXT    NOT NULL,
    note         TEXT,
    resolved_at  TEXT    NOT NULL
  );
  CREATE INDEX resolutions_job ON resolutions (job_id, row_number);

  CREATE TABLE run_samples (
    run_id             INTEGER NOT NULL REFERENCES runs (id),
    elapsed_ms         INTEGER NOT NULL,
    at                 TEXT    NOT NULL,
    concurrency_limit  REAL,
    in_flight          INTEGER NOT NULL,
    attempts           INTEGER NOT NULL,
    throttled          INTEGER NOT NULL,
    errors             INTEGER NOT NULL,
    rows_done          INTEGER NOT NULL,
    latency_p50_ms     REAL,
    PRIMARY KEY (run_id, elapsed_ms)
  ) WITHOUT ROWID;
  `,
  // 4: run_samples.pace_rate: the requests per second the adaptive limiter paced sends at (null when
  // it did not pace), so that the next run against a partner with a rate cap starts at its pace.
  `
  ALTER TABLE run_samples ADD COLUMN pace_rate REAL;
  `,
  // 5: row keys across jobs: a new job in uat or production records a row whose lead another job
  // already sent as a duplicate instead of sending it again (an input fixed in place is a new job).
  // rows_key_job is written when rows are inserted, in batches (a partial index of the sent rows
  // would be written at each outcome's commit: 25 µs a row). rows_key stays: a run of version 4
  // still working on the ledger prepares statements that name it.
  // rows.request_sha256: the SHA-256 of the body last sent for the row (uat, production), so that a
  // later job does not send again a request the partner rejected.
  // run_samples.in_flight_max: the most requests in flight at once during the sample (in_flight is
  // the count at its end: a run shorter than a second had only its last sample, with none in flight).
  `
  CREATE INDEX rows_key_job ON rows (row_key, job_id);
  ALTER TABLE rows ADD COLUMN request_sha256 TEXT;
  ALTER TABLE run_samples ADD COLUMN in_flight_max INTEGER;
  `,
  // 6: rows.sent_by_job, sent_by_row: for a row recorded duplicate because another job sent (or may
  // have sent) its lead, that job's row. A later lookup follows it, so that a row whose only evidence
  // was a row since resolved `pending` (the partner never had the lead) is not evidence any more;
  // rows written before (null) count as they did. rows_sent_by (partial: only such rows) finds the
  // rows that refer to a row `resolve` settles as pending.
  // runs.end_reason: why a run stopped or halted (the summary's "stopped" line), for `report` the
  // next morning; null for a run that ended normally, and before.
  // runs.retry_after_at: for a run halted by a Retry-After longer than --max-retry-after, when the
  // partner may be called again: a run of the same job started before then waits for it.
  `
  ALTER TABLE rows ADD COLUMN sent_by_job INTEGER;
  ALTER TABLE rows ADD COLUMN sent_by_row INTEGER;
  ALTER TABLE runs ADD COLUMN end_reason TEXT;
  ALTER TABLE runs ADD COLUMN retry_after_at TEXT;
  CREATE INDEX rows_sent_by ON rows (sent_by_job, sent_by_row) WHERE sent_by_job IS NOT NULL;
  `,
  // 7: jobs.input_reader: how the job's input is read, so that every run of a job numbers its rows
  // alike. 2: a CSV record whose quote ran on past its first line is read as that line, and the
  // lines after it as rows; null (a job begun before): as one record, as quote-batch read it then.
  `
  ALTER TABLE jobs ADD COLUMN input_reader INTEGER;
  `,
  // 8: run_samples.submits_answered: quote and lead attempts of the sample the partner answered (not
  // a transient failure; a 429 counts). Where the limit settled is read from the samples up to the
  // last one with such an answer: agent validations (the breaker's probes among them) can answer
  // while quotes fail, and their answers say nothing of the quotes' limit. Null before (the
  // sample's attempts less its errors stand in).
  `
  ALTER TABLE run_samples ADD COLUMN submits_answered INTEGER;
  `,
  // 9: the limit the partner announces in its headers (RateLimit-Policy, X-RateLimit-*, …).
  // run_samples.announced_rate: the requests per second it allowed at that second (null: none
  // announced, or not kept to and ignored); a second paced at it (pace_rate equal) was paced by it.
  // runs.announced_json: what the run read (headers, windows), whether it was distrusted, and when a
  // spent quota stopped the run (see AnnouncedSummary in src/partner/announced-limit.ts).
  `
  ALTER TABLE run_samples ADD COLUMN announced_rate REAL;
  ALTER TABLE runs ADD COLUMN announced_json TEXT;
  `,
];

export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * `jobs.input_reader` of a job begun now (see migration 7): 4, CR CR LF ends a CSV record too (a
 * file mixing it with CRLF or LF); 3, LF and CRLF both end a CSV record whichever the header ends
 * with; 2 (from schema 7 on), a CSV quote that ran on is read again as rows; null (before), neither.
 */
export const INPUT_READER = 4;

/** How a job reads its input, by its `input_reader`, so that every run of it numbers its rows alike (see `InputOptions`). */
export function inputReadingOf(inputReader: number | null): { rereadRunOnQuotes: boolean; anyLineEnd: boolean; crCrLf: boolean } {
  const v = inputReader ?? 0;
  return { rereadRunOnQuotes: v >= 2, anyLineEnd: v >= 3, crCrLf: v >= 4 };
}
