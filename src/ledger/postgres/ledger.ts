/**
 * The PostgreSQL ledger: the SQLite ledger's tables and meanings in a database that several hosts
 * share (docs/ledger.md, "PostgreSQL"). A job is worked by every `run` started on it: each is a
 * worker (a row of `runs`) with a lease it renews; rows are claimed in chunks (`claims.ts`), and
 * every write to a row is fenced by its claim. Nothing here holds a transaction open across a call
 * to the partner: the pipeline awaits the network, then records.
 */
import { hostname } from 'node:os';
import type pg from 'pg';
import { QuoteBatchError } from '../../errors.js';
import type { AnnouncedSummary } from '../../partner/announced-limit.js';
import type { AttemptRecord } from '../../partner/types.js';
import { boundKey, boundText, MAX_STORED_ID_CHARS } from '../limits.js';
import { ROW_STATES, type JobStatus, type RowState, type RunStatus } from '../schema.js';
import type {
  AgentRecord, JobIdentity, JobRecord, RejectedRow, RowChange, RunRecord, RunSample, SentRow,
} from '../types.js';
import { claimFrontierChunk, claimOpenChunk, insertAttempts, insertRows, settleInFlight, type ClaimedChunk, type IntakeLookups, type IntakeResult } from './claims.js';
import { openPool, pgFault, PgDb } from './db.js';
import { parsePgTarget, type PgTarget } from './target.js';
import { migrate } from './migrate.js';
import { commitRowWritesOn, sentByOtherJobOn, writtenByOneStatement, type FencedRowResult, type FencedRowWrite } from './row-writes.js';

export type { FencedRowWrite } from './row-writes.js';

const now = (): string => new Date().toISOString();

export class PgLedger {
  readonly backend = 'postgres' as const;
  /** The ledger as it may be shown: the connection string without its password. */
  readonly path: string;
  readonly sql: PgDb;
  readonly #pool: pg.Pool;
  readonly #target: PgTarget;
  #retryForMs = 0;

  private constructor(target: PgTarget, pool: pg.Pool) {
    this.#target = target;
    this.#pool = pool;
    this.path = target.display;
    this.sql = new PgDb(pool, target);
  }

  /** Connects and (unless `readonly`) creates or migrates the schema. */
  static async open(connectionString: string, options: { readonly?: boolean; poolSize?: number; retryForMs?: number } = {}): Promise<PgLedger> {
    const target = parsePgTarget(connectionString);
    const pool = openPool(target, { max: options.poolSize ?? 4 });
    const ledger = new PgLedger(target, pool);
    ledger.retryFor(options.retryForMs ?? 0);
    try {
      await ledger.#withClient((client) => migrate(client, target, { readonly: options.readonly === true }));
    } catch (error) {
      await pool.end().catch(() => {});
      throw pgFault(error, target);
    }
    return ledger;
  }

  async close(): Promise<void> {
    await this.#pool.end().catch(() => {});
  }

  /**
   * Runs `fn` on a connection of the pool. A failure of the connection itself (the server restarting,
   * a connection cut) is tried again on a new one until {@link retryFor} has passed: every write of a
   * worker is written to be sent again safely (a claim is adopted again, a row write names the state it
   * expects), and a read is a read.
   */
  async #withClient<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const deadline = performance.now() + this.#retryForMs;
    for (let pause = 100; ; pause = Math.min(pause * 2, 2000)) {
      let client: pg.PoolClient | undefined;
      try {
        client = await this.#pool.connect();
        const result = await fn(client);
        client.release();
        return result;
      } catch (error) {
        // A broken connection is not given back to the pool.
        client?.release(error instanceof Error ? error : true);
        if (!isTransient(error) || performance.now() + pause > deadline) throw pgFault(error, this.#target);
        await new Promise((resolve) => setTimeout(resolve, pause));
      }
    }
  }

  /** Tries statements the server did not take again for this long (a run's workers: within their lease); 0: never. */
  retryFor(ms: number): void {
    this.#retryForMs = ms;
  }

  /** Runs `fn` in one transaction (rolled back when it throws; tried again as {@link #withClient} says). */
  async transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return this.#withClient(async (client) => {
      await client.query('BEGIN');
      try {
        const result = await fn(client);
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      }
    });
  }

  async #query<T extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<T[]> {
    return this.#withClient(async (client) => (await client.query<T>(sql, params)).rows);
  }

  // --- jobs -------------------------------------------------------------------------------

  async latestJobOf(identity: JobIdentity): Promise<JobRecord | undefined> {
    return (await this.#query<JobRecord>(
      `SELECT * FROM jobs WHERE input_sha256 = $1 AND mapping_sha256 = $2 AND environment = $3 AND operation = $4 ORDER BY id DESC LIMIT 1`,
      [identity.inputSha256, identity.mappingSha256, identity.environment, identity.operation],
    ))[0];
  }

  async getJob(id: number): Promise<JobRecord | undefined> {
    return (await this.#query<JobRecord>('SELECT * FROM jobs WHERE id = $1', [id]))[0];
  }

  /**
   * The newest job of this identity, unless it is completed, or a new one: several workers started
   * at once on the same file all find the same job (an advisory lock on the identity orders them).
   * `fresh`: a new job whatever there is (`--fresh`).
   */
  async joinOrCreateJob(
    job: Omit<JobRecord, 'id' | 'status' | 'total_rows' | 'created_at' | 'finished_at' | 'resume_row' | 'resume_offset' | 'resume_line' | 'input_reader'>,
    inputReader: number,
    fresh: boolean,
  ): Promise<{ job: JobRecord; created: boolean }> {
    return this.transaction(async (client) => {
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`quote-batch:${job.input_sha256}:${job.mapping_sha256}:${job.environment}:${job.operation}`]);
      if (!fresh) {
        const found = (await client.query<JobRecord>(
          `SELECT * FROM jobs WHERE input_sha256 = $1 AND mapping_sha256 = $2 AND environment = $3 AND operation = $4 ORDER BY id DESC LIMIT 1`,
          [job.input_sha256, job.mapping_sha256, job.environment, job.operation],
        )).rows[0];
        if (found !== undefined && found.status !== 'completed') return { job: found, created: false };
      }
      const created = (await client.query<JobRecord>(
        `INSERT INTO jobs (input_path, input_sha256, input_format, mapping_path, mapping_sha256, environment, operation, base_url, status, created_at, input_reader)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'running', $9, $10) RETURNING *`,
        [job.input_path, job.input_sha256, job.input_format, job.mapping_path, job.mapping_sha256, job.environment, job.operation, job.base_url, now(), inputReader],
      )).rows[0] as JobRecord;
      return { job: created, created: true };
    });
  }

  async setJobStatus(jobId: number, status: JobStatus): Promise<void> {
    await this.#query('UPDATE jobs SET status = $1, finished_at = $2 WHERE id = $3', [status, status === 'completed' ? now() : null, jobId]);
  }

  // --- workers ----------------------------------------------------------------------------

  /**
   * Starts a worker (a run) of `jobId` with a lease of `leaseMs`: runs of the job whose lease ran out
   * are `crashed` (their rows are settled when their chunks are taken over). Returns the run and how
   * many workers of the job are live, this one included.
   */
  async startWorker(jobId: number, optionsJson: string, toolVersion: string, leaseMs: number): Promise<{ run: RunRecord; crashedRuns: number; workers: number }> {
    return this.transaction(async (client) => {
      const at = now();
      const crashed = await client.query(
        `UPDATE runs SET status = 'crashed', finished_at = COALESCE(heartbeat_at, $2) WHERE job_id = $1 AND status = 'running' AND (lease_until IS NULL OR lease_until < now())`,
        [jobId, at],
      );
      const run = (await client.query<RunRecord>(
        `INSERT INTO runs (job_id, started_at, status, options_json, tool_version, pid, hostname, heartbeat_at, lease_until)
         VALUES ($1, $2, 'running', $3, $4, $5, $6, $2, now() + $7 * interval '1 millisecond') RETURNING *`,
        [jobId, at, optionsJson, toolVersion, process.pid, hostname(), leaseMs],
      )).rows[0] as RunRecord;
      await client.query(`UPDATE jobs SET status = 'running', finished_at = NULL WHERE id = $1`, [jobId]);
      const live = await client.query<{ n: number }>(`SELECT COUNT(*) AS n FROM runs WHERE job_id = $1 AND status = 'running' AND lease_until > now()`, [jobId]);
      return { run, crashedRuns: crashed.rowCount ?? 0, workers: live.rows[0]?.n ?? 1 };
    });
  }

  /**
   * Renews this worker's lease for `leaseMs` more, by the database's clock; false when it is lost
   * (the run was found dead and taken over meanwhile). Also its heartbeat, for `report`.
   */
  async renewLease(runId: number, leaseMs: number): Promise<{ renewed: boolean; workers: number }> {
    const rows = await this.#query<{ workers: number }>(
      `UPDATE runs SET lease_until = now() + $2 * interval '1 millisecond', heartbeat_at = $3 WHERE id = $1 AND status = 'running'
       RETURNING (SELECT COUNT(*) FROM runs o WHERE o.job_id = runs.job_id AND o.status = 'running' AND o.lease_until > now()) AS workers`,
      [runId, leaseMs, now()],
    );
    return { renewed: rows.length === 1, workers: rows[0]?.workers ?? 0 };
  }

  /**
   * Records how this worker's run ended; its claims are let go at once (another worker may take its
   * chunks). Rows it leaves in flight (an outcome the database refused, the run failing) become what
   * `stopped` says, with an attempt each, as a dead worker's do when its chunk is taken over: a chunk
   * let go is claimed without that, and its rows in flight would be sent again.
   */
  async finishRun(runId: number, status: RunStatus, stopped: RowChange, endReason: string | null = null, retryAfter: Date | null = null): Promise<void> {
    await this.transaction(async (client) => {
      const at = now();
      const run = await client.query<{ job_id: number }>(
        'UPDATE runs SET status = $1, finished_at = $2, end_reason = $3, retry_after_at = $4, lease_until = NULL WHERE id = $5 RETURNING job_id',
        [status, at, boundText(endReason), retryAfter?.toISOString() ?? null, runId]);
      const jobId = run.rows[0]?.job_id;
      if (jobId === undefined) return;
      await settleInFlight(client, { kind: 'run', jobId, runId }, stopped, at);
      await client.query('UPDATE chunks SET claim_id = NULL, run_id = NULL WHERE job_id = $1 AND run_id = $2 AND NOT done', [jobId, runId]);
    });
  }

  /** Live workers of the job other than `runId`. */
  async otherWorkers(jobId: number, runId: number): Promise<number> {
    const rows = await this.#query<{ n: number }>(`SELECT COUNT(*) AS n FROM runs WHERE job_id = $1 AND id <> $2 AND status = 'running' AND lease_until > now()`, [jobId, runId]);
    return rows[0]?.n ?? 0;
  }

  async runsOf(jobId: number): Promise<RunRecord[]> {
    return this.#query<RunRecord>('SELECT * FROM runs WHERE job_id = $1 ORDER BY id', [jobId]);
  }

  // --- chunks -----------------------------------------------------------------------------

  /**
   * The next chunk for this worker: one nobody holds (or whose worker's lease ran out), else the next
   * one read from the input's frontier by `read`; null when the job has no chunk left to claim.
   */
  async claimChunk(
    jobId: number, runId: number, known: readonly number[], stopped: RowChange,
    read: (frontier: { rowNumber: number; offset: number; line: number }, lookups: IntakeLookups) => Promise<IntakeResult>,
  ): Promise<ClaimedChunk | null> {
    const open = await this.transaction((client) => claimOpenChunk(client, jobId, runId, known, stopped, now()));
    if (open !== null) return open;
    const fresh = await this.transaction((client) => claimFrontierChunk(client, jobId, runId, read, now()));
    return fresh === 'exhausted' ? null : fresh;
  }

  /** The chunk is done: every row of it reached a state this worker leaves (fenced by its claim). */
  async finishChunk(jobId: number, chunkNo: number, claimId: number): Promise<boolean> {
    const rows = await this.#query('UPDATE chunks SET done = true WHERE job_id = $1 AND chunk_no = $2 AND claim_id = $3 RETURNING chunk_no', [jobId, chunkNo, claimId]);
    return rows.length === 1;
  }

  /** Chunks of the job not done, and of those, held by a live worker. */
  async openChunks(jobId: number): Promise<{ open: number; held: number }> {
    const rows = await this.#query<{ open: number; held: number }>(
      `SELECT COUNT(*) AS open, COUNT(*) FILTER (WHERE u.lease_until > now() AND u.status = 'running') AS held
         FROM chunks c LEFT JOIN runs u ON u.id = c.run_id WHERE c.job_id = $1 AND NOT c.done`,
      [jobId],
    );
    return rows[0] ?? { open: 0, held: 0 };
  }

  /**
   * Chunks done that still have rows a new round would send (`states`): open again, so that a run of
   * a job no worker is working resumes them. Only when no other worker of the job is live.
   */
  async reopenChunks(jobId: number, runId: number, states: readonly RowState[]): Promise<number> {
    if (states.length === 0) return 0;
    return this.transaction(async (client) => {
      await client.query('SELECT id FROM jobs WHERE id = $1 FOR UPDATE', [jobId]);
      const others = await client.query(`SELECT 1 FROM runs WHERE job_id = $1 AND id <> $2 AND status = 'running' AND lease_until > now() LIMIT 1`, [jobId, runId]);
      if (others.rows.length > 0) return 0;
      const reopened = await client.query(
        `UPDATE chunks c SET done = false, claim_id = NULL, run_id = NULL WHERE c.job_id = $1 AND c.done
           AND EXISTS (SELECT 1 FROM rows r WHERE r.job_id = c.job_id AND r.row_number BETWEEN c.first_row AND c.last_row AND r.state = ANY($2::text[]))`,
        [jobId, states],
      );
      return reopened.rowCount ?? 0;
    });
  }

  // --- rows -------------------------------------------------------------------------------

  /**
   * Commits a turn of a worker's writes (`row-writes.ts`): one statement whatever its size, or a
   * transaction when its marks look up other jobs. Each is fenced by its row's claim: a write whose
   * claim was lost changes nothing and says so (`lost`); a mark that is lost means the request must not leave.
   */
  async commitRowWrites(jobId: number, runId: number, writes: readonly FencedRowWrite[]): Promise<FencedRowResult[]> {
    if (writes.length === 0) return [];
    const write = (client: pg.PoolClient): Promise<FencedRowResult[]> => commitRowWritesOn(client, jobId, runId, writes, now());
    return writtenByOneStatement(writes) ? this.#withClient(write) : this.transaction(write);
  }

  async recordAttempts(jobId: number, runId: number, rowNumber: number | null, attempts: readonly AttemptRecord[], agentEmail: string | null): Promise<void> {
    await this.#withClient((client) => insertAttempts(client, jobId, runId, rowNumber, attempts, agentEmail));
  }

  async insertRows(jobId: number, rows: Parameters<typeof insertRows>[2]): Promise<void> {
    await this.#withClient((client) => insertRows(client, jobId, rows, null, now()));
  }

  async countsByState(jobId: number): Promise<Record<RowState, number>> {
    const counts = Object.fromEntries(ROW_STATES.map((s) => [s, 0])) as Record<RowState, number>;
    for (const row of await this.#query<{ state: RowState; n: number }>('SELECT state, COUNT(*) AS n FROM rows WHERE job_id = $1 GROUP BY state', [jobId])) {
      counts[row.state] = row.n;
    }
    return counts;
  }

  /** See the SQLite ledger's `sentByOtherJob`. */
  async sentByOtherJob(jobId: number, environment: string, operation: string, rowKey: string): Promise<SentRow | undefined> {
    return this.#withClient((client) => sentByOtherJobOn(client, jobId, environment, operation, rowKey));
  }

  async hasOtherJob(jobId: number, environment: string, operation: string): Promise<boolean> {
    return (await this.#query('SELECT 1 FROM jobs WHERE environment = $1 AND operation = $2 AND id <> $3 LIMIT 1', [environment, operation, jobId])).length > 0;
  }

  async rejectedByOtherJob(jobId: number, environment: string, operation: string, rowKey: string, requestSha256: string): Promise<RejectedRow | undefined> {
    return (await this.#query<RejectedRow>(
      `SELECT r.job_id, r.row_number, r.http_status, r.error_code, r.error_message FROM rows r JOIN jobs j ON j.id = r.job_id
        WHERE r.row_key = $1 AND r.job_id <> $2 AND r.state = 'rejected' AND r.request_sha256 = $3 AND j.environment = $4 AND j.operation = $5
        ORDER BY r.job_id DESC LIMIT 1`,
      [boundKey(rowKey), jobId, requestSha256, environment, operation],
    ))[0];
  }

  // --- the partner's limit, shared ----------------------------------------------------------

  /** Pauses every worker of the job until `until` (a Retry-After), unless a later pause stands. */
  async pauseJob(jobId: number, until: Date): Promise<void> {
    await this.#query('UPDATE jobs SET paused_until = GREATEST(COALESCE(paused_until, $2::timestamptz), $2::timestamptz) WHERE id = $1', [jobId, until.toISOString()]);
  }

  /**
   * What the workers of the job share: a pause still to come, and each worker's last published
   * limiter state (by run id, `at` in ms by the database's clock), with the database's time now.
   */
  async sharedLimit(jobId: number): Promise<{ pausedUntil: Date | null; stateJson: string | null; nowMs: number }> {
    const rows = await this.#query<{ paused_until: Date | null; state_json: string | null; now_ms: number }>(
      `SELECT CASE WHEN j.paused_until > now() THEN j.paused_until END AS paused_until, l.state_json,
              (EXTRACT(EPOCH FROM now()) * 1000)::float8 AS now_ms
         FROM jobs j LEFT JOIN partner_limits l ON l.job_id = j.id WHERE j.id = $1`,
      [jobId],
    );
    const row = rows[0];
    return { pausedUntil: row?.paused_until ?? null, stateJson: row?.state_json ?? null, nowMs: Number(row?.now_ms ?? Date.now()) };
  }

  /** This worker's limiter state, under its run id, stamped with the database's time; workers gone a minute are dropped. */
  async publishLimit(jobId: number, runId: number, stateJson: string): Promise<void> {
    await this.#query(
      `INSERT INTO partner_limits (job_id, state_json, updated_at)
         VALUES ($1, jsonb_build_object($2::text, $3::jsonb || jsonb_build_object('at', EXTRACT(EPOCH FROM now()) * 1000))::text, now())
       ON CONFLICT (job_id) DO UPDATE SET updated_at = excluded.updated_at, state_json = ((
         SELECT COALESCE(jsonb_object_agg(e.key, e.value), '{}'::jsonb)
           FROM jsonb_each(CASE WHEN jsonb_typeof(partner_limits.state_json::jsonb) = 'object' THEN partner_limits.state_json::jsonb ELSE '{}'::jsonb END) e
          WHERE e.key <> $2::text AND jsonb_typeof(e.value->'at') = 'number' AND (e.value->>'at')::float8 > EXTRACT(EPOCH FROM now()) * 1000 - 60000
       ) || excluded.state_json::jsonb)::text`,
      [jobId, String(runId), stateJson],
    );
  }

  // --- samples and agents -----------------------------------------------------------------

  async recordRunSample(runId: number, sample: RunSample): Promise<void> {
    await this.#query(
      `INSERT INTO run_samples (run_id, elapsed_ms, at, concurrency_limit, in_flight, attempts, throttled, errors, rows_done, latency_p50_ms, pace_rate, in_flight_max, submits_answered, announced_rate)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
       ON CONFLICT (run_id, elapsed_ms) DO UPDATE SET at = excluded.at, concurrency_limit = excluded.concurrency_limit, in_flight = excluded.in_flight,
         attempts = excluded.attempts, throttled = excluded.throttled, errors = excluded.errors, rows_done = excluded.rows_done,
         latency_p50_ms = excluded.latency_p50_ms, pace_rate = excluded.pace_rate, in_flight_max = excluded.in_flight_max, submits_answered = excluded.submits_answered,
         announced_rate = excluded.announced_rate`,
      [runId, Math.round(sample.elapsedMs), now(), sample.concurrencyLimit, sample.inFlight, sample.attempts, sample.throttled, sample.errors,
        sample.rowsDone, sample.latencyP50Ms, sample.paceRate ?? null, sample.inFlightMax ?? null, sample.submitsAnswered ?? null, sample.announcedRate ?? null],
    );
  }

  /** Records what the partner announced of its limit during a run (`runs.announced_json`). */
  async recordAnnouncedLimit(runId: number, announced: AnnouncedSummary | null): Promise<void> {
    await this.#query('UPDATE runs SET announced_json = $1 WHERE id = $2', [announced === null ? null : JSON.stringify(announced), runId]);
  }

  async getAgent(environment: string, email: string): Promise<AgentRecord | undefined> {
    return (await this.#query<AgentRecord>('SELECT * FROM agents WHERE environment = $1 AND email = $2', [environment, boundKey(email)]))[0];
  }

  async upsertAgent(agent: AgentRecord): Promise<void> {
    await this.#query(
      `INSERT INTO agents (environment, email, is_valid, agent_id, message, checked_at, job_id) VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (environment, email) DO UPDATE SET is_valid = excluded.is_valid, agent_id = excluded.agent_id,
         message = excluded.message, checked_at = excluded.checked_at, job_id = excluded.job_id`,
      [agent.environment, boundKey(agent.email), agent.is_valid, boundText(agent.agent_id, MAX_STORED_ID_CHARS), boundText(agent.message), agent.checked_at, agent.job_id],
    );
  }

  /** For tests and tools: the pool's error, as the ledger reports it. */
  fault(error: unknown): QuoteBatchError {
    return pgFault(error, this.#target);
  }
}

/** SQLSTATE classes and codes of a failure of the connection, not of the statement: worth sending again. */
const TRANSIENT_STATES = /^(08|57P0[123]|40001|40P01|53300)/;
const TRANSIENT_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

/** True for a failure of the connection to the server (it went away, restarts, or cut us off), also as the ledger reports it. */
export function isTransient(error: unknown): boolean {
  if (error instanceof QuoteBatchError && error.cause !== undefined) return isTransient(error.cause);
  const e = error as { code?: unknown; message?: unknown };
  if (typeof e.code === 'string' && (TRANSIENT_STATES.test(e.code) || TRANSIENT_CODES.has(e.code))) return true;
  return typeof e.message === 'string' && /Connection terminated|connection (?:ended|timeout)|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(e.message);
}
