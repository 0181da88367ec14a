/** `quote-batch run <input> --mapping <file>`: the main job; resumes by itself. */
import { resolve } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { Option } from 'commander';
import { DEFAULTS, helpOf, loadConfig, resolveConnection, resolveRunSettings, RUN_SETTINGS, type RunSettingName, type Setting } from '../config/index.js';
import type { NetworkFlags } from '../config/network.js';
import { closeLedger, displayTarget, isPgLedger, openLedger } from '../ledger/index.js';
import { DRAFT_PLACEHOLDER, loadMapping } from '../mapping/index.js';
import { QuoteBatchError } from '../errors.js';
import { createProgressReporter } from '../pipeline/progress.js';
import { checkInputHeader, runJob, type ProgressSnapshot, type RunJobOptions } from '../pipeline/run-job.js';
import { runWorker } from '../pipeline/run-worker.js';
import { formatSummary, nextStep } from '../pipeline/summary.js';
import { commandFor, unreadableAnswersText } from '../advice.js';
import { formatDuration } from '../duration.js';
import { outputColumns } from '../io.js';
import { AdaptiveLimiter, FixedLimiter } from '../partner/limiter/index.js';
import type { PartnerClient } from '../partner/index.js';
import { prestartTransportThread } from '../partner/thread-transport.js';
import { addNetworkOptions, openPartner } from './_connect.js';
import { jsonLogOption, parseDurationFlag, parseNumberIn, type RegisterCommand } from './context.js';

/** The flags of `run` (its settings' flags, `RUN_SETTINGS`, under commander's names for them; the way to the partner's). */
interface RunFlags extends Record<string, unknown>, NetworkFlags {
  mapping: string;
  env?: string;
  baseUrl?: string;
  apiKeyFile?: string;
  config?: string;
  limit?: number;
  fresh?: boolean;
  resendSent?: boolean;
  quiet?: boolean;
  jsonLog?: boolean;
}

/** The values of the settings' flags given, by setting name (commander names a value after its flag: `--timeout` → `timeout`). */
function settingFlags(flags: RunFlags): Partial<Record<RunSettingName, unknown>> {
  return Object.fromEntries((Object.keys(RUN_SETTINGS) as RunSettingName[]).map((name) => [name, flags[new Option(RUN_SETTINGS[name].flag).attributeName()]]));
}

/** The commander options of a setting (two for a switch: `--x` and `--no-x`). */
function optionsOf(name: RunSettingName): Option[] {
  const setting: Setting = RUN_SETTINGS[name];
  const { kind } = setting;
  const flagName = setting.flag.replace(/ .*$/, '');
  switch (kind.type) {
    case 'switch':
      return [
        new Option(setting.flag, `${kind.on}${name in DEFAULT_SWITCHES && DEFAULT_SWITCHES[name] === true ? ' (default)' : ''}`),
        new Option(setting.flag.replace(/^--/, '--no-'), `${kind.off}${name in DEFAULT_SWITCHES && DEFAULT_SWITCHES[name] === false ? ' (default)' : ''}`),
      ];
    case 'choice':
      return [new Option(setting.flag, helpOf(name)).choices(kind.choices)];
    case 'integer':
      return [new Option(setting.flag, helpOf(name)).argParser(parseNumberIn(flagName, kind.min, kind.max, true))];
    case 'number':
      return [new Option(setting.flag, helpOf(name)).argParser(parseNumberIn(flagName, kind.min, kind.max))];
    case 'duration':
      return [new Option(setting.flag, helpOf(name)).argParser(parseDurationFlag(flagName, kind.minMs, kind.maxMs))];
    case 'text':
      return [new Option(setting.flag, helpOf(name))];
  }
}

const DEFAULT_SWITCHES: Partial<Record<RunSettingName, boolean>> = { adaptive: DEFAULTS.adaptive, retryFailed: DEFAULTS.retryFailed, resendInDoubt: DEFAULTS.resendInDoubt };

export const registerRun: RegisterCommand = (program, ctx) => {
  const command = program
    .command('run')
    .description('send every row of <input> to the partner; resumes an unfinished job by itself')
    .argument('<input>', 'lead file: .csv, .tsv, .ndjson or .jsonl, optionally .gz')
    .requiredOption('--mapping <file>', 'mapping file (YAML), see docs/mapping.md')
    .option('--env <name>', 'sandbox | uat | production (default: sandbox when no base URL is configured)')
    .option('--base-url <url>', "override the environment's base URL (https://, or http:// on loopback)")
    .option('--api-key-file <file>', 'read the API key from this file (else QUOTE_BATCH_API_KEY)')
    .option('--config <file>', 'config file (default ./quote-batch.config.yaml when present)')
    .option('--limit <n>', 'process at most the first N rows', parseNumberIn('--limit', 1, Number.MAX_SAFE_INTEGER, true))
    .option('--fresh', 'start a new job even when an unfinished one matches')
    .option('--resend-sent', 'also send rows another job of this ledger sent to this environment, or whose same request it had rejected (uat, production)')
    .option('--quiet', 'no progress bar or progress lines');
  for (const name of Object.keys(RUN_SETTINGS) as RunSettingName[]) for (const option of optionsOf(name)) command.addOption(option);
  command.addOption(jsonLogOption());
  addNetworkOptions(command)
    .action(async (input: string, flags: RunFlags) => {
      ctx.setExitCode(await runCommand(input, flags));
    });

  async function runCommand(input: string, flags: RunFlags): Promise<number> {
    collectGarbageSooner();
    // The HTTP thread loads got while the run reads its config, mapping, input and ledger.
    prestartTransportThread();
    const { io } = ctx;
    const config = loadConfig(flags.config, io.cwd);
    const { ledger: ledgerPath, ...tunables } = resolveRunSettings(settingFlags(flags), io.env, config.file.defaults ?? {}, io.cwd);
    const { concurrency } = tunables;
    const settings = {
      ...tunables,
      // Never from the config file: sending a lead again is decided run by run.
      resendSent: flags.resendSent ?? false,
      fresh: flags.fresh ?? false,
      limit: flags.limit,
    };
    const logger = ctx.createLogger({ quiet: flags.quiet === true });
    const inputPath = resolve(io.cwd, input);
    const mapping = await loadMapping(resolve(io.cwd, flags.mapping));

    // Resolve the connection up front so a missing key or URL is a usage error before any work.
    const connectionFlags = {
      env: flags.env, baseUrl: flags.baseUrl, apiKeyFile: flags.apiKeyFile, config: flags.config,
      proxy: flags.proxy, caFile: flags.caFile, clientCert: flags.clientCert, clientKey: flags.clientKey, clientKeyPassphraseFile: flags.clientKeyPassphraseFile,
    };
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
    ctx.noteLedger(displayTarget(ledgerPath));
    // A run's worker rides out a database that restarts within its lease, from the start.
    const ledger = await openLedger(ledgerPath, { retryForMs: settings.leaseMs });
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
      const common = {
        inputPath,
        mapping,
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
          }, config, (message, event) => logger.info(message, { event }));
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
        // The ledger as shown: a connection string's password is never stored.
        options: { ...settings, input, mapping: flags.mapping, environment: connection.environment, ledger: ledger.path },
        stop: stop.signal,
        logger,
        onProgress: (s: ProgressSnapshot) => progress.update(s),
        progressIntervalMs: progress.intervalMs,
      } satisfies Omit<RunJobOptions, 'ledger'>;
      // On PostgreSQL this process is one worker of the job; on SQLite it is the job's one run.
      const result = isPgLedger(ledger) ? await runWorker({ ...common, ledger, leaseMs: settings.leaseMs }) : await runJob({ ...common, ledger });
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
        // What the partner announced of its limit (RateLimit-*, X-RateLimit-*), and how the run used it.
        ...(result.announced === null ? {} : {
          announced_headers: result.announced.headers, announced_rate: result.announced.rate,
          announced_windows: result.announced.windows.map((w) => `${w.name === null ? '' : `${w.name}:`}${w.limit ?? '?'}/${w.window_s ?? '?'}s`).join(','),
          announced_distrusted: result.announced.distrusted_after_ms !== null, announced_spent_until: result.announced.spent_until,
          announced_seconds: result.announced.announcedSeconds, announced_paced_seconds: result.announced.pacedSeconds,
        }),
        // On PostgreSQL: this worker's part, and the job's other workers.
        ...(result.worker === undefined ? {} : {
          workers_at_start: result.worker.workersAtStart, other_workers: result.worker.othersAtEnd, worker_rows: result.worker.rowsDone,
          chunks: result.worker.chunks, chunks_taken_over: result.worker.takenOver,
        }),
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
      io.out(await formatSummary(result, ledger, outputColumns(io)));
      return result.exitCode;
    } finally {
      if (runtime !== undefined) clearTimeout(runtime);
      ctx.stop.removeEventListener('abort', onStop);
      progress.stop();
      await closeLedger(ledger);
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

