import { Option } from 'commander';
import { listJobs, openReportLedger, renderJobsTable } from '../report/index.js';
import { closeLedger, ledgerSql } from '../ledger/index.js';
import { outputColumns } from '../io.js';
import { jsonLogOption, ledgerPathOf, type RegisterCommand } from './context.js';

interface JobsFlags {
  ledger?: string;
  format: 'table' | 'json';
}

export const registerJobs: RegisterCommand = (program, ctx) => {
  program
    .command('jobs')
    .description('list the jobs of a ledger, newest first: id, input, environment, operation, status, counts, start')
    .option('--ledger <file>', 'the ledger: a SQLite file or postgres://… (default: ./quote-batch.db)')
    .addOption(new Option('--format <format>', 'output format').choices(['table', 'json']).default('table'))
    .addOption(jsonLogOption())
    .action(async (flags: JobsFlags) => {
      const ledgerPath = ledgerPathOf(ctx, flags.ledger);
      const ledger = await openReportLedger(ledgerPath);
      try {
        const jobs = await listJobs(ledgerSql(ledger));
        ctx.io.out(flags.format === 'json' ? `${JSON.stringify(jobs, null, 2)}\n` : renderJobsTable(jobs, outputColumns(ctx.io)));
      } finally {
        await closeLedger(ledger);
      }
      ctx.setExitCode(0);
    });
};
