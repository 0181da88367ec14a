/**
 * The main job: read → map → validate → agent → send → record, streaming with backpressure.
 *
 * Durability rules (README, "Outcomes, resume and the ledger"): a row is recorded as `pending` (or `invalid`/`duplicate`)
 * when read, marked `in_flight` in its own committed statement right before its request leaves,
 * and given its outcome when the answer (or the lack of one) is known. A process that dies
 * leaves `in_flight` rows, which the next run turns into `in_doubt` and does not resend blindly.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { settleInDoubt } from '../advice.js';
import { DEFAULTS, type StoreRequests } from '../config/index.js';
import { isQuoteBatchError } from '../errors.js';
import { openInput, type InputReader } from '../input/index.js';
import { ledgerFault } from '../ledger/faults.js';
import {
  countUnreadableAnswers, INPUT_READER, inputReadingOf, ledgerSql, readRowsByOtherJobs, readWarmStartSamples,
  type JobRecord, type Ledger, type PartnerIdentity, type ResumePoint, type RowsByOtherJobs, type RowState, type SqlDb,
} from '../ledger/index.js';
import type { Logger } from '../log.js';
import { resolveInputOptions, type CompiledMapping } from '../mapping/index.js';
import { DEFAULT_INITIAL_WINDOW } from '../partner/limiter/index.js';
import type { AnnouncedSummary, ClientEvent, HaltKind, PartnerClient } from '../partner/index.js';
import type { Environment, Operation } from '../partner/types.js';
import { limitSetBy, SETTLED_MIN_SAMPLES, settledLimitOf, settledPaceOf } from '../partner/settled-limit.js';
import { TOOL_VERSION } from '../version.js';
import { STOPPED } from './row-state.js';
import { LocalIntake } from './intake.js';
import { JobRunner, type ProgressSnapshot, type RunEnd } from './job-runner.js';
import { OtherJobs } from './other-jobs.js';
import { RunMonitor } from './monitor.js';

export type { ProgressSnapshot, RunEnd } from './job-runner.js';

export interface PartnerTarget {
  client: PartnerClient;
  baseUrl: string;
  close(): Promise<void>;
}

export interface RunJobOptions {
  inputPath: string;
  mapping: CompiledMapping;
  ledger: Ledger;
  environment: Environment;
  operation: Operation;
  /**
   * Opens the partner connection; called only when there is something to send. The client must
   * pass its events (breaker, probes, halt) to `onEvent`.
   */
  connect: (hooks: {
    onEvent: (event: ClientEvent) => void;
    /**
     * Where adaptive concurrency starts (see {@link startingLimit}): `warm`, without the slow start's
     * growth (a limit the partner set); else growing quickly from there. `pace`: requests/s to pace
     * at from the start (a rate cap the partner set); null: none. Null: a cold start.
     */
    startAt: { limit: number; warm: boolean; pace: number | null } | null;
  }) => Promise<PartnerTarget>;
  /** `--max-outage` in ms, for the warning that says when the run will give up. */
  maxOutageMs?: number;
  /**
   * The partner's base URL when it is known before connecting; null for the embedded sandbox, which
   * is started anew for each run. A run starts where the latest run sent there settled.
   */
  partnerBaseUrl?: string | null;
  /** True when the client's limiter adapts (`--adaptive`): the summary then says where it settled. */
  adaptive?: boolean;
  concurrency: number;
  /** `--rate`, requests/s (0 or absent: no cap): a remembered pace at or above it is not used. */
  rate?: number;
  /** Process at most this many data rows of the file (the first N). */
  limit?: number | undefined;
  fresh: boolean;
  retryFailed: boolean;
  resendInDoubt: boolean;
  /** `--resend-sent`: also send rows another job of this environment and operation sent, or had rejected (`other-jobs.ts`). */
  resendSent?: boolean;
  storeRequests: StoreRequests;
  /** Recorded in `runs.options_json` (no secret in it). */
  options: Record<string, unknown>;
  stop: AbortSignal;
  logger: Logger;
  onProgress?: (snapshot: ProgressSnapshot) => void;
  /** How often `onProgress` fires, in ms. */
  progressIntervalMs?: number;
}

export interface RunJobResult {
  job: JobRecord;
  runId: number | null;
  /** True when the job was already completed and nothing was run. */
  alreadyCompleted: boolean;
  resumed: boolean;
  end: RunEnd;
  haltReason: string | null;
  /** What kind of halt stopped the run when the partner client did (null otherwise): the summary's advice follows it. */
  haltKind: HaltKind | null;
  /** For a run halted by a Retry-After or a spent quota: when the partner may be called again; else null. */
  haltRetryAfter: Date | null;
  /**
   * What the partner announced of its limit in its headers this run, and in how many seconds of the
   * run (up to its last answer) a rate it announced was in force and paced the sends; null when it
   * announced nothing.
   */
  announced: (AnnouncedSummary & { announcedSeconds: number; pacedSeconds: number }) | null;
  counts: Record<RowState, number>;
  newlyInDoubt: number;
  agentCalls: number;
  rowsSkipped: number;
  /** The --limit that stopped this run before the end of the file, if any. */
  limitedTo: number | null;
  /** True when the input had no data rows at all (a header only, or nothing). */
  emptyInput: boolean;
  /**
   * Requests the run allowed in flight at its end (adaptive concurrency), or when the partner last
   * answered if it stopped answering before (`settledBeforeSilence`); null when it answered nothing.
   */
  settledLimit: number | null;
  /** The seconds (samples) `settledLimit` and `settledPace` are the median of: the run's last quarter, at least its last 10. */
  settledSamples: number;
  settledBeforeSilence: boolean;
  /** When that limit, below the ceiling, was held by our side, not set by the partner: by `--rate`, or by an input with fewer rows to send than it allowed. */
  limitHeldBy: 'rate' | 'input' | null;
  /** `--concurrency`: the most the run could allow. */
  ceiling: number;
  /** `--rate` in requests/s; null without one. */
  rateCap: number | null;
  /** Rows another job had sent (duplicate) or had had rejected (rejected), so that this job did not send them. */
  byOtherJobs: RowsByOtherJobs;
  /** Requests per second the run was paced at by its end (a rate cap the partner showed); null when it was not pacing. */
  settledPace: number | null;
  /** Of the job's succeeded rows, those whose 2xx answer could not be read (no quote number or premium recorded). */
  unreadableAnswers: number;
  durationMs: number;
  exitCode: 0 | 1 | 3;
  /** On the PostgreSQL ledger: what this worker of the job did, and who else works on it. */
  worker?: WorkerFigures;
}

/** What a worker's summary adds (PostgreSQL ledger): how many workers the job had, and what this one did. */
export interface WorkerFigures {
  /** Workers of the job live when this one joined, itself included. */
  workersAtStart: number;
  /** Other workers still at work on the job when this one ended. */
  othersAtEnd: number;
  /** Chunks this worker claimed, and of those, taken over from workers whose lease ran out. */
  chunks: number;
  takenOver: number;
  /** Rows this worker settled. */
  rowsDone: number;
}

const DATA_PROBLEM_STATES: readonly RowState[] = ['invalid', 'rejected', 'agent_invalid'];

export async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Opens the input and checks the mapping's columns against its header, then closes it. */
export async function checkInputHeader(inputPath: string, mapping: CompiledMapping): Promise<void> {
  const reader = await openInput(inputPath, resolveInputOptions(inputPath, mapping));
  try {
    if (reader.columns !== null) mapping.checkColumns(reader.columns);
  } finally {
    await reader.close();
  }
}

/**
 * Where the latest run sent to a partner settled (`readWarmStartSamples` says which runs count): its
 * limit and, when the partner set it ({@link limitSetBy}), `used` and the pace it settled at
 * ({@link settledPaceOf}); otherwise the limit is a floor to grow from and `pace` is null.
 */
export async function readStartingLimit(
  db: SqlDb,
  partner: PartnerIdentity,
): Promise<{ jobId: number; runId: number; limit: number; samples: number; used: boolean; pace: number | null } | null> {
  const found = await readWarmStartSamples(db, partner, SETTLED_MIN_SAMPLES);
  if (found === null) return null;
  const settled = settledLimitOf(found.samples.map((x) => x.lim));
  if (settled === null) return null;
  const used = limitSetBy(found.samples, settled.limit, found.ceiling) === 'partner';
  const pace = used ? settledPaceOf(found.samples.map((x) => x.pace)) : null;
  return { jobId: found.jobId, runId: found.runId, ...settled, used, pace };
}

/** Says where a run starts because an earlier run settled there (`warm_start`, with that job and run). */
export function logWarmStart(logger: Logger, start: NonNullable<Awaited<ReturnType<typeof startingLimit>>>): void {
  logger.info(start.message, { event: 'warm_start', limit: start.limit, warm: start.warm, pace: start.pace, from_job: start.jobId, from_run: start.runId });
}

/**
 * Where adaptive concurrency starts: where the latest run sent to the same partner settled — this
 * job's last run on a resume, last night's job for tonight's file — so that a partner's limit found
 * once is not overshot again by every run's slow start ({@link readStartingLimit} says which runs count).
 * At most `--concurrency`. Null: a cold start (nothing known, a floor no higher than the cold start's
 * window, or the embedded sandbox, new each run).
 */
export async function startingLimit(db: SqlDb, options: Omit<RunJobOptions, 'ledger'>): Promise<{ limit: number; warm: boolean; pace: number | null; message: string; jobId: number; runId: number } | null> {
  if (options.partnerBaseUrl === undefined || options.partnerBaseUrl === null || options.adaptive !== true) return null;
  const found = await readStartingLimit(db, { environment: options.environment, operation: options.operation, baseUrl: options.partnerBaseUrl });
  if (found === null) return null;
  const limit = Math.min(found.limit, options.concurrency);
  // A floor no higher than a cold start's first window is a cold start.
  if (!found.used && limit <= Math.min(DEFAULT_INITIAL_WINDOW, options.concurrency)) return null;
  // The pace put `found.limit` requests in flight: a lower --concurrency carries that share of it.
  // Below --rate, the hard cap holds sends back before a pace could.
  const scaled = found.pace === null || !(found.limit > 0) ? null : (found.pace * limit) / found.limit;
  const usable = scaled !== null && Number.isFinite(scaled) && scaled > 0;
  const pace = usable && (options.rate === undefined || options.rate <= 0 || scaled < options.rate) ? scaled : null;
  const paced = pace === null ? '' : `, paced at ${Math.round(pace * 10) / 10} requests/s`;
  const at = `adaptive concurrency starts at ${Math.round(limit * 10) / 10} requests in flight${paced}`;
  const run = `run ${found.runId} (job ${found.jobId}) against this partner`;
  return {
    limit, warm: found.used, pace, jobId: found.jobId, runId: found.runId,
    message: found.used ? `${at}, where ${run} settled` : `${at} and grows fast from there: ${run} got that far without being held back by the partner`,
  };
}

/** The result's settled figures from the monitor's (null: not adaptive, or the partner answered nothing). */
export function settledFigures(settled: ReturnType<RunMonitor['settled']>): Pick<RunJobResult, 'settledLimit' | 'settledSamples' | 'settledPace' | 'settledBeforeSilence' | 'limitHeldBy'> {
  return {
    settledLimit: settled?.limit ?? null,
    settledSamples: settled?.samples ?? 0,
    settledPace: settled?.pace ?? null,
    settledBeforeSilence: settled?.beforeSilence ?? false,
    limitHeldBy: settled?.heldBy ?? null,
  };
}

/** The result's `announced`: what the client read of the partner's announced limit, with the monitor's seconds paced by it. */
export function announcedFigures(client: PartnerClient, monitor: RunMonitor): RunJobResult['announced'] {
  const announced = client.announcedLimit();
  if (announced === null) return null;
  const { announced: announcedSeconds, paced: pacedSeconds } = monitor.announcedPacing();
  return { ...announced, announcedSeconds, pacedSeconds };
}

export function exitCodeFor(end: RunEnd, counts: Record<RowState, number>): 0 | 1 | 3 {
  if (end !== 'completed') return 3;
  return DATA_PROBLEM_STATES.some((s) => counts[s] > 0) ? 1 : 0;
}

export async function runJob(options: RunJobOptions): Promise<RunJobResult> {
  const started = Date.now();
  const { ledger, mapping, logger } = options;
  // The reader stops on the user's stop even inside a long stretch of blank lines.
  let reader = await openInput(options.inputPath, { ...resolveInputOptions(options.inputPath, mapping), signal: options.stop });
  try {
    if (reader.columns !== null) mapping.checkColumns(reader.columns);
    const identity = {
      inputSha256: await sha256File(options.inputPath),
      mappingSha256: mapping.sha256,
      environment: options.environment,
      operation: options.operation,
    };

    // Only the newest job of this identity counts: an older unfinished one was set aside by --fresh.
    const latest = options.fresh ? undefined : ledger.latestJobOf(identity);
    if (latest?.status === 'completed') {
      const counts = ledger.countsByState(latest.id);
      const again = options.environment === 'sandbox'
        ? 'use --fresh to run it again'
        : `use --fresh to run it again; its leads are not sent twice${options.resendSent === true ? ' (--resend-sent sends a file of the rows you mean to send again: export them with --format source)' : ' unless --resend-sent'}`;
      logger.info(`job ${latest.id} already completed on ${latest.finished_at ?? '?'}: nothing to send (${again})`, { event: 'already_completed', job: latest.id });
      return {
        job: latest, runId: null, alreadyCompleted: true, resumed: false, end: 'completed', haltReason: null, haltKind: null, haltRetryAfter: null, announced: null,
        counts, newlyInDoubt: 0, agentCalls: 0, rowsSkipped: 0, limitedTo: null, durationMs: Date.now() - started,
        emptyInput: latest.total_rows === 0, ...settledFigures(null), ceiling: options.concurrency, rateCap: null, exitCode: exitCodeFor('completed', counts),
        byOtherJobs: await readRowsByOtherJobs(ledgerSql(ledger), latest.id),
        unreadableAnswers: await countUnreadableAnswers(ledgerSql(ledger), latest.id),
      };
    }

    let job = latest;
    const resumed = job !== undefined;
    // A job begun by an older quote-batch reads its input as it did then: it keeps its row numbers.
    const reading = job === undefined ? inputReadingOf(INPUT_READER) : inputReadingOf(job.input_reader);
    if (job !== undefined && job.input_reader !== INPUT_READER) {
      await reader.close();
      reader = await openInput(options.inputPath, { ...resolveInputOptions(options.inputPath, mapping), signal: options.stop, ...reading });
    }
    let forward: (event: ClientEvent) => void = () => {};
    // Read before connecting (the client's limiter starts there); said only once this process holds
    // the job: a run refused because another live process holds it starts nothing.
    const startAt = await startingLimit(ledgerSql(ledger), options);
    const target = await options.connect({ onEvent: (event) => forward(event), startAt });
    try {
      job ??= ledger.createJob({
        input_path: options.inputPath,
        input_sha256: identity.inputSha256,
        input_format: reader.format,
        mapping_path: mapping.path,
        mapping_sha256: mapping.sha256,
        environment: options.environment,
        operation: options.operation,
        base_url: target.baseUrl,
      }, { onlyIfFirst: !options.fresh });
      const { run, crashedRuns, newlyInDoubt } = ledger.startRun(job.id, JSON.stringify(options.options), TOOL_VERSION, STOPPED);
      if (resumed) {
        logger.info(`resuming job ${job.id} (run ${run.id})`, { event: 'job_resumed', job: job.id, run: run.id });
      } else {
        logger.info(`started job ${job.id} (run ${run.id})`, { event: 'job_started', job: job.id, run: run.id });
      }
      if (startAt !== null) {
        logWarmStart(logger, startAt);
      }
      if (crashedRuns > 0) {
        logger.warn(`${crashedRuns} earlier run(s) of job ${job.id} ended without recording it (crash or kill)`, { event: 'crashed_runs', job: job.id, runs: crashedRuns, newly_in_doubt: newlyInDoubt });
      }
      const inDoubtNow = ledger.countsByState(job.id).in_doubt;
      if (inDoubtNow > 0) {
        logger.warn(
          options.resendInDoubt
            ? `${inDoubtNow} row(s) in doubt will be sent again (--resend-in-doubt)`
            : `${inDoubtNow} row(s) are in doubt (they may have reached the partner): not resent; ${settleInDoubt({ ledger: ledger.path, job: job.id })}, or resend them with --resend-in-doubt`,
          { event: 'rows_in_doubt', job: job.id, rows: inDoubtNow, resend: options.resendInDoubt },
        );
      }
      const { reader: jobReader, start } = await openFromResumePoint(options, reader, ledger.resumePoint(job), logger, reading);
      reader = jobReader;
      const monitor = new RunMonitor(ledger, logger, job.id, run.id, options.maxOutageMs ?? DEFAULTS.maxOutageMs);
      const rateCap = options.rate !== undefined && options.rate > 0 ? options.rate : null;
      forward = monitor.onClientEvent;
      // A Retry-After that halted an earlier run of this job, not over yet: no request leaves before it.
      const asked = ledger.retryAfterOf(job.id);
      if (asked !== undefined && target.client.holdUntil(asked.until, `run ${asked.run_id} (job ${asked.job_id})`, asked.quota ? 'quota' : 'retry_after') === 'held') {
        const why = asked.quota ? `the partner's quota for this key is spent until ${asked.until.toISOString()} (as run ${asked.run_id} (job ${asked.job_id}) found)`
          : `the partner asked run ${asked.run_id} (job ${asked.job_id}) to wait until ${asked.until.toISOString()}`;
        logger.warn(`${why}: no request leaves before then`, {
          event: 'retry_after_held', until: asked.until.toISOString(), from_run: asked.run_id, from_job: asked.job_id, quota: asked.quota,
        });
      }
      const otherJobs = await OtherJobs.create(ledger, job.id, options.environment, options.operation, options.resendSent === true, logger);
      const intake = new LocalIntake({
        ledger, job, runId: run.id, reader, mapping, otherJobs, start, stop: options.stop, limit: options.limit,
        storeRequests: options.storeRequests, retryFailed: options.retryFailed, resendInDoubt: options.resendInDoubt,
      });
      const runner = new JobRunner(options, intake, otherJobs, job, run.id, target.client);
      const progress = options.onProgress === undefined
        ? undefined
        : setInterval(() => options.onProgress?.(runner.snapshot()), options.progressIntervalMs ?? 1000);
      progress?.unref();
      monitor.start(target.client, () => runner.book.rowsDone);
      let outcome: Awaited<ReturnType<JobRunner['run']>>;
      try {
        outcome = await runner.run();
      } catch (error) {
        // Record how the run ended and why; its rows are settled by the next run's resume rules.
        // The job's status first: finishing the run releases the job lock. When the ledger itself
        // is what failed (disk full), this may fail too: the error to report is the first one.
        try {
          ledger.setJobStatus(job.id, 'interrupted');
          ledger.finishRun(run.id, 'failed', failureReason(error));
        } catch {
          // The job lock dies with the process; the next run reads the run as ended.
        }
        throw error;
      } finally {
        if (progress !== undefined) clearInterval(progress);
        forward = () => {};
        monitor.stop(target.client, () => runner.book.rowsDone);
        options.onProgress?.(runner.snapshot());
      }
      const counts = ledger.countsByState(job.id);
      const emptyInput = outcome.end === 'completed' && outcome.rowsRead === 0;
      if (emptyInput) logger.warn(`the input ${options.inputPath} has no data rows: nothing to send`, { event: 'empty_input' });
      // The run itself ended normally unless stopped or halted; the job is completed only when
      // every row reached a final state.
      // The job's status first: finishing the run releases the job lock.
      ledger.setJobStatus(job.id, outcome.end === 'completed' ? 'completed' : 'interrupted');
      ledger.finishRun(run.id, outcome.end === 'completed' || outcome.end === 'unfinished' ? 'completed' : outcome.end, outcome.haltReason, target.client.haltRetryAfter);
      return {
        job: ledger.getJob(job.id) as JobRecord,
        runId: run.id,
        alreadyCompleted: false,
        resumed,
        end: outcome.end,
        haltReason: outcome.haltReason,
        haltKind: outcome.haltKind,
        haltRetryAfter: outcome.end === 'halted' ? target.client.haltRetryAfter : null,
        announced: announcedFigures(target.client, monitor),
        counts,
        newlyInDoubt,
        agentCalls: runner.agentCalls,
        rowsSkipped: runner.rowsSkipped,
        limitedTo: runner.stoppedByLimit ? (options.limit ?? null) : null,
        emptyInput,
        ...settledFigures(options.adaptive === true ? monitor.settled(options.concurrency, rateCap) : null),
        ceiling: options.concurrency,
        rateCap,
        durationMs: Date.now() - started,
        exitCode: exitCodeFor(outcome.end, counts),
        byOtherJobs: await readRowsByOtherJobs(ledgerSql(ledger), job.id),
        unreadableAnswers: await countUnreadableAnswers(ledgerSql(ledger), job.id),
      };
    } finally {
      await target.close();
    }
  } finally {
    await reader.close();
  }
}

/**
 * Re-opens the input at the job's resume point, so that a resumed run seeks past the finished
 * prefix instead of parsing it again. Falls back to the start of the file when the point does not
 * fit the file (the rows are then skipped one by one by their recorded states).
 */
async function openFromResumePoint(
  options: RunJobOptions,
  reader: InputReader,
  point: ResumePoint | undefined,
  logger: Logger,
  reading: ReturnType<typeof inputReadingOf>,
): Promise<{ reader: InputReader; start: ResumePoint | undefined }> {
  if (point === undefined || point.rowNumber <= 1) return { reader, start: undefined };
  try {
    const resumed = await openInput(options.inputPath, { ...resolveInputOptions(options.inputPath, options.mapping), start: point, signal: options.stop, ...reading });
    await reader.close();
    logger.info(`skipping rows 1-${point.rowNumber - 1}: already final (reading from line ${point.line})`, { event: 'resume_point', row: point.rowNumber, line: point.line });
    return { reader: resumed, start: point };
  } catch (error) {
    logger.warn(`cannot resume reading at row ${point.rowNumber} (${(error as Error).message}); reading from the start`, { event: 'resume_point_unusable', row: point.rowNumber });
    return { reader, start: undefined };
  }
}

/**
 * Why a run failed, for `runs.end_reason` (report shows it): a known error's one line (a ledger that
 * could not be written names its SQLite code); anything else is a bug, whose details (a stack, maybe
 * data) are printed on the run's standard error only.
 */
export function failureReason(error: unknown): string {
  if (isQuoteBatchError(error)) return error.message;
  const fault = ledgerFault(error, undefined);
  if (fault !== undefined) return fault.message;
  return 'internal error (a bug in quote-batch; the run printed the details on its standard error)';
}
