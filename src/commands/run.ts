/** `quote-batch run <input> --mapping <file>`: the main job; resumes by itself. */
import { resolve } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { Option } from 'commander';
import { loadConfig, OPERATIONS, resolveConnection, STORE_REQUESTS, type StoreRequests } from '../config/index.js';
import { Ledger } from '../ledger/index.js';
import { DRAFT_PLACEHOLDER, loadMapping } from '../mapping/index.js';
import { QuoteBatchError } from '../errors.js';
import type { Operation } from '../partner/types.js';
import { createProgressReporter } from '../pipeline/progress.js';
import { checkInputHeader, runJob } from '../pipeline/run-job.js';
import { formatSummary, nextStep } from '../pipeline/summary.js';
import { commandFor, unreadableAnswersText } from '../advice.js';
import { formatDuration, MAX_WAIT_MS } from '../duration.js';
import { outputColumns } from '../io.js';
import { AdaptiveLimiter } from '../partner/adaptive-limiter.js';
import { FixedLimiter } from '../partner/concurrency.js';
import type { PartnerClient } from '../partner/index.js';
import { prestartTransportThread } from '../partner/thread-transport.js';
import { openPartner } from './_connect.js';
import { jsonLogOption, parseDurationFlag, parseNumberIn, type RegisterCommand } from './context.js';

interface RunFlags {
  mapping: string;
  env?: string;
  baseUrl?: string;
  apiKeyFile?: string;
  config?: string;
  ledger?: string;
  operation?: Operation;
  concurrency?: number;
  rate?: number;
  maxAttempts?: number;
  timeout?: number;
  limit?: number;
  fresh?: boolean;
  retryFailed?: boolean;
  resendInDoubt?: boolean;
  resendSent?: boolean;
  storeRequests?: StoreRequests;
  maxConsecutiveFailures?: number;
  maxOutage?: number;
  maxRetryAfter?: number;
  maxRuntime?: number;
  adaptive?: boolean;
  quiet?: boolean;
  jsonLog?: boolean;
}

export const DEFAULT_LEDGER = 'quote-batch.db';

export const registerRun: RegisterCommand = (program, ctx) => {
  program
    .command('run')
    .description('send every row of <input> to the partner; resumes an unfinished job by itself')
    .argument('<input>', 'lead file: .csv, .tsv, .ndjson or .jsonl, optionally .gz')
    .requiredOption('--mapping <file>', 'mapping file (YAML), see docs/mapping.md')
    .option('--env <name>', 'sandbox | uat | production (default: sandbox when no base URL is configured)')
    .option('--base-url <url>', "override the environment's base URL (https://, or http:// on loopback)")
    .option('--api-key-file <file>', 'read the API key from this file (else QUOTE_BATCH_API_KEY)')
    .option('--config <file>', 'config file (default ./quote-batch.config.yaml when present)')
    .option('--ledger <file>', `SQLite ledger (default ./${DEFAULT_LEDGER})`)
    .addOption(new Option('--operation <op>', 'partner operation each row is sent to (default quote)').choices(OPERATIONS))
    .option('--concurrency <n>', 'requests in flight at once (default 8)', parseNumberIn('--concurrency', 1, 1024))
    .option('--rate <n>', 'at most N requests per second, 0 = no cap (default 0)', parseNumberIn('--rate', 0, 1e6))
    .option('--max-attempts <n>', 'attempts per request for retryable failures (default 5)', parseNumberIn('--max-attempts', 1, 100))
    .option('--timeout <ms>', 'whole-request time-out in ms (default 30000)', parseNumberIn('--timeout', 1, 3_600_000))
    .option('--limit <n>', 'process at most the first N rows', parseNumberIn('--limit', 1, Number.MAX_SAFE_INTEGER, true))
    .option('--fresh', 'start a new job even when an unfinished one matches')
    .option('--retry-failed', 'resend rows left failed by an earlier run (default)')
    .option('--no-retry-failed', 'leave rows left failed by an earlier run alone')
    .option('--resend-in-doubt', 'also resend rows left in_doubt (they may have reached the partner)')
    .option('--resend-sent', 'also send rows another job of this ledger sent to this environment, or whose same request it had rejected (uat, production)')
    .addOption(new Option('--store-requests <mode>', 'how much of each request the ledger keeps (default masked)').choices(STORE_REQUESTS))
    .option('--max-consecutive-failures <n>', 'consecutive transient failures of one operation that open the circuit breaker (default 10)', parseNumberIn('--max-consecutive-failures', 1, 1e6, true))
    .option('--max-outage <duration>', 'halt (exit 3) when the partner has not recovered this long after the breaker opened, e.g. 90s, 10m; 0 = wait for ever (default 10m)', parseDurationFlag('--max-outage', 0, MAX_WAIT_MS))
    .option('--max-retry-after <duration>', 'a Retry-After longer than this halts the run instead of waiting (default 5m)', parseDurationFlag('--max-retry-after', 0, MAX_WAIT_MS))
    .option('--max-runtime <duration>', 'stop like SIGTERM once the run has lasted this long, e.g. 2h (default: none)', parseDurationFlag('--max-runtime', 1, MAX_WAIT_MS))
    .option('--adaptive', "adapt the requests in flight to the partner's answers, up to --concurrency (default)")
    .option('--no-adaptive', 'keep exactly --concurrency requests in flight')
    .option('--quiet', 'no progress bar or progress lines')
    .addOption(jsonLogOption())
    .action(async (input: string, flags: RunFlags) => {
      ctx.setExitCode(await runCommand(input, flags));
    });

  async function runCommand(input: string, flags: RunFlags): Promise<number> {
    collectGarbageSooner();
    // The HTTP thread loads got while the run reads its config, mapping, input and ledger.
    prestartTransportThread();
    const { io } = ctx;
    const config = loadConfig(flags.config, io.cwd);
    const d = config.file.defaults ?? {};
    const concurrency = flags.concurrency ?? d.concurrency ?? 8;
    const settings = {
      operation: flags.operation ?? d.operation ?? 'quote',
      concurrency,
      rate: flags.rate ?? d.rate ?? 0,
      maxAttempts: flags.maxAttempts ?? d['max-attempts'] ?? 5,
      timeoutMs: flags.timeout ?? d.timeout ?? 30_000,
      storeRequests: flags.storeRequests ?? d['store-requests'] ?? 'masked',
      maxConsecutiveFailures: flags.maxConsecutiveFailures ?? d['max-consecutive-failures'] ?? 10,
      maxOutageMs: flags.maxOutage ?? d['max-outage'] ?? 600_000,
      maxRetryAfterMs: flags.maxRetryAfter ?? d['max-retry-after'] ?? 300_000,
      maxRuntimeMs: flags.maxRuntime ?? d['max-runtime'],
      adaptive: flags.adaptive ?? d.adaptive ?? true,
      retryFailed: flags.retryFailed ?? d['retry-failed'] ?? true,
      resendInDoubt: flags.resendInDoubt ?? d['resend-in-doubt'] ?? false,
      // Never from the config file: sending a lead again is decided run by run.
      resendSent: flags.resendSent ?? false,
      fresh: flags.fresh ?? false,
      limit: flags.limit,
    };
    const logger = ctx.createLogger({ quiet: flags.quiet === true });
    const inputPath = resolve(io.cwd, input);
    const mapping = await loadMapping(resolve(io.cwd, flags.mapping));
    const ledgerPath = resolve(io.cwd, flags.ledger ?? d.ledger ?? DEFAULT_LEDGER);

    // Resolve the connection up front so a missing key or URL is a usage error before any work.
    const connectionFlags = { env: flags.env, baseUrl: flags.baseUrl, apiKeyFile: flags.apiKeyFile, config: flags.config };
    const connection = resolveConnection(connectionFlags, io.env, config, io.cwd);
    // A value only the user can give, left as `init` drafted it, never reaches a real partner.
    if (mapping.placeholders.length > 0) {
      const what = `${mapping.placeholders.join(', ')} still ${mapping.placeholders.length === 1 ? 'holds' : 'hold'} ${DRAFT_PLACEHOLDER}, the placeholder \`init\` wrote`;
      if (connection.environment !== 'sandbox') {
        throw new QuoteBatchError('E_MAPPING', `${flags.mapping}: ${what}; nothing was sent to ${connection.environment}`, { hint: 'set the value the insurer gave you (your channel id) in the mapping, then run again' });
      }
      logger.warn(`${flags.mapping}: ${what}: the sandbox takes it, a real partner would not; set it before going live`, { event: 'mapping_placeholder' });
    }

    // A missing column or unreadable input is a usage error before any ledger file is created.
    await checkInputHeader(inputPath, mapping);
    ctx.noteLedger(ledgerPath);
    const ledger = Ledger.open(ledgerPath);
    const progress = createProgressReporter(
      io,
      logger,
      flags.quiet === true ? 'none' : flags.jsonLog === true ? 'json' : io.stderrTTYStream !== undefined ? 'bar' : 'lines',
    );
    // --max-runtime stops the run like SIGTERM: requests in flight finish, the summary is printed.
    const stop = new AbortController();
    const onStop = (): void => stop.abort(ctx.stop.reason);
    if (ctx.stop.aborted) onStop();
    else ctx.stop.addEventListener('abort', onStop, { once: true });
    // Beyond what a timer holds (about 24.8 days) there is no limit to apply.
    const runtime = settings.maxRuntimeMs === undefined || settings.maxRuntimeMs > 2 ** 31 - 1 ? undefined : setTimeout(() => {
      logger.warn(`--max-runtime ${formatDuration(settings.maxRuntimeMs ?? 0)} reached: finishing requests in flight, then stopping`, { event: 'max_runtime' });
      stop.abort(`stopped after --max-runtime ${formatDuration(settings.maxRuntimeMs ?? 0)}`);
    }, settings.maxRuntimeMs);
    runtime?.unref();
    try {
      const result = await runJob({
        inputPath,
        mapping,
        ledger,
        environment: connection.environment,
        operation: settings.operation,
        partnerBaseUrl: connection.baseUrl,
        rate: settings.rate,
        connect: async ({ onEvent, startAt }) => {
          // Where the partner's limit settled last time, not a cold start (unless nothing is known).
          const limiter = !settings.adaptive
            ? new FixedLimiter(concurrency)
            : startAt === null
              ? new AdaptiveLimiter({ ceiling: concurrency })
              : new AdaptiveLimiter({
                ceiling: concurrency, initialWindow: Math.max(1, startAt.limit), warm: startAt.warm, ...(startAt.pace === null ? {} : { pace: startAt.pace }),
              });
          const c = await openPartner(connection, io, {
            concurrency,
            limiter,
            timeoutMs: settings.timeoutMs,
            maxAttempts: settings.maxAttempts,
            rate: settings.rate,
            maxConsecutiveFailures: settings.maxConsecutiveFailures,
            maxOutageMs: settings.maxOutageMs,
            maxRetryAfterMs: settings.maxRetryAfterMs,
            onEvent,
          }, config, (message) => logger.info(message, { event: 'sandbox_started' }));
          return { client: noticingRequests(c.client, () => ctx.noteRequestsSent()), baseUrl: c.baseUrl, close: c.close };
        },
        maxOutageMs: settings.maxOutageMs,
        adaptive: settings.adaptive,
        concurrency,
        limit: settings.limit,
        fresh: settings.fresh,
        retryFailed: settings.retryFailed,
        resendInDoubt: settings.resendInDoubt,
        resendSent: settings.resendSent,
        storeRequests: settings.storeRequests,
        options: { ...settings, input, mapping: flags.mapping, environment: connection.environment, ledger: ledgerPath },
        stop: stop.signal,
        logger,
        onProgress: (s) => progress.update(s),
        progressIntervalMs: progress.intervalMs,
      });
      progress.stop();
      const fields = {
        event: 'summary', job: result.job.id, run: result.runId, end: result.end, exit_code: result.exitCode,
        duration_ms: Math.round(result.durationMs), halt_reason: result.haltReason, settled_limit: result.settledLimit, settled_pace: result.settledPace, ...result.counts,
        // Of the duplicate and rejected rows: those another job had sent, or whose request it had had rejected.
        sent_by_other_job: result.byOtherJobs.sent, rejected_by_other_job: result.byOtherJobs.rejected,
        // Of sent_by_other_job: rows whose lead is only in doubt in that other job (settled there).
        in_doubt_in_other_job: result.byOtherJobs.in_doubt_there,
        // Of succeeded: rows whose 2xx answer could not be read (no quote number or premium recorded).
        unreadable_answers: result.unreadableAnswers,
      };
      if (result.unreadableAnswers > 0) {
        logger.warn(`${unreadableAnswersText(result.unreadableAnswers)}; ${commandFor('export', { ledger: ledger.path, job: result.job.id }, '--status succeeded')} lists them`, {
          event: 'unreadable_answers', job: result.job.id, rows: result.unreadableAnswers,
        });
      }
      // The summary's level says whether the job is done: info when completed, warn when not.
      if (result.exitCode === 3) logger.warn(`run finished: ${nextStep(result, ledger.path)}`, fields);
      else if (flags.jsonLog === true) logger.info(`run finished: ${nextStep(result, ledger.path)}`, fields);
      // Recorded: a reader that closes standard output no longer changes the exit code.
      ctx.setExitCode(result.exitCode);
      io.out(formatSummary(result, ledger, outputColumns(io)));
      return result.exitCode;
    } finally {
      if (runtime !== undefined) clearTimeout(runtime);
      ctx.stop.removeEventListener('abort', onStop);
      progress.stop();
      ledger.close();
    }
  }
};

/**
 * The client, telling `onCall` before each call that may send a request (validation, quote,
 * lead). A Proxy, so that members the client gains pass through; its methods run on the client
 * itself (they use private fields).
 */
function noticingRequests(client: PartnerClient, onCall: () => void): PartnerClient {
  const sending: ReadonlySet<PropertyKey> = new Set<keyof PartnerClient>(['validateAgent', 'submit', 'submitJson']);
  return new Proxy(client, {
    get(target, property) {
      const value: unknown = Reflect.get(target, property, target);
      if (typeof value !== 'function') return value;
      const method = value as (...args: unknown[]) => unknown;
      if (!sending.has(property)) return method.bind(target);
      return (...args: unknown[]) => {
        onCall();
        return method.apply(target, args);
      };
    },
  });
}

/**
 * V8 lets a heap grow to up to 4× what survived its last full collection before the next one. A run
 * allocates fast and keeps little (about 20 MB: rows stream through), so its heaps filled with
 * garbage: 110 MB on the main thread and 48 MB on the HTTP thread at the peak of a 40k-row run.
 * Growing by a quarter collects sooner: peak RSS about 185 MB instead of 260-270, for the same time
 * and CPU within the noise (README, bench `memory`). It is a process-wide V8 flag, so it reaches
 * the HTTP thread too; only `run` sets it, because a command that keeps a large heap alive would pay
 * for the more frequent full collections.
 */
function collectGarbageSooner(): void {
  setFlagsFromString('--heap-growing-percent=25');
}

