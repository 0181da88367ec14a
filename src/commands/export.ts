import { resolve } from 'node:path';
import { Option } from 'commander';
import {
  exportRows, openReportLedger, parseStates, resolveJobId, resolveLedgerPath, writeOutput, type ExportFormat,
} from '../report/index.js';
import { parseCount, type RegisterCommand } from './context.js';

interface ExportFlags {
  ledger?: string;
  job?: number;
  status?: string;
  format: ExportFormat;
  out?: string;
}

export const registerExport: RegisterCommand = (program, ctx) => {
  program
    .command('export')
    .description('one line per row of a job (row, key, state, error, ids, premium): the file to hand back to the lead source')
    .option('--ledger <file>', 'the SQLite ledger (default: ./quote-batch.db)')
    .option('--job <id>', 'the job to export (default: the latest; see `quote-batch jobs`)', parseCount('--job'))
    .option('--status <states>', 'only rows in these states, e.g. failed,in_doubt,rejected (default: every row)')
    .addOption(new Option('--format <format>', 'output format').choices(['csv', 'ndjson']).default('csv'))
    .option('--out <file>', 'write to this file instead of standard output')
    .action((flags: ExportFlags) => {
      const states = flags.status === undefined ? [] : parseStates(flags.status);
      const ledgerPath = resolveLedgerPath(ctx.io.cwd, flags.ledger);
      const ledger = openReportLedger(ledgerPath);
      try {
        const jobId = resolveJobId(ledger.db, flags.job, ledgerPath);
        const options = { jobId, states, format: flags.format };
        if (flags.out === undefined) {
          const count = exportRows(ledger.db, options, ctx.io.out);
          ctx.io.err(`exported ${count} rows of job ${jobId}\n`);
        } else {
          const outPath = resolve(ctx.io.cwd, flags.out);
          const count = writeOutput(outPath, (write) => exportRows(ledger.db, options, write));
          ctx.io.err(`exported ${count} rows of job ${jobId} to ${outPath}\n`);
        }
      } finally {
        ledger.close();
      }
      ctx.setExitCode(0);
    });
};
