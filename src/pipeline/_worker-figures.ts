/** Figures of a job a worker's summary gives, read from the PostgreSQL ledger. */
import type { PgLedger } from '../ledger/postgres/ledger.js';
import type { RunJobResult } from './run-job.js';

export async function byOtherJobsOf(ledger: PgLedger, jobId: number): Promise<RunJobResult['byOtherJobs']> {
  const counts = await ledger.sql.get<{ sent: number; rejected: number; in_doubt_there: number }>(
    `SELECT COALESCE(SUM(CASE WHEN r.state = 'duplicate' AND r.error_code = 'sent_by_other_job' THEN 1 ELSE 0 END), 0) AS sent,
       COALESCE(SUM(CASE WHEN r.state = 'rejected' AND r.attempts = 0 THEN 1 ELSE 0 END), 0) AS rejected,
       COALESCE(SUM(CASE WHEN o.state IN ('in_doubt', 'in_flight') THEN 1 ELSE 0 END), 0) AS in_doubt_there
     FROM rows r LEFT JOIN rows o ON r.error_code = 'sent_by_other_job' AND o.job_id = r.sent_by_job AND o.row_number = r.sent_by_row
     WHERE r.job_id = ? AND r.state IN ('duplicate', 'rejected')`, [jobId]);
  const jobs = await ledger.sql.all<{ job_id: number }>(
    `SELECT DISTINCT o.job_id FROM rows r JOIN rows o ON o.job_id = r.sent_by_job AND o.row_number = r.sent_by_row
     WHERE r.job_id = ? AND r.state = 'duplicate' AND r.error_code = 'sent_by_other_job' AND o.state IN ('in_doubt', 'in_flight') ORDER BY o.job_id`, [jobId]);
  return { sent: counts?.sent ?? 0, rejected: counts?.rejected ?? 0, in_doubt_there: counts?.in_doubt_there ?? 0, in_doubt_jobs: jobs.map((j) => j.job_id) };
}

export async function unreadableAnswersOf(ledger: PgLedger, jobId: number): Promise<number> {
  return (await ledger.sql.value<number>(
    `SELECT COUNT(*) FROM rows WHERE job_id = ? AND state = 'succeeded' AND input_issues_json LIKE '%"type":"unreadable_answer"%'`, [jobId])) ?? 0;
}
