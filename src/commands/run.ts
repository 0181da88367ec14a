/** `quote-batch run <input> --mapping <file>`: the main job; resumes by itself. */
import { resolve } from 'node:path';
import { Option } from 'commander';
import { loadConfig, OPERATIONS, resolveConnection, STORE_REQUESTS, type StoreRequests } from '../config/index.js';
import { Ledger } from '../ledger/index.js';
import { loadMapping } from '../mapping/index.js';
import type { Operation } from '../partner/types.js';
import { createProgressReporter } from '../pipeline/progress.js';
import { checkInputHeader, runJob } from '../pipeline/run-job.js';
import { formatSummary } from '../pipeline/summary.js';
import { openPartner } from './_connect.js';
import { parseNumberIn, type RegisterCommand } from './context.js';

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
  storeRequests?: StoreRequests;
  maxConsecutiveFailures?: number;
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
    .addOption(new Option('--store-requests <mode>', 'how much of each request the ledger keeps (default masked)').choices(STORE_REQUESTS))
    .option('--max-consecutive-failures <n>', 'halt after N consecutive transient failures (default 50)', parseNumberIn('--max-consecutive-failures', 1, 1e6))
    .option('--quiet', 'no progress bar or progress lines')
    .option('--json-log', 'machine-readable JSON log lines on stderr')
    .action(async (input: string, flags: RunFlags) => {
      ctx.setExitCode(await runCommand(input, flags));
    });

  async function runCommand(input: string, flags: RunFlags): Promise<number> {
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
      maxConsecutiveFailures: flags.maxConsecutiveFailures ?? d['max-consecutive-failures'] ?? 50,
      retryFailed: flags.retryFailed ?? d['retry-failed'] ?? true,
      resendInDoubt: flags.resendInDoubt ?? d['resend-in-doubt'] ?? false,
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

    // A missing column or unreadable input is a usage error before any ledger file is created.
    await checkInputHeader(inputPath, mapping);
    const ledger = Ledger.open(ledgerPath);
    const progress = createProgressReporter(
      io,
      logger,
      flags.quiet === true ? 'none' : flags.jsonLog === true ? 'json' : io.stderrTTYStream !== undefined ? 'bar' : 'lines',
    );
    try {
      const result = await runJob({
        inputPath,
        mapping,
        ledger,
        environment: connection.environment,
        operation: settings.operation,
        connect: async () => {
          const c = await openPartner(connection, io, {
            concurrency,
            timeoutMs: settings.timeoutMs,
            maxAttempts: settings.maxAttempts,
            rate: settings.rate,
            maxConsecutiveFailures: settings.maxConsecutiveFailures,
          }, config, (message) => logger.info(message, { event: 'sandbox_started' }));
          return { client: c.client, baseUrl: c.baseUrl, close: c.close };
        },
        concurrency,
        limit: settings.limit,
        fresh: settings.fresh,
        retryFailed: settings.retryFailed,
        resendInDoubt: settings.resendInDoubt,
        storeRequests: settings.storeRequests,
        options: { ...settings, input, mapping: flags.mapping, environment: connection.environment, ledger: ledgerPath },
        stop: ctx.stop,
        logger,
        onProgress: (s) => progress.update(s),
        progressIntervalMs: progress.intervalMs,
      });
      progress.stop();
      if (flags.jsonLog === true) {
        logger.info('run finished', {
          event: 'summary', job: result.job.id, run: result.runId, end: result.end, exit_code: result.exitCode,
          duration_ms: Math.round(result.durationMs), ...result.counts,
        });
      }
      io.out(formatSummary(result, ledger));
      return result.exitCode;
    } finally {
      progress.stop();
      ledger.close();
    }
  }
};
