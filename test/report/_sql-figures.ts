/**
 * Every figure of a report computed again by plain SQL, written independently of
 * `src/report/build-report.ts`, so a test can hold the JSON report against it figure by figure.
 */
import { hostname } from 'node:os';
import type Database from 'better-sqlite3';

type Db = Database.Database;

const one = <T>(db: Db, sql: string, ...params: unknown[]): T => db.prepare(sql).pluck().get(...params) as T;
const round = (v: number, d: number): number => Math.round(v * 10 ** d) / 10 ** d;

/** Nearest-rank percentile by SQL: ORDER BY … LIMIT 1 OFFSET ceil(p·n) − 1. */
function percentileSql(db: Db, from: string, column: string, p: number, params: unknown[]): number | null {
  return one<number | null>(
    db,
    `SELECT ${column} FROM ${from} ORDER BY ${column}
     LIMIT 1 OFFSET (SELECT MAX(CAST(ceil(${p} / 100.0 * COUNT(*)) AS INTEGER) - 1, 0) FROM ${from})`,
    ...params, ...params,
  ) ?? null;
}

function statsSql(db: Db, from: string, column: string, params: unknown[]) {
  const agg = db.prepare(`SELECT COUNT(*) AS count, MIN(${column}) AS min, MAX(${column}) AS max, AVG(${column}) AS mean FROM ${from}`)
    .get(...params) as { count: number; min: number | null; max: number | null; mean: number | null };
  return {
    count: agg.count,
    min: agg.min,
    median: percentileSql(db, from, column, 50, params),
    p90: percentileSql(db, from, column, 90, params),
    p95: percentileSql(db, from, column, 95, params),
    p99: percentileSql(db, from, column, 99, params),
    max: agg.max,
    mean: agg.mean === null ? null : round(agg.mean, 2),
  };
}

/** The report's figures (all but `generated_at`, histograms and completion buckets) by SQL. */
export function computeFiguresBySql(db: Db, jobId: number) {
  const job = db.prepare(
    `SELECT id, input_path, input_format, mapping_path, environment, operation, base_url, status, total_rows, created_at, finished_at
     FROM jobs WHERE id = ?`,
  ).get(jobId) as { status: string; process_gone?: boolean };
  const s = (state: string): number => one<number>(db, 'SELECT COUNT(*) FROM rows WHERE job_id = ? AND state = ?', jobId, state);
  const states = ['pending', 'in_flight', 'succeeded', 'rejected', 'agent_invalid', 'invalid', 'duplicate', 'failed', 'in_doubt'];
  const byState = Object.fromEntries(states.map((st) => [st, s(st)]));
  const total = one<number>(db, 'SELECT COUNT(*) FROM rows WHERE job_id = ?', jobId);
  const sent = s('succeeded') + s('rejected') + s('failed') + s('in_doubt');

  const kinds = ['agent_validate', 'quote', 'lead'] as const;
  const byKind = Object.fromEntries(kinds.map((kind) => {
    const attempts = one<number>(db, 'SELECT COUNT(*) FROM attempts WHERE job_id = ? AND kind = ?', jobId, kind);
    const subjects = kind === 'agent_validate'
      ? one<number>(db, 'SELECT COUNT(DISTINCT agent_email) FROM attempts WHERE job_id = ? AND kind = ?', jobId, kind)
      : one<number>(db, 'SELECT COUNT(DISTINCT row_number) FROM attempts WHERE job_id = ? AND kind = ?', jobId, kind);
    const byOutcome: Record<string, number> = {};
    for (const o of ['ok', 'rejected', 'forbidden', 'retryable', 'in_doubt']) {
      byOutcome[o] = one<number>(db, 'SELECT COUNT(*) FROM attempts WHERE job_id = ? AND kind = ? AND outcome = ?', jobId, kind, o);
    }
    return [kind, { attempts, subjects, retries: attempts - subjects, by_outcome: byOutcome }];
  }));
  const kindValues = Object.values(byKind);

  const attemptErrorsAll = db.prepare(
    `SELECT kind, http_status, error_code, outcome, COUNT(*) AS attempts FROM attempts
     WHERE job_id = ? AND outcome <> 'ok' GROUP BY 1, 2, 3, 4 ORDER BY 5 DESC, 1, 2, 3, 4`,
  ).all(jobId);

  const environment = one<string>(db, 'SELECT environment FROM jobs WHERE id = ?', jobId);
  const invalidAgents = db.prepare(
    `SELECT r.agent_email AS email,
       (SELECT message FROM agents a WHERE a.environment = ? AND a.email = r.agent_email) AS message,
       COUNT(*) AS blocked_rows
     FROM rows r WHERE r.job_id = ? AND r.state = 'agent_invalid' GROUP BY r.agent_email ORDER BY 3 DESC, 1`,
  ).all(environment, jobId);

  const premiumFrom = `(SELECT total_premium AS v FROM rows WHERE job_id = ? AND state = 'succeeded' AND total_premium IS NOT NULL)`;
  const latency = Object.fromEntries(kinds.map((kind) => [
    kind,
    statsSql(db, `(SELECT duration_ms AS v FROM attempts WHERE job_id = ? AND kind = '${kind}' AND error_code IS NOT 'process_stopped')`, 'v', [jobId]),
  ]));

  const runSeconds = one<number>(
    db,
    // In milliseconds, as the ledger keeps times; the runs of these jobs do not overlap (workers at once count once).
    `SELECT TOTAL((CAST(strftime('%s', COALESCE(finished_at, heartbeat_at, started_at)) AS INTEGER) * 1000 + CAST(substr(strftime('%f', COALESCE(finished_at, heartbeat_at, started_at)), 4) AS INTEGER))
       - (CAST(strftime('%s', started_at) AS INTEGER) * 1000 + CAST(substr(strftime('%f', started_at), 4) AS INTEGER))) / 1000.0 FROM runs WHERE job_id = ?`,
    jobId,
  );
  const done = total - s('pending') - s('in_flight');
  // A run still marked running lasts until its latest sample or heartbeat; it is gone when neither its
  // pid on this host nor a heartbeat of the last minute says it lives.
  const runs = (db.prepare(
    `SELECT id, started_at, finished_at, status, end_reason, tool_version, pid, hostname, heartbeat_at, last_sign,
       (julianday(COALESCE(finished_at, last_sign)) - julianday(started_at)) * 86400 AS seconds, "limit"
     FROM (SELECT *, (SELECT MAX(t) FROM (SELECT heartbeat_at AS t UNION ALL SELECT at FROM run_samples WHERE run_id = runs.id)) AS last_sign,
             json_extract(options_json, '$.limit') AS "limit"
           FROM runs WHERE job_id = ?)
     ORDER BY id`,
  ).all(jobId) as { seconds: number | null; status: string; pid: number | null; hostname: string | null; heartbeat_at: string | null; last_sign: string | null }[])
    .map(({ pid, hostname: host, heartbeat_at: beat, last_sign: lastSign, ...r }) => {
      const alive = (host === hostname() && pid !== null && pidAlive(pid)) || (beat !== null && Date.now() - Date.parse(beat) < 60_000);
      const gone = r.status === 'running' && !alive;
      return {
        ...r,
        seconds: r.seconds === null ? null : round(r.seconds, 3),
        process_gone: gone,
        last_seen_at: gone ? lastSign : null,
      };
    });
  const running = runs.filter((r) => r.status === 'running');
  job.process_gone = job.status === 'running' && running.length > 0 && running.every((r) => r.process_gone);

  return {
    job,
    rows: {
      total,
      by_state: byState,
      success_rate: total === 0 ? null : round(s('succeeded') / total, 4),
      sent_success_rate: sent === 0 ? null : round(s('succeeded') / sent, 4),
      by_other_jobs: {
        sent: one<number>(db, `SELECT COUNT(*) FROM rows WHERE job_id = ? AND state = 'duplicate' AND error_code = 'sent_by_other_job'`, jobId),
        rejected: one<number>(db, `SELECT COUNT(*) FROM rows WHERE job_id = ? AND state = 'rejected' AND attempts = 0`, jobId),
        in_doubt_there: one<number>(db, `SELECT COUNT(*) FROM rows r WHERE r.job_id = ? AND r.state = 'duplicate' AND r.error_code = 'sent_by_other_job'
          AND EXISTS (SELECT 1 FROM rows o WHERE o.job_id = r.sent_by_job AND o.row_number = r.sent_by_row AND o.state IN ('in_doubt', 'in_flight'))`, jobId),
        in_doubt_jobs: (db.prepare(`SELECT DISTINCT sent_by_job FROM rows r WHERE r.job_id = ? AND r.error_code = 'sent_by_other_job'
          AND EXISTS (SELECT 1 FROM rows o WHERE o.job_id = r.sent_by_job AND o.row_number = r.sent_by_row AND o.state IN ('in_doubt', 'in_flight'))
          ORDER BY sent_by_job`).pluck().all(jobId) as number[]),
      },
      unreadable_answers: (db.prepare(`SELECT input_issues_json FROM rows WHERE job_id = ? AND state = 'succeeded' AND input_issues_json IS NOT NULL`)
        .pluck().all(jobId) as string[]).filter((text) => (JSON.parse(text) as { type?: string }[]).some((issue) => issue.type === 'unreadable_answer')).length,
    },
    attempts: {
      total: one<number>(db, 'SELECT COUNT(*) FROM attempts WHERE job_id = ?', jobId),
      retries: kindValues.reduce((a, k) => a + k.retries, 0),
      rows_retried: one<number>(
        db,
        `SELECT COUNT(*) FROM rows r WHERE r.job_id = ?
         AND (SELECT COUNT(*) FROM attempts a WHERE a.job_id = r.job_id AND a.row_number = r.row_number AND a.kind IN ('quote', 'lead')) > 1`,
        jobId,
      ),
      by_kind: byKind,
    },
    attempt_errors: attemptErrorsAll.slice(0, 100),
    attempt_error_groups: attemptErrorsAll.length,
    invalid_agents: invalidAgents,
    premium: statsSql(db, premiumFrom, 'v', [jobId]),
    latency_ms: latency,
    timing: {
      elapsed_seconds: one<number | null>(db, 'SELECT duration_seconds FROM job_summary WHERE job_id = ?', jobId),
      run_seconds: round(runSeconds, 3),
      rows_completed: done,
      rows_per_second: runSeconds > 0 ? round(done / runSeconds, 2) : null,
    },
    runs,
  };
}

/** Rows in an error state per state and error code (`state|code`), which the kinds of a state and code add up to. */
export function errorRowsBySql(db: Db, jobId: number): Record<string, number> {
  const rows = db.prepare(
    `SELECT state || '|' || COALESCE(error_code, '') AS k, COUNT(*) AS n FROM rows
     WHERE job_id = ? AND state IN ('rejected', 'agent_invalid', 'invalid', 'failed', 'in_doubt') GROUP BY 1`,
  ).all(jobId) as { k: string; n: number }[];
  return Object.fromEntries(rows.map((r) => [r.k, r.n]));
}

/**
 * The partner figures by SQL, and the settled limit as docs/ledger.md defines it: a run's samples
 * with a limit, up to its last one with a quote or lead answered (submits_answered > 0; before
 * schema 8, attempts > errors); the run is the latest with at least 60 of them (else the one with
 * the most), the limit the lower median of its last max(10, ceil(n/4)).
 */
export function partnerBySql(db: Db, jobId: number) {
  const ofJob = 'run_id IN (SELECT id FROM runs WHERE job_id = ?)';
  const answered = `concurrency_limit IS NOT NULL AND elapsed_ms <= (SELECT MAX(a.elapsed_ms) FROM run_samples a
    WHERE a.run_id = run_samples.run_id AND COALESCE(a.submits_answered, a.attempts - a.errors) > 0)`;
  const perRun = db.prepare(`SELECT run_id, COUNT(*) AS n FROM run_samples WHERE ${ofJob} AND ${answered} GROUP BY run_id ORDER BY run_id`)
    .all(jobId) as { run_id: number; n: number }[];
  const long = perRun.filter((r) => r.n >= 60);
  const chosen = long.length > 0 ? long[long.length - 1] : [...perRun].sort((a, b) => b.n - a.n || b.run_id - a.run_id)[0];
  let limits: number[] = [];
  let paces: number[] = [];
  if (chosen !== undefined) {
    const all = db.prepare(`SELECT concurrency_limit AS lim, pace_rate AS pace FROM run_samples WHERE run_id = ? AND ${answered} ORDER BY elapsed_ms`)
      .all(chosen.run_id) as { lim: number | null; pace: number | null }[];
    const last = all.slice(-Math.max(10, Math.ceil(all.length / 4)));
    limits = last.flatMap((x) => (x.lim === null ? [] : [x.lim])).sort((a, b) => a - b);
    // The pace: only when it was pacing in at least half of those samples.
    const paced = last.flatMap((x) => (x.pace === null ? [] : [x.pace])).sort((a, b) => a - b);
    paces = paced.length * 2 >= last.length ? paced : [];
  }
  const ceiling = chosen === undefined || limits.length === 0 ? null
    : one<number | null>(db, `SELECT json_extract(options_json, '$.concurrency') FROM runs WHERE id = ?`, chosen.run_id);
  const settledLimit = limits.length === 0 ? null : limits[Math.ceil(limits.length / 2) - 1] as number;
  // Held by our side: below the ceiling, no 429 or failure in the run's answered samples, and
  // fewer than half of them with half the limit in flight.
  let heldByRun = false;
  if (chosen !== undefined && settledLimit !== null && (ceiling === null || settledLimit < ceiling)) {
    const use = db.prepare(`SELECT TOTAL(throttled + errors) AS pushed, TOTAL(in_flight >= concurrency_limit / 2.0) AS inUse, COUNT(*) AS n
      FROM run_samples WHERE run_id = ? AND concurrency_limit IS NOT NULL AND ${answered}`).get(chosen.run_id) as { pushed: number; inUse: number; n: number };
    heldByRun = use.pushed === 0 && use.inUse * 2 < use.n;
  }
  const attempts = one<number>(db, "SELECT COUNT(*) FROM attempts WHERE job_id = ? AND error_code IS NOT 'process_stopped'", jobId);
  const throttled = one<number>(db, 'SELECT COUNT(*) FROM attempts WHERE job_id = ? AND http_status = 429', jobId);
  return {
    samples: one<number>(db, `SELECT COUNT(*) FROM run_samples WHERE ${ofJob}`, jobId),
    settled_limit: settledLimit,
    settled_run_id: chosen?.run_id ?? null,
    settled_samples: limits.length,
    settled_pace: paces.length === 0 ? null : paces[Math.ceil(paces.length / 2) - 1],
    settled_ceiling: ceiling,
    settled_held_by_run: heldByRun,
    limit_max: one<number | null>(db, `SELECT MAX(concurrency_limit) FROM run_samples WHERE ${ofJob}`, jobId),
    in_flight_max: one<number | null>(db, `SELECT MAX(COALESCE(in_flight_max, in_flight)) FROM run_samples WHERE ${ofJob}`, jobId),
    attempts,
    throttled,
    throttled_share: attempts === 0 ? null : round(throttled / attempts, 4),
    announced: announcedBySql(db, jobId),
  };
}

/**
 * What the partner announced (docs/ledger.md, `runs.announced_json`): the latest run of the job that
 * recorded it, and its answered samples with an announced rate, and of those the ones paced at it.
 */
function announcedBySql(db: Db, jobId: number): Record<string, unknown> | null {
  const run = db.prepare('SELECT id, announced_json FROM runs WHERE job_id = ? AND announced_json IS NOT NULL ORDER BY id DESC LIMIT 1').get(jobId) as
    { id: number; announced_json: string } | undefined;
  if (run === undefined) return null;
  const recorded = JSON.parse(run.announced_json) as Record<string, unknown>;
  const counts = db.prepare(`SELECT COUNT(*) AS n, TOTAL(pace_rate >= 0.99 * announced_rate) AS paced FROM run_samples WHERE run_id = ? AND announced_rate IS NOT NULL
    AND elapsed_ms <= (SELECT MAX(a.elapsed_ms) FROM run_samples a WHERE a.run_id = ? AND COALESCE(a.submits_answered, a.attempts - a.errors) > 0)`)
    .get(run.id, run.id) as { n: number; paced: number };
  const { headers, windows, rate, distrusted_after_ms, throttled_under, answers_under, spent_until } = recorded;
  return { run_id: run.id, headers, windows, rate, distrusted_after_ms, throttled_under, answers_under, spent_until, announced_seconds: counts.n, paced_seconds: counts.paced };
}

/** For each histogram bin, the number of values in it by SQL (half-open bins, the last closed). */
export function countBinsBySql(db: Db, from: string, params: unknown[], bins: readonly { from: number; to: number }[]): number[] {
  return bins.map((bin, i) => one<number>(
    db,
    `SELECT COUNT(*) FROM ${from} WHERE v >= ? AND v ${i === bins.length - 1 ? '<=' : '<'} ?`,
    ...params, bin.from, bin.to,
  ));
}

/** `updated_at` of the job's rows that are no longer pending or in flight, as epoch ms. */
export function completionTimesBySql(db: Db, jobId: number): number[] {
  return (db.prepare(`SELECT updated_at FROM rows WHERE job_id = ? AND state NOT IN ('pending', 'in_flight')`).pluck().all(jobId) as string[])
    .map((t) => Date.parse(t));
}

/**
 * The mean pace of each timeline bucket by SQL, per run in run order: a sample belongs to the bucket
 * its middle falls in (it covers the time since the run's previous sample), clamped to the run's
 * buckets; only samples with a pace count, and a bucket with none has null.
 */
export function bucketPacesBySql(
  db: Db, timeline: { bucket_seconds: number; segments: readonly { run_id: number; start: string; buckets: readonly unknown[] }[] },
): (number | null)[][] {
  const w = timeline.bucket_seconds * 1000;
  const samples = db.prepare(`
    SELECT at, elapsed_ms - COALESCE(LAG(elapsed_ms) OVER (ORDER BY elapsed_ms), 0) AS covered, pace_rate AS pace
    FROM run_samples WHERE run_id = ?`);
  return timeline.segments.map((segment) => {
    const start = Date.parse(segment.start);
    const last = segment.buckets.length - 1;
    const sums = segment.buckets.map(() => ({ sum: 0, n: 0 }));
    for (const { at, covered, pace } of samples.all(segment.run_id) as { at: string; covered: number; pace: number | null }[]) {
      if (pace === null) continue;
      const bucket = sums[Math.min(Math.max(Math.floor((Date.parse(at) - covered / 2 - start) / w), 0), last)];
      if (bucket === undefined) continue;
      bucket.sum += pace;
      bucket.n += 1;
    }
    return sums.map((b) => (b.n === 0 ? null : round(b.sum / b.n, 2)));
  });
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
