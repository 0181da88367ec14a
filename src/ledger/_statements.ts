/** The ledger's SQL, prepared once per connection (see Ledger). */
import type Database from 'better-sqlite3';
import { INPUT_READER, STOPPED_IN_FLIGHT } from './schema.js';

export const SQL = {
  latestJobOf:
    `SELECT * FROM jobs WHERE input_sha256 = ? AND mapping_sha256 = ? AND environment = ? AND operation = ?
     ORDER BY id DESC LIMIT 1`,
  getJob: 'SELECT * FROM jobs WHERE id = ?',
  latestJob: 'SELECT * FROM jobs ORDER BY id DESC LIMIT 1',
  insertJob:
    `INSERT INTO jobs (input_path, input_sha256, input_format, mapping_path, mapping_sha256, environment, operation,
       base_url, status, created_at, input_reader)
     VALUES (@input_path, @input_sha256, @input_format, @mapping_path, @mapping_sha256, @environment, @operation,
       @base_url, 'running', @created_at, ${INPUT_READER})`,
  setJobStatus: 'UPDATE jobs SET status = ?, finished_at = ? WHERE id = ?',
  setTotalRows: 'UPDATE jobs SET total_rows = ? WHERE id = ?',
  setResumePoint: 'UPDATE jobs SET resume_row = ?, resume_offset = ?, resume_line = ? WHERE id = ?',
  unfinishedJobsOf:
    `SELECT id FROM jobs WHERE input_sha256 = ? AND mapping_sha256 = ? AND environment = ? AND operation = ?
     AND status != 'completed'`,
  lastRunningRun: `SELECT * FROM runs WHERE job_id = ? AND status = 'running' ORDER BY id DESC LIMIT 1`,
  // A crashed run ended at its last sign of life (its latest sample, about one a second, or heartbeat), not when found.
  crashRunningRuns:
    `UPDATE runs SET status = 'crashed',
       finished_at = COALESCE(NULLIF(max(COALESCE((SELECT MAX(s.at) FROM run_samples s WHERE s.run_id = runs.id), ''), COALESCE(heartbeat_at, '')), ''), ?)
     WHERE job_id = ? AND status = 'running'`,
  insertRun:
    `INSERT INTO runs (job_id, started_at, status, options_json, tool_version, pid, hostname, heartbeat_at)
     VALUES (?, ?, 'running', ?, ?, ?, ?, ?)`,
  getRun: 'SELECT * FROM runs WHERE id = ?',
  runsOf: 'SELECT * FROM runs WHERE job_id = ? ORDER BY id',
  heartbeat: 'UPDATE runs SET heartbeat_at = ? WHERE id = ?',
  finishRun: 'UPDATE runs SET status = ?, finished_at = ?, end_reason = ?, retry_after_at = ? WHERE id = ?',
  // The latest time a run of the job was told to wait until (a halting Retry-After, or its quota's reset), if still to come.
  retryAfterOf:
    `SELECT id AS run_id, job_id, retry_after_at, json_extract(announced_json, '$.spent_until') IS NOT NULL AS quota FROM runs WHERE job_id = ? AND retry_after_at > ?
     ORDER BY retry_after_at DESC LIMIT 1`,
  // The request each row left in flight was an attempt: recorded (in doubt, error process_stopped) in
  // the run that marked it (the latest to start before the mark: a crashed run, or one that failed),
  // from its mark to that run's end (the time it was known in flight at least).
  inFlightAttempts:
    `INSERT INTO attempts (job_id, row_number, run_id, kind, started_at, duration_ms, http_status, error_code, outcome)
     SELECT r.job_id, r.row_number, u.id, j.operation, r.updated_at,
            COALESCE(max(0.0, (julianday(COALESCE(u.finished_at, u.heartbeat_at, @at)) - julianday(r.updated_at)) * 86400000.0), 0.0),
            NULL, '${STOPPED_IN_FLIGHT}', 'in_doubt'
       FROM rows r JOIN jobs j ON j.id = r.job_id
       JOIN runs u ON u.id = COALESCE(
         (SELECT id FROM runs WHERE job_id = r.job_id AND started_at <= r.updated_at ORDER BY started_at DESC, id DESC LIMIT 1),
         (SELECT MAX(id) FROM runs WHERE job_id = r.job_id))
      WHERE r.job_id = @job AND r.state = 'in_flight'`,
  inFlightToInDoubt:
    // The request in flight counts as an attempt: it may have reached the partner (its attempts of that
    // run, kept in memory until its outcome, are lost with the process: at least this one is known).
    `UPDATE rows SET state = @state, updated_at = @at, attempts = attempts + 1, error_message = COALESCE(error_message, @message)
     WHERE job_id = @job AND state = 'in_flight'`,
  rowStates: 'SELECT row_number, state FROM rows WHERE job_id = ?',
  maxRowNumber: 'SELECT MAX(row_number) AS n FROM rows WHERE job_id = ?',
  // INDEXED BY: without statistics the planner scans the job's rows for the NOT IN, which
  // makes every read slower than the last on a large file.
  hasRowKey:
    `SELECT 1 FROM rows INDEXED BY rows_key WHERE job_id = ? AND row_key = ? AND state NOT IN ('duplicate', 'invalid') LIMIT 1`,
  // Every candidate, earliest job first: a duplicate one counts only if what it points to still does (Ledger.sentByOtherJob).
  sentByOtherJob:
    `SELECT r.job_id, r.row_number, r.state, r.error_message, r.sent_by_job, r.sent_by_row FROM rows r INDEXED BY rows_key_job JOIN jobs j ON j.id = r.job_id
     WHERE r.row_key = ? AND r.job_id != ? AND j.environment = ? AND j.operation = ? AND r.row_key != 'row-' || r.row_number
       AND (r.state IN ('succeeded', 'in_doubt', 'in_flight') OR (r.state = 'duplicate' AND r.error_code = 'sent_by_other_job'))
     ORDER BY r.job_id`,
  sentByRow: 'SELECT state, error_code, error_message, sent_by_job, sent_by_row FROM rows WHERE job_id = ? AND row_number = ? AND row_key IS ?',
  hasOtherJob: 'SELECT 1 FROM jobs WHERE environment = ? AND operation = ? AND id != ? LIMIT 1',
  rejectedByOtherJob:
    `SELECT r.job_id, r.row_number, r.http_status, r.error_code, r.error_message FROM rows r INDEXED BY rows_key_job JOIN jobs j ON j.id = r.job_id
     WHERE r.row_key = ? AND r.job_id != ? AND r.state = 'rejected' AND r.request_sha256 = ? AND j.environment = ? AND j.operation = ?
     ORDER BY r.job_id DESC LIMIT 1`,
  insertRow:
    `INSERT INTO rows (job_id, row_number, row_key, agent_email, state, error_code, error_message, input_issues_json,
       source_offset, source_line, updated_at, sent_by_job, sent_by_row)
     VALUES (@job_id, @row_number, @row_key, @agent_email, @state, @error_code, @error_message, @input_issues_json,
       @source_offset, @source_line, @updated_at, @sent_by_job, @sent_by_row)`,
  markInFlight:
    `UPDATE rows SET state = 'in_flight', agent_id = COALESCE(?, agent_id), request_json = ?, request_sha256 = ?, updated_at = ?
     WHERE job_id = ? AND row_number = ?`,
  recordOutcome:
    `UPDATE rows SET state = @state, agent_id = COALESCE(@agent_id, agent_id), attempts = attempts + @attempts,
       http_status = @http_status, error_code = @error_code, error_message = @error_message,
       transaction_id = @transaction_id, quote_number = @quote_number, total_premium = @total_premium,
       input_issues_json = COALESCE(@input_issues_json, input_issues_json),
       request_json = COALESCE(@request_json, request_json), response_json = @response_json, updated_at = @updated_at,
       sent_by_job = @sent_by_job, sent_by_row = @sent_by_row
     WHERE job_id = @job_id AND row_number = @row_number`,
  putBack:
    `UPDATE rows SET state = ?, attempts = attempts + ?, updated_at = ? WHERE job_id = ? AND row_number = ?`,
  insertAttempt:
    `INSERT INTO attempts (job_id, row_number, run_id, kind, started_at, duration_ms, http_status, error_code, outcome, agent_email)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  countsByState: 'SELECT state, COUNT(*) AS n FROM rows WHERE job_id = ? GROUP BY state',
  insertRunSample:
    `INSERT OR REPLACE INTO run_samples (run_id, elapsed_ms, at, concurrency_limit, in_flight, attempts, throttled, errors,
       rows_done, latency_p50_ms, pace_rate, in_flight_max, submits_answered, announced_rate) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  recordAnnounced: 'UPDATE runs SET announced_json = ? WHERE id = ?',
  topErrors:
    `SELECT state, error_code, error_message, COUNT(*) AS n FROM rows
     WHERE job_id = ? AND state IN ('rejected', 'agent_invalid', 'invalid', 'failed', 'in_doubt')
     GROUP BY state, error_code, error_message ORDER BY n DESC, state LIMIT ?`,
  rowsInState: 'SELECT row_number, row_key, error_message FROM rows WHERE job_id = ? AND state = ? ORDER BY row_number LIMIT ?',
  getAgent: 'SELECT * FROM agents WHERE environment = ? AND email = ?',
  upsertAgent:
    `INSERT INTO agents (environment, email, is_valid, agent_id, message, checked_at, job_id)
     VALUES (@environment, @email, @is_valid, @agent_id, @message, @checked_at, @job_id)
     ON CONFLICT (environment, email) DO UPDATE SET is_valid = excluded.is_valid, agent_id = excluded.agent_id,
       message = excluded.message, checked_at = excluded.checked_at, job_id = excluded.job_id`,
};

export type LedgerStatements = Record<keyof typeof SQL, Database.Statement>;

export function prepareStatements(db: Database.Database): LedgerStatements {
  return Object.fromEntries(Object.entries(SQL).map(([name, sql]) => [name, db.prepare(sql)])) as LedgerStatements;
}
