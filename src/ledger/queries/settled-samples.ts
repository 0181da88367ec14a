/**
 * The samples a run's settled limit is taken from (the rules: `src/partner/settled-limit.ts`), for
 * the report's figure and for where the next run against the same partner starts (the warm start).
 *
 * Only samples up to a run's last answered one count: later ones (an outage that halted the run, a
 * breaker open until Ctrl-C, its probes answered or not) show our back-off, not the partner's
 * limit. A sample is answered when the partner answered a quote or lead in it (an answer other than
 * a transient failure; a 429 counts); before migration 8, any answer: its attempts less its errors.
 */
import type { SqlDb } from '../sql/db.js';

/** True (SQL) for an answered sample of alias `s`. */
const answered = (s: string): string => `COALESCE(${s}.submits_answered, ${s}.attempts - ${s}.errors) > 0`;

/** The elapsed time of the last answered sample of the run whose id is the SQL `run` (null: none). */
const answeredUntil = (run: string): string =>
  `(SELECT MAX(a.elapsed_ms) FROM run_samples a WHERE a.run_id = ${run} AND ${answered('a')})`;

/** One sample as the settled-limit rules read it (`LimitSample` and the pace; null: not pacing). */
export interface AnsweredSample {
  lim: number;
  inFlight: number;
  pushedBack: number;
  pace: number | null;
}

/** Of each run of the job the partner answered, how many samples with a limit it has up to its last answer, in run order. */
export function countAnsweredSamples(db: SqlDb, jobId: number): Promise<{ run_id: number; n: number }[]> {
  // The bound is worked out once per run: as a subquery of each sample it would be once per sample.
  return db.all(
    `WITH answered AS (SELECT run_id, MAX(elapsed_ms) AS until_ms FROM run_samples s
       WHERE run_id IN (SELECT id FROM runs WHERE job_id = ?) AND ${answered('s')} GROUP BY run_id)
     SELECT s.run_id, COUNT(*) AS n FROM answered JOIN run_samples s ON s.run_id = answered.run_id AND s.elapsed_ms <= answered.until_ms
       AND s.concurrency_limit IS NOT NULL
     GROUP BY s.run_id ORDER BY s.run_id`,
    [jobId],
  );
}

/** A run's samples with a limit, up to its last answer, in time order. */
export function readAnsweredSamples(db: SqlDb, runId: number): Promise<AnsweredSample[]> {
  return db.all(
    `SELECT concurrency_limit AS lim, in_flight AS "inFlight", throttled + errors AS "pushedBack", pace_rate AS pace
     FROM run_samples WHERE run_id = ? AND concurrency_limit IS NOT NULL AND elapsed_ms <= ${answeredUntil('?')} ORDER BY elapsed_ms`,
    [runId, runId],
  );
}

/** `options_json`'s `concurrency` (`--concurrency`, the most the run's limit could be) of a run; null when not a number. */
export async function readRunCeiling(db: SqlDb, runId: number): Promise<number | null> {
  return await db.value<number | null>(`SELECT ${db.dialect.jsonNumber('options_json', 'concurrency')} FROM runs WHERE id = ?`, [runId]) ?? null;
}

/**
 * The job's latest run that read a limit the partner announced (`runs.announced_json`, as that run
 * recorded it), with its answered samples in which an announced rate was in force (`announced`) and,
 * of those, the ones paced at it (`paced`: the pace at 99% of it or more). Null when no run read one.
 */
export async function readAnnouncedRun(db: SqlDb, jobId: number): Promise<{ run_id: number; announced_json: string; announced: number; paced: number } | null> {
  const run = await db.get<{ run_id: number; announced_json: string }>(
    'SELECT id AS run_id, announced_json FROM runs WHERE job_id = ? AND announced_json IS NOT NULL ORDER BY id DESC LIMIT 1',
    [jobId],
  );
  if (run === undefined) return null;
  const counts = await db.get<{ announced: number | string; paced: number | string | null }>(
    `SELECT COUNT(*) AS announced, SUM(CASE WHEN pace_rate >= 0.99 * announced_rate THEN 1 ELSE 0 END) AS paced FROM run_samples
     WHERE run_id = ? AND announced_rate IS NOT NULL AND elapsed_ms <= ${answeredUntil('?')}`,
    [run.run_id, run.run_id],
  );
  return { ...run, announced: Number(counts?.announced ?? 0), paced: Number(counts?.paced ?? 0) };
}

/** A partner as the runs sent to it: environment, operation and base URL (a trailing `/` or not). */
export interface PartnerIdentity {
  environment: string;
  operation: string;
  baseUrl: string;
}

/** The run a warm start learns from, and its answered samples. */
export interface WarmStartSamples {
  jobId: number;
  runId: number;
  /** Its `--concurrency`; null when not recorded. */
  ceiling: number | null;
  samples: AnsweredSample[];
}

/**
 * The run a new run against the same partner starts from (this job's or another's: tonight's new job
 * after last night's), with its answered samples. Only adaptive runs the partner answered count, and
 * not runs that halted (an outage, a refused key) or failed: their last limits say more about that
 * night than about the partner; nor, so, a run stopped (Ctrl-C, --max-runtime) while the partner never
 * answered. A run killed and not yet settled (still `running`) counts as the crash it was. Preferred:
 * the latest run with `minSamples` answered samples (a minute's), else the latest. Null when none.
 */
export async function readWarmStartSamples(db: SqlDb, partner: PartnerIdentity, minSamples: number): Promise<WarmStartSamples | null> {
  const { jsonFlag, jsonNumber } = db.dialect;
  const run = await db.get<{ run_id: number; job_id: number; ceiling: number | null }>(
    `SELECT run_id, job_id, ceiling FROM (
       SELECT r.id AS run_id, r.job_id AS job_id, ${jsonNumber('r.options_json', 'concurrency')} AS ceiling,
              (SELECT COUNT(*) FROM (SELECT 1 AS one FROM run_samples s WHERE s.run_id = r.id AND s.concurrency_limit IS NOT NULL
                                     AND s.elapsed_ms <= ${answeredUntil('r.id')} LIMIT ?) AS firsts) AS n
       FROM runs r JOIN jobs j ON j.id = r.job_id
       WHERE j.environment = ? AND j.operation = ? AND rtrim(j.base_url, '/') = rtrim(?, '/')
         AND r.status NOT IN ('halted', 'failed') AND ${jsonFlag('r.options_json', 'adaptive')} IS DISTINCT FROM 0) AS candidates
     WHERE n > 0 ORDER BY CASE WHEN n >= ? THEN 1 ELSE 0 END DESC, run_id DESC LIMIT 1`,
    [minSamples, partner.environment, partner.operation, partner.baseUrl, minSamples],
  );
  if (run === undefined) return null;
  return { jobId: run.job_id, runId: run.run_id, ceiling: run.ceiling, samples: await readAnsweredSamples(db, run.run_id) };
}
