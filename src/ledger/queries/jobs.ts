/** The jobs of a ledger: which exist, the latest, their counts (`job_summary`), the files they read. */
import type { SqlDb } from '../sql/db.js';
import type { JobStatus } from '../schema.js';

/** True when job `jobId` is in the ledger. */
export async function jobExists(db: SqlDb, jobId: number): Promise<boolean> {
  return (await db.value<number>('SELECT id FROM jobs WHERE id = ?', [jobId])) !== undefined;
}

/** The newest job's id; null when the ledger has none. */
export async function latestJobId(db: SqlDb): Promise<number | null> {
  return (await db.value<number | null>('SELECT MAX(id) FROM jobs')) ?? null;
}

/** One job as `job_summary` counts it (docs/ledger.md). */
export interface JobSummary {
  id: number;
  input_path: string;
  environment: string;
  operation: string;
  status: JobStatus;
  total_rows: number | null;
  rows_recorded: number;
  pending: number;
  in_flight: number;
  succeeded: number;
  rejected: number;
  agent_invalid: number;
  invalid: number;
  duplicate: number;
  failed: number;
  in_doubt: number;
  success_rate: number | null;
  created_at: string;
  finished_at: string | null;
}

/** Every job of the ledger with its counts, newest first. */
export function readJobSummaries(db: SqlDb): Promise<JobSummary[]> {
  return db.all<JobSummary>(
    `SELECT job_id AS id, input_path, environment, operation, status, total_rows, rows_recorded, pending, in_flight,
       succeeded, rejected, agent_invalid, invalid, duplicate, failed, in_doubt, success_rate, created_at, finished_at
     FROM job_summary ORDER BY job_id DESC`,
  );
}

/** A run still marked `running`, with what tells whether its process may be alive (`runMayBeAlive`). */
export interface RunningRun {
  job_id: number;
  pid: number | null;
  hostname: string | null;
  heartbeat_at: string | null;
}

/** The runs of every job still marked `running`. */
export function readRunningRuns(db: SqlDb): Promise<RunningRun[]> {
  return db.all<RunningRun>(`SELECT job_id, pid, hostname, heartbeat_at FROM runs WHERE status = 'running'`);
}

/** The input and mapping file of every job, by id (files an output must not replace). */
export function readJobFiles(db: SqlDb): Promise<{ id: number; input_path: string; mapping_path: string }[]> {
  return db.all('SELECT id, input_path, mapping_path FROM jobs ORDER BY id');
}
