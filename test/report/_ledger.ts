/**
 * Test ledgers for the report area: a real ledger file (created and migrated by `Ledger.open`) in
 * its own temp directory, filled by plain SQL inserts so each fixture states its figures directly.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { Ledger, ledgerSql, type SqlDb } from '../../src/ledger/index.js';

export interface TempLedger {
  dir: string;
  path: string;
  db: Database.Database;
  /** The same connection as the ledger's queries read it (`src/ledger/queries/`). */
  sql: SqlDb;
  /** Closes the writer connection (keeping the file) so read-only openers see a settled file. */
  close(): void;
  /** Closes and removes the temp directory. */
  remove(): void;
}

export function createTempLedger(name = 'quote-batch.db'): TempLedger {
  const dir = mkdtempSync(join(tmpdir(), 'qb-report-'));
  const path = join(dir, name);
  const ledger = Ledger.open(path);
  return {
    dir,
    path,
    db: ledger.db,
    sql: ledgerSql(ledger),
    close: () => ledger.close(),
    remove: () => {
      ledger.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const statements = new WeakMap<Database.Database, Map<string, Database.Statement>>();

/** Prepares `sql` once per connection (fixtures insert thousands of rows). */
function prepared(db: Database.Database, sql: string): Database.Statement {
  let cache = statements.get(db);
  if (cache === undefined) {
    cache = new Map();
    statements.set(db, cache);
  }
  let stmt = cache.get(sql);
  if (stmt === undefined) {
    stmt = db.prepare(sql);
    cache.set(sql, stmt);
  }
  return stmt;
}

export interface JobInsert {
  input_path?: string;
  input_format?: string;
  mapping_path?: string;
  environment?: string;
  operation?: string;
  base_url?: string | null;
  status: string;
  total_rows?: number | null;
  created_at: string;
  finished_at?: string | null;
  input_sha256?: string;
}

export function insertJob(db: Database.Database, job: JobInsert): number {
  const info = prepared(db, 
    `INSERT INTO jobs (input_path, input_sha256, input_format, mapping_path, mapping_sha256, environment, operation,
       base_url, status, total_rows, created_at, finished_at)
     VALUES (@input_path, @input_sha256, @input_format, @mapping_path, @mapping_sha256, @environment, @operation,
       @base_url, @status, @total_rows, @created_at, @finished_at)`,
  ).run({
    input_path: 'samples/leads.csv',
    input_format: 'csv',
    mapping_path: 'mappings/example-csv.yaml',
    environment: 'sandbox',
    operation: 'quote',
    base_url: 'http://127.0.0.1:4010',
    total_rows: null,
    finished_at: null,
    ...job,
    input_sha256: job.input_sha256 ?? `in-${job.created_at}`,
    mapping_sha256: 'map-sha',
  });
  return Number(info.lastInsertRowid);
}

export interface RunInsert {
  job_id: number;
  started_at: string;
  finished_at?: string | null;
  status: string;
  heartbeat_at?: string | null;
  options_json?: string;
}

export function insertRun(db: Database.Database, run: RunInsert): number {
  const info = prepared(db, 
    `INSERT INTO runs (job_id, started_at, finished_at, status, options_json, tool_version, pid, hostname, heartbeat_at)
     VALUES (@job_id, @started_at, @finished_at, @status, @options_json, '0.1.0', NULL, 'test-host', @heartbeat_at)`,
  ).run({ finished_at: null, heartbeat_at: null, options_json: '{}', ...run });
  return Number(info.lastInsertRowid);
}

export interface RowInsert {
  job_id: number;
  row_number: number;
  row_key?: string | null;
  agent_email?: string | null;
  agent_id?: string | null;
  state: string;
  attempts?: number;
  http_status?: number | null;
  error_code?: string | null;
  error_message?: string | null;
  transaction_id?: string | null;
  quote_number?: string | null;
  total_premium?: number | null;
  request_json?: string | null;
  updated_at: string;
  source_offset?: number | null;
  source_line?: number | null;
}

export function insertRow(db: Database.Database, row: RowInsert): void {
  prepared(
    db,
    `INSERT INTO rows (job_id, row_number, row_key, agent_email, agent_id, state, attempts, http_status, error_code,
       error_message, transaction_id, quote_number, total_premium, request_json, updated_at, source_offset, source_line)
     VALUES (@job_id, @row_number, @row_key, @agent_email, @agent_id, @state, @attempts, @http_status, @error_code,
       @error_message, @transaction_id, @quote_number, @total_premium, @request_json, @updated_at, @source_offset, @source_line)`,
  ).run({
    row_key: null, agent_email: null, agent_id: null, attempts: 0, http_status: null, error_code: null,
    error_message: null, transaction_id: null, quote_number: null, total_premium: null, request_json: null,
    source_offset: null, source_line: null,
    ...row,
  });
}

export interface SampleInsert {
  run_id: number;
  elapsed_ms: number;
  at: string;
  concurrency_limit: number | null;
  in_flight: number;
  attempts: number;
  throttled: number;
  errors: number;
  rows_done: number;
  latency_p50_ms: number | null;
  /** Quotes and leads answered; absent: null, as in a sample written before schema version 8. */
  submits_answered?: number | null;
}

export function insertSample(db: Database.Database, sample: SampleInsert): void {
  prepared(
    db,
    `INSERT INTO run_samples (run_id, elapsed_ms, at, concurrency_limit, in_flight, attempts, throttled, errors, rows_done, latency_p50_ms, submits_answered)
     VALUES (@run_id, @elapsed_ms, @at, @concurrency_limit, @in_flight, @attempts, @throttled, @errors, @rows_done, @latency_p50_ms, @submits_answered)`,
  ).run({ submits_answered: null, ...sample });
}

export interface AttemptInsert {
  job_id: number;
  row_number: number | null;
  run_id: number;
  kind: 'agent_validate' | 'quote' | 'lead';
  started_at: string;
  duration_ms: number;
  http_status: number | null;
  error_code?: string | null;
  outcome: string;
  agent_email?: string | null;
}

export function insertAttempt(db: Database.Database, a: AttemptInsert): void {
  prepared(
    db,
    `INSERT INTO attempts (job_id, row_number, run_id, kind, started_at, duration_ms, http_status, error_code, outcome, agent_email)
     VALUES (@job_id, @row_number, @run_id, @kind, @started_at, @duration_ms, @http_status, @error_code, @outcome, @agent_email)`,
  ).run({ error_code: null, agent_email: null, ...a });
}

export function insertAgent(
  db: Database.Database,
  a: { environment?: string; email: string; is_valid: boolean; agent_id?: string | null; message?: string | null; checked_at: string; job_id: number },
): void {
  prepared(
    db,
    `INSERT INTO agents (environment, email, is_valid, agent_id, message, checked_at, job_id)
     VALUES (@environment, @email, @is_valid, @agent_id, @message, @checked_at, @job_id)`,
  ).run({ environment: 'sandbox', agent_id: null, message: null, ...a, is_valid: a.is_valid ? 1 : 0 });
}

/** The sandbox's seeded PRNG (mulberry32), for the suite's own seeded choices. */
export { createRandom } from '../../src/sandbox/faults.js';

export const iso = (ms: number): string => new Date(ms).toISOString();
