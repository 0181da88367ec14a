/**
 * A run on the PostgreSQL ledger: this process is one worker of the job (docs/ledger.md, "Several
 * workers"). The same `run` started on several hosts joins the one unfinished job; each claims
 * chunks of rows under its lease (`chunk-intake.ts`) and sends them as a run on SQLite does. The
 * worker that finds no chunk left and no other worker at work completes the job; the others end
 * with their part done. What the workers learn of the partner's limit is shared (`shared-limit.ts`).
 */
import { openInput } from '../input/index.js';
import { countUnfinished, countUnreadableAnswers, INPUT_READER, inputReadingOf, readRowsByOtherJobs, type JobRecord, type RowState } from '../ledger/index.js';
import type { PgLedger } from '../ledger/postgres/ledger.js';
import { resolveInputOptions } from '../mapping/index.js';
import type { ClientEvent } from '../partner/index.js';
import { TOOL_VERSION } from '../version.js';
import { ChunkIntake } from './chunk-intake.js';
import { JobRunner } from './job-runner.js';
import { RunMonitor } from './monitor.js';
import { OtherJobs } from './other-jobs.js';
import { STOPPED } from './row-state.js';
import { announcedFigures, exitCodeFor, failureReason, logWarmStart, settledFigures, sha256File, startingLimit, type RunJobOptions, type RunJobResult } from './run-job.js';
import { SharedLimit } from './shared-limit.js';
import { DEFAULTS } from '../config/index.js';

export interface RunWorkerOptions extends Omit<RunJobOptions, 'ledger'> {
  ledger: PgLedger;
  /** The worker's lease (ms): another worker takes its chunks over once it has run out. */
  leaseMs: number;
}

export async function runWorker(options: RunWorkerOptions): Promise<RunJobResult> {
  const started = Date.now();
  const { ledger, mapping, logger } = options;
  // A statement the database did not take (it restarts, a connection was cut) is sent again while the lease runs.
  ledger.retryFor(options.leaseMs);
  const header = await openInput(options.inputPath, { ...resolveInputOptions(options.inputPath, mapping), signal: options.stop });
  let format: string;
  try {
    if (header.columns !== null) mapping.checkColumns(header.columns);
    format = header.format;
  } finally {
    await header.close();
  }
  const identity = { inputSha256: await sha256File(options.inputPath), mappingSha256: mapping.sha256, environment: options.environment, operation: options.operation };
  const latest = options.fresh ? undefined : await ledger.latestJobOf(identity);
  if (latest?.status === 'completed') {
    const counts = await ledger.countsByState(latest.id);
    logger.info(`job ${latest.id} already completed on ${latest.finished_at ?? '?'}: nothing to send (use --fresh to run it again)`, { event: 'already_completed', job: latest.id });
    return {
      job: latest, runId: null, alreadyCompleted: true, resumed: false, end: 'completed', haltReason: null, haltKind: null, haltRetryAfter: null, announced: null,
      counts, newlyInDoubt: 0, agentCalls: 0, rowsSkipped: 0, limitedTo: null, durationMs: Date.now() - started,
      emptyInput: latest.total_rows === 0, ...settledFigures(null), ceiling: options.concurrency, rateCap: null, exitCode: exitCodeFor('completed', counts),
      byOtherJobs: await readRowsByOtherJobs(ledger.sql, latest.id), unreadableAnswers: await countUnreadableAnswers(ledger.sql, latest.id),
      worker: { workersAtStart: 0, othersAtEnd: 0, chunks: 0, takenOver: 0, rowsDone: 0 },
    };
  }

  let forward: (event: ClientEvent) => void = () => {};
  // A worker joining starts where the job's workers stand; a new job where the last run against this partner settled.
  const fromJob = latest === undefined ? null : await SharedLimit.startOf(ledger, latest.id, options.concurrency);
  const fromLast = fromJob === null ? await startingLimit(ledger.sql, options) : null;
  if (fromLast !== null) logWarmStart(logger, fromLast);
  if (fromJob !== null) {
    const pace = fromJob.pace === null ? '' : ` and ${fromJob.pace.toFixed(1)} requests/s (its share of the job's pace, ${fromJob.workers} workers with it)`;
    logger.info(`starting where the job's workers stand: ${fromJob.limit} requests in flight${pace}`, {
      event: 'warm_start', limit: fromJob.limit, warm: true, pace: fromJob.pace, workers: fromJob.workers, from: 'workers',
    });
  }
  const warm = fromJob ?? fromLast;
  const target = await options.connect({ onEvent: (event) => forward(event), startAt: warm === null ? null : { limit: warm.limit, warm: warm.warm, pace: warm.pace } });
  try {
    const { job, created } = await ledger.joinOrCreateJob({
      input_path: options.inputPath, input_sha256: identity.inputSha256, input_format: format, mapping_path: mapping.path,
      mapping_sha256: mapping.sha256, environment: options.environment, operation: options.operation, base_url: target.baseUrl,
    }, INPUT_READER, options.fresh);
    const reading = inputReadingOf(job.input_reader);
    const { run, crashedRuns, workers } = await ledger.startWorker(job.id, JSON.stringify(options.options), TOOL_VERSION, options.leaseMs);
    if (created) logger.info(`started job ${job.id} (run ${run.id})`, { event: 'job_started', job: job.id, run: run.id, workers });
    else if (workers > 1) logger.info(`joined job ${job.id} as a worker (run ${run.id}): ${workers} workers active`, { event: 'job_joined', job: job.id, run: run.id, workers });
    else logger.info(`resuming job ${job.id} (run ${run.id})`, { event: 'job_resumed', job: job.id, run: run.id, workers });
    if (crashedRuns > 0) {
      logger.warn(`${crashedRuns} earlier worker(s) of job ${job.id} ended without recording it (crash, kill, or cut off past their lease): their chunks are taken over, their rows in flight become in doubt`, {
        event: 'crashed_runs', job: job.id, runs: crashedRuns,
      });
    }
    // Alone on the job: chunks already done that hold rows this run sends again are open again.
    const again: RowState[] = [...(options.retryFailed ? ['failed' as const] : []), ...(options.resendInDoubt ? ['in_doubt' as const] : []), 'pending'];
    await ledger.reopenChunks(job.id, run.id, again);

    const monitor = new RunMonitor(ledger, logger, job.id, run.id, options.maxOutageMs ?? DEFAULTS.maxOutageMs);
    const rateCap = options.rate !== undefined && options.rate > 0 ? options.rate : null;
    // Sharing while this worker has rows to give its senders: one left waiting for others' chunks takes no share.
    const sharing = new SharedLimit(ledger, job.id, run.id, target.client, logger, () => !intake.drained);
    forward = (event) => {
      monitor.onClientEvent(event);
      sharing.onClientEvent(event);
    };
    const otherJobs = await OtherJobs.create(ledger, job.id, options.environment, options.operation, options.resendSent === true, logger);
    let takenOver = 0;
    const intake = new ChunkIntake({
      ledger, jobId: job.id, runId: run.id, inputPath: options.inputPath,
      inputOptions: { ...resolveInputOptions(options.inputPath, mapping), signal: options.stop, ...reading },
      mapping, otherJobs, storeRequests: options.storeRequests, retryFailed: options.retryFailed, resendInDoubt: options.resendInDoubt,
      limit: options.limit, leaseMs: options.leaseMs, counts: await ledger.countsByState(job.id),
      onTakeOver: (chunk) => {
        takenOver += 1;
        logger.warn(`took over rows ${chunk.firstRow}-${chunk.lastRow} from a worker whose lease ran out${chunk.newlyInDoubt > 0 ? `: its ${chunk.newlyInDoubt} row(s) in flight are now in doubt` : ''}`, {
          event: 'chunk_taken_over', first_row: chunk.firstRow, last_row: chunk.lastRow, newly_in_doubt: chunk.newlyInDoubt,
        });
      },
    });
    const runner = new JobRunner(options, intake, otherJobs, job, run.id, target.client);
    const progress = options.onProgress === undefined ? undefined : setInterval(() => options.onProgress?.(runner.snapshot()), options.progressIntervalMs ?? 1000);
    progress?.unref();
    monitor.start(target.client, () => runner.book.rowsDone);
    sharing.start();
    let outcome: Awaited<ReturnType<JobRunner['run']>>;
    try {
      outcome = await runner.run();
    } catch (error) {
      await ledger.finishRun(run.id, 'failed', STOPPED, failureReason(error)).catch(() => {});
      throw error;
    } finally {
      if (progress !== undefined) clearInterval(progress);
      forward = () => {};
      sharing.stop();
      monitor.stop(target.client, () => runner.book.rowsDone);
      options.onProgress?.(runner.snapshot());
    }
    await ledger.finishRun(run.id, outcome.end === 'completed' || outcome.end === 'unfinished' ? 'completed' : outcome.end, STOPPED, outcome.haltReason, target.client.haltRetryAfter);
    if (target.client.haltRetryAfter !== null) await ledger.pauseJob(job.id, target.client.haltRetryAfter);
    const counts = await ledger.countsByState(job.id);
    const others = await ledger.otherWorkers(job.id, run.id);
    const { open } = await ledger.openChunks(job.id);
    const final = await ledger.getJob(job.id) as JobRecord;
    // The job is the workers' together: completed once the input is read, no chunk is open and every row is final.
    const jobDone = final.total_rows !== null && open === 0 && countUnfinished(counts) === 0;
    let end = outcome.end;
    if (jobDone) {
      await ledger.setJobStatus(job.id, 'completed');
      if (end === 'unfinished') end = 'completed';
    } else {
      if (end === 'completed') end = 'unfinished';
      if (others === 0) await ledger.setJobStatus(job.id, 'interrupted');
    }
    if (others > 0 && !jobDone) {
      logger.info(`this worker's part is done; job ${job.id} goes on with ${others} other worker(s)`, { event: 'worker_done', job: job.id, others });
    }
    // A worker that leaves the rest to live workers has done what it could: exit 0, unless it was stopped or halted.
    const exitCode = others > 0 && !jobDone && end === 'unfinished' ? 0 : exitCodeFor(end, counts);
    return {
      job: (await ledger.getJob(job.id)) as JobRecord,
      runId: run.id, alreadyCompleted: false, resumed: !created, end, haltReason: outcome.haltReason, haltKind: outcome.haltKind,
      haltRetryAfter: end === 'halted' ? target.client.haltRetryAfter : null, announced: announcedFigures(target.client, monitor),
      counts, newlyInDoubt: 0, agentCalls: runner.agentCalls, rowsSkipped: runner.rowsSkipped,
      limitedTo: runner.stoppedByLimit ? (options.limit ?? null) : null, emptyInput: jobDone && final.total_rows === 0,
      ...settledFigures(options.adaptive === true ? monitor.settled(options.concurrency, rateCap) : null),
      ceiling: options.concurrency, rateCap, durationMs: Date.now() - started, exitCode,
      byOtherJobs: await readRowsByOtherJobs(ledger.sql, job.id), unreadableAnswers: await countUnreadableAnswers(ledger.sql, job.id),
      worker: { workersAtStart: workers, othersAtEnd: others, chunks: intake.claimedChunks, takenOver, rowsDone: runner.book.rowsDone },
    };
  } finally {
    await target.close();
  }
}
