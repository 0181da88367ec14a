/**
 * How several workers share one job on PostgreSQL (docs/ledger.md, "Several workers"): the input is
 * read in chunks of rows, in file order; a worker claims a chunk under its lease, and every write to
 * a row is fenced by the claim, so a worker that lost its claim (frozen past its lease, cut off from
 * the database) changes nothing. The design of pg-boss, River and Oban: `FOR UPDATE SKIP LOCKED` in
 * a CTE that an `UPDATE … RETURNING` claims from, a lease renewed on a timer, a fencing token in
 * every `WHERE`.
 *
 * - A chunk is claimable when nobody holds it, or its worker's lease (`runs.lease_until`, by the
 *   database's clock) has run out. Taking one over gives it (and its rows) a new claim id: the rows
 *   its dead worker had marked `in_flight` become what `stopped` says (`in_doubt`), never resent.
 * - New chunks come from the input's frontier (`jobs.frontier_*`): the worker that takes the job row
 *   `FOR UPDATE` reads the next rows of its copy of the file, and inserts them with their chunk and
 *   its claim in the same transaction; no other worker reads that part of the file meanwhile.
 */
import type pg from 'pg';
import type { AttemptRecord } from '../../partner/types.js';
import { STOPPED_IN_FLIGHT } from '../schema.js';
import type { NewRow, ResumePoint, RowChange } from '../types.js';
import { boundJson, boundKey, boundText, MAX_STORED_ID_CHARS } from '../limits.js';

/** A chunk a worker holds: rows `firstRow`…`lastRow` of the input, starting at `start`. */
export interface Claim {
  jobId: number;
  chunkNo: number;
  claimId: number;
  firstRow: number;
  lastRow: number;
  start: ResumePoint;
}

/** A claimed chunk, with the states its rows are in (a chunk taken over, or one this worker read). */
export interface ClaimedChunk extends Claim {
  /** Row number → state, for every row of the chunk. */
  states: Map<number, string>;
  /** True when the chunk was another worker's (its lease ran out). */
  takenOver: boolean;
  /** Rows of the dead worker's claim that were in flight, now `in_doubt`. */
  newlyInDoubt: number;
  /** The rows read, when this worker read the chunk from the input (its frontier): no need to read them again. */
  readRows?: unknown;
}

/** What the worker read at the frontier: the rows to insert (decided), where the next chunk starts, whether the input ended. */
export interface IntakeResult {
  rows: NewRow[];
  /** Where the row after the last one read starts. */
  end: ResumePoint;
  /** True when the input ended with these rows (no more chunks). */
  eof: boolean;
  /** Whatever the caller keeps of the rows read (the mapped requests), handed back with the claim. */
  readRows?: unknown;
}

/** What the frontier's reader may ask the ledger while it holds the frontier: keys already in the job. */
export interface IntakeLookups {
  /** Of these keys, those an earlier row of the job holds (in a state that counts: not duplicate or invalid). */
  keysSeen(keys: readonly string[]): Promise<Set<string>>;
}

/**
 * The condition of a fenced row write (`rows` is the row written; `$n` the claim's parameter): the
 * row is still under that claim, and the claim's worker's lease still runs, by the database's clock.
 */
export function fence(claimParam: string): string {
  return `rows.claim_id = ${claimParam} AND EXISTS (SELECT 1 FROM chunks c JOIN runs u ON u.id = c.run_id
    WHERE c.job_id = rows.job_id AND c.claim_id = ${claimParam} AND u.lease_until > now() AND u.status = 'running')`;
}

/** Rows left `in_flight` that a settle takes: a dead claim's chunk, the chunks a run lets go, or the whole job. */
export type InFlightScope =
  | { kind: 'chunk'; jobId: number; firstRow: number; lastRow: number; runId: number }
  | { kind: 'run'; jobId: number; runId: number }
  | { kind: 'job'; jobId: number };

/**
 * Rows of `scope` still `in_flight` become what `stopped` says, each with an attempt in the run that
 * sent it (its request may have reached the partner: docs/ledger.md). Returns how many were settled.
 */
export async function settleInFlight(client: pg.PoolClient, scope: InFlightScope, stopped: RowChange, at: string): Promise<number> {
  const { where, params, attemptRun, attemptParams, joinChunk } = inFlightRows(scope);
  await client.query(
    `INSERT INTO attempts (job_id, row_number, run_id, kind, started_at, duration_ms, http_status, error_code, outcome)
     SELECT r.job_id, r.row_number, ${attemptRun}, j.operation, r.updated_at, 0, NULL, '${STOPPED_IN_FLIGHT}', 'in_doubt'
       FROM rows r JOIN jobs j ON j.id = r.job_id ${joinChunk ? 'LEFT JOIN chunks c ON c.job_id = r.job_id AND c.claim_id = r.claim_id' : ''}
      WHERE ${where}`,
    attemptParams,
  );
  const n = params.length;
  const settled = await client.query(
    `UPDATE rows r SET state = $${n + 1}, updated_at = $${n + 2}, attempts = attempts + 1, error_message = COALESCE(error_message, $${n + 3}) WHERE ${where}`,
    [...params, stopped.state, at, boundText(stopped.errorMessage ?? null)],
  );
  return settled.rowCount ?? 0;
}

/**
 * The condition on `rows r`, the run each attempt is counted in, and the INSERT's parameters. Every condition starts with
 * `job_id`: it reads one job's part of `rows_state` (a chunk's range: of the primary key), not every job's (schema.ts).
 */
function inFlightRows(scope: InFlightScope): { where: string; params: number[]; attemptRun: string; attemptParams: number[]; joinChunk: boolean } {
  const inFlight = "r.job_id = $1 AND r.state = 'in_flight'";
  switch (scope.kind) {
    case 'chunk':
      return {
        where: `${inFlight} AND r.row_number BETWEEN $2 AND $3`, params: [scope.jobId, scope.firstRow, scope.lastRow],
        attemptRun: '$4', attemptParams: [scope.jobId, scope.firstRow, scope.lastRow, scope.runId], joinChunk: false,
      };
    case 'run':
      return {
        where: `${inFlight} AND r.claim_id IN (SELECT claim_id FROM chunks WHERE job_id = $1 AND run_id = $2 AND NOT done)`, params: [scope.jobId, scope.runId],
        attemptRun: '$2', attemptParams: [scope.jobId, scope.runId], joinChunk: false,
      };
    case 'job':
      // Nobody holds the job: the run of the chunk the row is under, else the job's last run.
      return {
        where: inFlight, params: [scope.jobId],
        attemptRun: 'COALESCE(c.run_id, (SELECT MAX(id) FROM runs WHERE job_id = r.job_id))', attemptParams: [scope.jobId], joinChunk: true,
      };
  }
}

/**
 * Claims the first chunk of the job nobody holds, or whose worker's lease ran out; null when there is
 * none. One transaction: the chunk and its rows get a new claim id; rows the dead claim left in flight
 * are settled as `stopped` says, with an attempt each (as the SQLite ledger does for a crashed run).
 */
export async function claimOpenChunk(
  client: pg.PoolClient, jobId: number, runId: number, known: readonly number[], stopped: RowChange, at: string,
): Promise<ClaimedChunk | null> {
  const claimed = await client.query<{ chunk_no: number; first_row: number; last_row: number; start_offset: number; start_line: number; claim_id: number; old_run: number | null }>(
    `WITH open AS (
       SELECT c.job_id, c.chunk_no, c.run_id AS old_run FROM chunks c LEFT JOIN runs u ON u.id = c.run_id
        WHERE c.job_id = $1 AND NOT c.done AND (c.claim_id IS NULL OR u.id IS NULL OR u.lease_until IS NULL OR u.lease_until < now() OR u.status <> 'running'
          -- Its own claim it does not know of: a commit that went through unanswered (a cut connection).
          OR (c.run_id = $2 AND NOT (c.claim_id = ANY($3::bigint[]))))
        ORDER BY c.chunk_no LIMIT 1 FOR UPDATE OF c SKIP LOCKED)
     UPDATE chunks SET claim_id = nextval('claim_ids'), run_id = $2
       FROM open WHERE chunks.job_id = open.job_id AND chunks.chunk_no = open.chunk_no
     RETURNING chunks.chunk_no, chunks.first_row, chunks.last_row, chunks.start_offset, chunks.start_line, chunks.claim_id, open.old_run`,
    [jobId, runId, known],
  );
  const chunk = claimed.rows[0];
  if (chunk === undefined) return null;
  // The dead claim's requests in flight: each an attempt, in the run that made it, until its lease ran out.
  let newlyInDoubt = 0;
  const oldRun = chunk.old_run;
  const takenOver = oldRun !== null && oldRun !== runId;
  if (takenOver) {
    newlyInDoubt = await settleInFlight(client, { kind: 'chunk', jobId, firstRow: chunk.first_row, lastRow: chunk.last_row, runId: oldRun }, stopped, at);
    // Its worker is gone: its run ended when its lease did.
    await client.query(
      `UPDATE runs SET status = 'crashed', finished_at = COALESCE(heartbeat_at, $2) WHERE id = $1 AND status = 'running' AND lease_until < now()`,
      [oldRun, at],
    );
  }
  const states = await client.query<{ row_number: number; state: string }>(
    `UPDATE rows SET claim_id = $4 WHERE job_id = $1 AND row_number BETWEEN $2 AND $3 RETURNING row_number, state`,
    [jobId, chunk.first_row, chunk.last_row, chunk.claim_id],
  );
  return {
    jobId, chunkNo: chunk.chunk_no, claimId: chunk.claim_id, firstRow: chunk.first_row, lastRow: chunk.last_row,
    start: { rowNumber: chunk.first_row, offset: chunk.start_offset, line: chunk.start_line },
    states: new Map(states.rows.map((r) => [r.row_number, r.state])),
    takenOver, newlyInDoubt,
  };
}

/**
 * Reads the next chunk at the input's frontier, holding the job row (`FOR UPDATE`) while `read` reads
 * it from this worker's file: inserts its rows, the chunk with this worker's claim, and moves the
 * frontier on, in one transaction. `exhausted` when the input has been read to its end.
 */
export async function claimFrontierChunk(
  client: pg.PoolClient,
  jobId: number,
  runId: number,
  read: (frontier: ResumePoint, lookups: IntakeLookups) => Promise<IntakeResult>,
  at: string,
): Promise<ClaimedChunk | 'exhausted'> {
  const job = await client.query<{ frontier_row: number; frontier_offset: number; frontier_line: number; total_rows: number | null }>(
    'SELECT frontier_row, frontier_offset, frontier_line, total_rows FROM jobs WHERE id = $1 FOR UPDATE',
    [jobId],
  );
  const frontier = job.rows[0];
  if (frontier === undefined || frontier.total_rows !== null) return 'exhausted';
  const start = { rowNumber: frontier.frontier_row, offset: frontier.frontier_offset, line: frontier.frontier_line };
  const lookups: IntakeLookups = {
    keysSeen: async (keys) => {
      if (keys.length === 0) return new Set();
      const found = await client.query<{ row_key: string }>(
        `SELECT DISTINCT row_key FROM rows WHERE job_id = $1 AND row_key = ANY($2::text[]) AND state NOT IN ('duplicate', 'invalid')`,
        [jobId, keys.map((k) => boundKey(k))],
      );
      return new Set(found.rows.map((r) => r.row_key));
    },
  };
  const intake = await read(start, lookups);
  if (intake.rows.length === 0) {
    await client.query('UPDATE jobs SET total_rows = $2, frontier_row = $3, frontier_offset = $4, frontier_line = $5 WHERE id = $1',
      [jobId, start.rowNumber - 1, intake.end.rowNumber, intake.end.offset, intake.end.line]);
    return 'exhausted';
  }
  const first = start.rowNumber;
  const last = first + intake.rows.length - 1;
  const claim = await client.query<{ claim_id: number; chunk_no: number }>(
    `INSERT INTO chunks (job_id, chunk_no, first_row, last_row, start_offset, start_line, claim_id, run_id)
     VALUES ($1, (SELECT COALESCE(MAX(chunk_no), 0) + 1 FROM chunks WHERE job_id = $1), $2, $3, $4, $5, nextval('claim_ids'), $6)
     RETURNING claim_id, chunk_no`,
    [jobId, first, last, start.offset, start.line, runId],
  );
  const { claim_id: claimId, chunk_no: chunkNo } = claim.rows[0] as { claim_id: number; chunk_no: number };
  await insertRows(client, jobId, intake.rows, claimId, at);
  await client.query(
    'UPDATE jobs SET frontier_row = $2, frontier_offset = $3, frontier_line = $4, total_rows = $5 WHERE id = $1',
    [jobId, intake.end.rowNumber, intake.end.offset, intake.end.line, intake.eof ? last : null],
  );
  return {
    jobId, chunkNo, claimId, firstRow: first, lastRow: last, start,
    states: new Map(intake.rows.map((r) => [r.rowNumber, r.state])), takenOver: false, newlyInDoubt: 0, readRows: intake.readRows,
  };
}

/** Inserts newly read rows under `claimId`, all in one statement. */
export async function insertRows(client: Pick<pg.PoolClient, 'query'>, jobId: number, rows: readonly NewRow[], claimId: number | null, at: string): Promise<void> {
  if (rows.length === 0) return;
  const col = <T>(f: (r: NewRow) => T): T[] => rows.map(f);
  await client.query(
    `INSERT INTO rows (job_id, row_number, row_key, agent_email, state, error_code, error_message, input_issues_json,
       source_offset, source_line, sent_by_job, sent_by_row, updated_at, claim_id)
     SELECT $1, * , $13, $14 FROM unnest($2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
       $9::bigint[], $10::int[], $11::int[], $12::int[])
       AS u(row_number, row_key, agent_email, state, error_code, error_message, input_issues_json, source_offset, source_line, sent_by_job, sent_by_row)`,
    [
      jobId, col((r) => r.rowNumber), col((r) => boundKey(r.rowKey)), col((r) => boundKey(r.agentEmail)), col((r) => r.state),
      col((r) => boundText(r.errorCode ?? null, MAX_STORED_ID_CHARS)), col((r) => boundText(r.errorMessage ?? null)), col((r) => boundJson(r.inputIssuesJson ?? null)),
      col((r) => r.sourceOffset ?? null), col((r) => r.sourceLine ?? null), col((r) => r.sentBy?.job_id ?? null), col((r) => r.sentBy?.row_number ?? null),
      at, claimId,
    ],
  );
}

/** Inserts attempts in one statement. */
export async function insertAttempts(
  client: Pick<pg.PoolClient, 'query'>, jobId: number, runId: number, rowNumber: number | null, attempts: readonly AttemptRecord[], agentEmail: string | null,
): Promise<void> {
  if (attempts.length === 0) return;
  const col = <T>(f: (a: AttemptRecord) => T): T[] => attempts.map(f);
  await client.query(
    `INSERT INTO attempts (job_id, row_number, run_id, kind, started_at, duration_ms, http_status, error_code, outcome, agent_email)
     SELECT $1, $2, $3, * , $10 FROM unnest($4::text[], $5::text[], $6::float8[], $7::int[], $8::text[], $9::text[])`,
    [
      jobId, rowNumber, runId, col((a) => a.kind), col((a) => a.startedAt), col((a) => a.durationMs), col((a) => a.httpStatus),
      col((a) => boundText(a.errorCode, MAX_STORED_ID_CHARS)), col((a) => a.outcome), boundKey(agentEmail),
    ],
  );
}
