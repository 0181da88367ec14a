/**
 * `resolve` and `prune` on the PostgreSQL ledger, with the SQLite ledger's meanings
 * (`../maintenance.ts`): a job "in use" is one a live worker holds (its lease runs), instead of one
 * whose lock file a live process holds. Each works in one transaction that holds the job's row, so a
 * worker starting meanwhile waits for it.
 */
import { QuoteBatchError } from '../../errors.js';
import { boundText } from '../limits.js';
import type { PruneCandidate, PruneOptions, PruneResult, ResolveRequest, ResolveResult } from '../maintenance.js';
import { countUnfinished, type JobStatus, type RowState } from '../schema.js';
import { settleInFlight } from './claims.js';
import type { PgLedger } from './ledger.js';
import type pg from 'pg';

const MAX_REOPEN_HOPS = 64;

async function liveWorkers(client: pg.PoolClient, jobId: number): Promise<number> {
  const found = await client.query<{ n: number }>(`SELECT COUNT(*) AS n FROM runs WHERE job_id = $1 AND status = 'running' AND lease_until > now()`, [jobId]);
  return found.rows[0]?.n ?? 0;
}

function inUse(jobId: number, what: string): QuoteBatchError {
  return new QuoteBatchError('E_JOB_LOCKED', `${what} is in use by a live quote-batch worker; nothing was done`, {
    hint: `wait for the job's workers to end (quote-batch jobs lists them), then try again (job ${jobId})`,
  });
}

/** The SQLite ledger's `resolveInDoubt`, on PostgreSQL: refused while a live worker holds the job. */
export async function resolveInDoubtPg(ledger: PgLedger, request: ResolveRequest): Promise<ResolveResult> {
  const { jobId, changes } = request;
  return ledger.transaction(async (client) => {
    const at = new Date().toISOString();
    const job = await client.query('SELECT id FROM jobs WHERE id = $1 FOR UPDATE', [jobId]);
    if (job.rows.length === 0) throw new QuoteBatchError('E_USAGE', `job ${jobId} is not in the ledger`);
    if ((await liveWorkers(client, jobId)) > 0) throw inUse(jobId, `job ${jobId}`);
    const named = request.rows;
    const all = named === 'all-in-doubt';
    const rows = all
      ? (await client.query<{ row_number: number }>(`SELECT row_number FROM rows WHERE job_id = $1 AND state = 'in_doubt' ORDER BY row_number`, [jobId])).rows.map((r) => r.row_number)
      : [...new Set(named)].sort((a, b) => a - b);
    // Workers whose lease ran out: crashed; the rows they left in flight, in doubt (nobody holds the job now).
    const crashed = await client.query(`UPDATE runs SET status = 'crashed', finished_at = COALESCE(heartbeat_at, $2) WHERE job_id = $1 AND status = 'running'`, [jobId, at]);
    const newlyInDoubt = await settleInFlight(client, { kind: 'job', jobId }, changes.stopped, at);
    await client.query(`UPDATE chunks SET claim_id = NULL, run_id = NULL WHERE job_id = $1 AND NOT done`, [jobId]);
    const settled = { crashedRuns: crashed.rowCount ?? 0, newlyInDoubt };
    if (!all) {
      const states = await client.query<{ row_number: number; state: RowState }>('SELECT row_number, state FROM rows WHERE job_id = $1 AND row_number = ANY($2::int[])', [jobId, rows]);
      const byRow = new Map(states.rows.map((r) => [r.row_number, r.state]));
      const refused = rows.map((row) => ({ row, state: byRow.get(row) ?? null })).filter((r) => r.state !== 'in_doubt');
      if (refused.length > 0) return { resolved: [], refused, ...settled, ...(await jobState(client, jobId)), reopened: [], notReopened: [] };
    }
    const { resolved } = changes;
    if (rows.length > 0) {
      await client.query('UPDATE rows SET state = $3, error_code = $4, error_message = $5, updated_at = $6 WHERE job_id = $1 AND row_number = ANY($2::int[])',
        [jobId, rows, resolved.state, resolved.errorCode ?? null, resolved.errorMessage ?? null, at]);
      await client.query(
        `INSERT INTO resolutions (job_id, row_number, from_state, to_state, note, resolved_at) SELECT $1, r, 'in_doubt', $3, $4, $5 FROM unnest($2::int[]) AS r`,
        [jobId, rows, resolved.state, boundText(request.note), at],
      );
    }
    const dependents = resolved.state === 'pending' && rows.length > 0 ? await reopenDependents(client, jobId, rows, request, at) : { reopened: [], notReopened: [] };
    // Rows to send again sit in chunks a worker already finished: open those chunks again.
    await client.query(
      `UPDATE chunks c SET done = false WHERE c.job_id = $1 AND c.done
         AND EXISTS (SELECT 1 FROM rows r WHERE r.job_id = c.job_id AND r.row_number BETWEEN c.first_row AND c.last_row AND r.state = 'pending')`,
      [jobId],
    );
    const after = await jobState(client, jobId);
    const everyRow = await client.query<{ ok: boolean }>('SELECT total_rows IS NOT NULL AND total_rows = (SELECT COUNT(*) FROM rows WHERE job_id = jobs.id) AS ok FROM jobs WHERE id = $1', [jobId]);
    const status: JobStatus = after.unfinished === 0 && everyRow.rows[0]?.ok === true ? 'completed' : after.jobStatus === 'completed' ? 'interrupted' : after.jobStatus === 'running' ? 'interrupted' : after.jobStatus;
    if (status !== after.jobStatus) await client.query('UPDATE jobs SET status = $2, finished_at = $3 WHERE id = $1', [jobId, status, status === 'completed' ? at : null]);
    return { resolved: rows, refused: [], ...settled, ...after, jobStatus: status, ...dependents };
  });
}

/** See the SQLite ledger's `reopenDependents`: rows of other jobs recorded duplicate on the word of rows now pending. */
async function reopenDependents(client: pg.PoolClient, jobId: number, rows: readonly number[], request: ResolveRequest, at: string): Promise<Pick<ResolveResult, 'reopened' | 'notReopened'>> {
  const reopened = new Map<number, number[]>();
  const notReopened = new Map<number, number[]>();
  const busy = new Map<number, boolean>();
  let frontier = rows.map((row) => ({ job_id: jobId, row_number: row }));
  for (let hop = 0; hop < MAX_REOPEN_HOPS && frontier.length > 0; hop += 1) {
    const next: { job_id: number; row_number: number }[] = [];
    for (const from of frontier) {
      const deps = await client.query<{ job_id: number; row_number: number }>(
        `SELECT job_id, row_number FROM rows WHERE sent_by_job = $1 AND sent_by_row = $2 AND state = 'duplicate' AND error_code = 'sent_by_other_job' ORDER BY job_id, row_number`,
        [from.job_id, from.row_number],
      );
      for (const dep of deps.rows) {
        if (dep.job_id === jobId) continue;
        if (!busy.has(dep.job_id)) busy.set(dep.job_id, (await liveWorkers(client, dep.job_id)) > 0);
        if (busy.get(dep.job_id) === true) {
          push(notReopened, dep.job_id, dep.row_number);
          continue;
        }
        const earlier = await client.query<{ row_key: string }>(
          `SELECT r1.row_key FROM rows r1 JOIN rows r2 ON r2.job_id = r1.job_id AND r2.row_key = r1.row_key
            WHERE r1.job_id = $1 AND r1.row_number = $2 AND r2.row_number < r1.row_number AND r2.state NOT IN ('duplicate', 'invalid')
            ORDER BY r2.row_number LIMIT 1`,
          [dep.job_id, dep.row_number],
        );
        const key = earlier.rows[0]?.row_key;
        const change = key === undefined ? request.changes.reopened : request.changes.repeatsEarlier(key);
        await client.query(
          'UPDATE rows SET state = $3, error_code = $4, error_message = $5, sent_by_job = NULL, sent_by_row = NULL, updated_at = $6 WHERE job_id = $1 AND row_number = $2',
          [dep.job_id, dep.row_number, change.state, change.errorCode ?? null, change.errorMessage ?? null, at],
        );
        if (key !== undefined) continue;
        await client.query(`INSERT INTO resolutions (job_id, row_number, from_state, to_state, note, resolved_at) VALUES ($1, $2, 'duplicate', $3, $4, $5)`,
          [dep.job_id, dep.row_number, change.state, `reopened: its lead's row ${from.row_number} of job ${from.job_id} was resolved pending (never sent)`, at]);
        push(reopened, dep.job_id, dep.row_number);
        next.push(dep);
      }
    }
    frontier = next;
  }
  for (const job of reopened.keys()) {
    await client.query(`UPDATE jobs SET status = 'interrupted', finished_at = NULL WHERE id = $1 AND status = 'completed'`, [job]);
    await client.query(
      `UPDATE chunks c SET done = false WHERE c.job_id = $1 AND c.done
         AND EXISTS (SELECT 1 FROM rows r WHERE r.job_id = c.job_id AND r.row_number BETWEEN c.first_row AND c.last_row AND r.state = 'pending')`,
      [job],
    );
  }
  const listed = (m: Map<number, number[]>): { jobId: number; rows: number[] }[] =>
    [...m].sort(([a], [b]) => a - b).map(([job, r]) => ({ jobId: job, rows: [...new Set(r)].sort((a, b) => a - b) }));
  return { reopened: listed(reopened), notReopened: listed(notReopened) };
}

function push(map: Map<number, number[]>, key: number, value: number): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

async function jobState(client: pg.PoolClient, jobId: number): Promise<{ jobStatus: JobStatus; unfinished: number; inDoubt: number; readToEnd: boolean }> {
  const job = (await client.query<{ status: JobStatus; total_rows: number | null }>('SELECT status, total_rows FROM jobs WHERE id = $1', [jobId])).rows[0];
  const counts = Object.fromEntries((await client.query<{ state: RowState; n: number }>('SELECT state, COUNT(*) AS n FROM rows WHERE job_id = $1 GROUP BY state', [jobId])).rows.map((r) => [r.state, r.n]));
  const full = { pending: 0, in_flight: 0, succeeded: 0, rejected: 0, agent_invalid: 0, invalid: 0, duplicate: 0, failed: 0, in_doubt: 0, ...counts } as Record<RowState, number>;
  return { jobStatus: job?.status ?? 'interrupted', unfinished: countUnfinished(full), inDoubt: full.in_doubt, readToEnd: job?.total_rows !== null && job?.total_rows !== undefined };
}

/** The SQLite ledger's `pruneJobs`, on PostgreSQL: a job a live worker holds is left; each job goes in one transaction. */
export async function pruneJobsPg(ledger: PgLedger, options: PruneOptions): Promise<PruneResult> {
  const cutoff = new Date((options.now ?? new Date()).getTime() - options.olderThanMs).toISOString();
  const eligible = `SELECT j.id, j.status, j.input_path, j.rows, GREATEST(j.created_at, COALESCE(j.finished_at, ''),
       COALESCE((SELECT MAX(GREATEST(started_at, COALESCE(finished_at, ''), COALESCE(heartbeat_at, ''))) FROM runs WHERE job_id = j.id), ''),
       COALESCE((SELECT MAX(resolved_at) FROM resolutions WHERE job_id = j.id), '')) AS last_activity
     FROM (SELECT *, (SELECT COUNT(*) FROM rows WHERE job_id = jobs.id) AS rows FROM jobs) j
     WHERE (j.status = 'completed' OR ? = 1) AND GREATEST(j.created_at, COALESCE(j.finished_at, ''),
       COALESCE((SELECT MAX(GREATEST(started_at, COALESCE(finished_at, ''), COALESCE(heartbeat_at, ''))) FROM runs WHERE job_id = j.id), ''),
       COALESCE((SELECT MAX(resolved_at) FROM resolutions WHERE job_id = j.id), '')) < ?`;
  const candidates = await ledger.sql.all<PruneCandidate>(`${eligible} ORDER BY j.id`, [options.includeUnfinished ? 1 : 0, cutoff]);
  const ids = new Set(candidates.map((c) => c.id));
  const keptForOlder: PruneCandidate[] = [];
  for (const job of candidates) {
    const older = await ledger.sql.all<{ id: number }>(
      `SELECT o.id FROM jobs o JOIN jobs j ON j.id = ? WHERE o.input_sha256 = j.input_sha256 AND o.mapping_sha256 = j.mapping_sha256
         AND o.environment = j.environment AND o.operation = j.operation AND o.id < j.id AND o.status <> 'completed'`, [job.id]);
    if (older.some((o) => !ids.has(o.id))) keptForOlder.push(job);
  }
  const kept = new Set(keptForOlder.map((j) => j.id));
  const toDrop = candidates.filter((j) => !kept.has(j.id));
  if (options.dryRun) return { cutoff, dropped: toDrop, inUse: [], keptForOlder };
  const dropped: PruneCandidate[] = [];
  const busy: PruneCandidate[] = [];
  for (const job of toDrop) {
    const done = await ledger.transaction(async (client) => {
      await client.query('SELECT id FROM jobs WHERE id = $1 FOR UPDATE', [job.id]);
      if ((await liveWorkers(client, job.id)) > 0) return 'busy' as const;
      let deleted = 0;
      for (const sql of [
        'DELETE FROM run_samples WHERE run_id IN (SELECT id FROM runs WHERE job_id = $1)',
        'DELETE FROM resolutions WHERE job_id = $1', 'DELETE FROM attempts WHERE job_id = $1', 'DELETE FROM chunks WHERE job_id = $1',
        'DELETE FROM partner_limits WHERE job_id = $1', 'DELETE FROM rows WHERE job_id = $1', 'DELETE FROM runs WHERE job_id = $1',
        'UPDATE agents SET job_id = NULL WHERE job_id = $1', 'DELETE FROM jobs WHERE id = $1',
      ]) {
        deleted += (await client.query(sql, [job.id])).rowCount ?? 0;
      }
      return deleted;
    });
    if (done === 'busy') {
      busy.push(job);
      continue;
    }
    options.onBatch?.({ jobId: job.id, deleted: done });
    dropped.push(job);
  }
  return { cutoff, dropped, inUse: busy, keptForOlder };
}
