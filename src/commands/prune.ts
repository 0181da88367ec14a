/** `quote-batch prune --older-than <duration> [--vacuum]`: drops old finished jobs from a ledger. */
import { closeLedger, openLedger, pruneLedger, vacuumOf, type PruneCandidate } from '../ledger/index.js';
import { jsonLogOption, ledgerPathOf, parseDurationFlag, type RegisterCommand } from './context.js';
import { MAX_AGE_MS } from '../duration.js';

interface PruneFlags {
  ledger?: string;
  olderThan: number;
  includeUnfinished?: boolean;
  vacuum?: boolean;
  dryRun?: boolean;
  jsonLog?: boolean;
}

export const registerPrune: RegisterCommand = (program, ctx) => {
  program
    .command('prune')
    .description('drop completed jobs older than a duration (their rows, attempts, runs, samples, resolutions); --vacuum returns the space')
    .option('--ledger <file>', 'the ledger: a SQLite file or postgres://… (default: ./quote-batch.db)')
    .requiredOption('--older-than <duration>', 'drop jobs with no activity for this long: 90s, 15m, 2h, 30d (a bare number is seconds)', parseDurationFlag('--older-than', 1, MAX_AGE_MS))
    .option('--include-unfinished', 'also drop unfinished jobs (their failed and in_doubt rows are lost)')
    .option('--vacuum', 'then rewrite the file to return the freed space (needs no other process on the ledger)')
    .option('--dry-run', 'only list the jobs that would be dropped')
    .addOption(jsonLogOption())
    .action(async (flags: PruneFlags) => {
      const logger = ctx.createLogger();
      const ledgerPath = ledgerPathOf(ctx, flags.ledger);
      const ledger = await openLedger(ledgerPath, { mustExist: true });
      const lines: string[] = [];
      try {
        const dryRun = flags.dryRun === true;
        const result = await pruneLedger(ledger, { olderThanMs: flags.olderThan, includeUnfinished: flags.includeUnfinished === true, dryRun });
        const n = result.dropped.length;
        const kind = `${flags.includeUnfinished === true ? '' : 'completed '}${n === 1 ? 'job' : 'jobs'}`;
        const rows = result.dropped.reduce((sum, job) => sum + job.rows, 0);
        // Jobs old enough but in use, or kept for an older one, are named in the warnings below.
        const leftAlone = result.inUse.length + result.keptForOlder.length;
        lines.push(n === 0
          ? leftAlone > 0
            ? `${dryRun ? 'would drop' : 'dropped'} no ${kind}: ${leftAlone} without activity since ${result.cutoff} ${leftAlone === 1 ? 'was' : 'were'} left (below)`
            : `no ${kind} without activity since ${result.cutoff}`
          : `${dryRun ? 'would drop' : 'dropped'} ${n} ${kind} without activity since ${result.cutoff} (${rows} ${rows === 1 ? 'row' : 'rows'}): ${describeJobs(result.dropped)}`);
        for (const job of result.keptForOlder) {
          logger.warn(`job ${job.id} kept: an older unfinished job of the same input and mapping stays, and would be resumed without it (drop both with --include-unfinished)`, {
            event: 'prune_kept', job: job.id,
          });
        }
        for (const job of result.inUse) {
          logger.warn(`job ${job.id} is in use by another process: left for the next prune`, { event: 'prune_skipped', job: job.id });
        }
        if (flags.vacuum === true && !dryRun) {
          const vacuum = vacuumOf(ledger);
          if (vacuum === null) {
            lines.push('vacuum: not needed on PostgreSQL (its autovacuum returns the space)');
          } else if (vacuum.skippedForJobs.length > 0) {
            logger.warn(`vacuum skipped: job(s) ${vacuum.skippedForJobs.join(', ')} are in use by another process; run prune --vacuum when no run is active`, {
              event: 'vacuum_skipped', jobs: vacuum.skippedForJobs.join(','),
            });
          } else {
            lines.push(`vacuum: ledger ${formatBytes(vacuum.bytesBefore)} → ${formatBytes(vacuum.bytesAfter)}`);
            if (ctx.jsonLog) logger.info('vacuumed', { event: 'vacuum', bytes_before: vacuum.bytesBefore, bytes_after: vacuum.bytesAfter });
          }
        }
        if (ctx.jsonLog) {
          logger.info(dryRun ? 'prune dry run' : 'pruned', {
            event: 'prune', dry_run: dryRun, cutoff: result.cutoff, jobs: result.dropped.length, rows, in_use: result.inUse.length,
          });
        }
      } finally {
        await closeLedger(ledger);
      }
      // Done: a reader that closes standard output no longer changes the outcome.
      ctx.setExitCode(0);
      ctx.io.out(`${lines.join('\n')}\n`);
    });
};

function describeJobs(jobs: readonly PruneCandidate[]): string {
  const shown = jobs.slice(0, 10).map((job) => `${job.id} (${job.status}, ${job.input_path})`);
  return jobs.length > 10 ? `${shown.join(', ')} and ${jobs.length - 10} more` : shown.join(', ');
}

function formatBytes(bytes: number): string {
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}
