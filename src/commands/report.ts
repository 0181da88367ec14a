import { resolve } from 'node:path';
import { Option } from 'commander';
import {
  buildReport, openReportLedger, readProblemRows, renderCsv, renderHtml, renderTable, resolveJobId,
  refuseProtectedOut, writeOutput, type ProblemRows, type Report,
} from '../report/index.js';
import { closeLedger, ledgerSql } from '../ledger/index.js';
import { outputColumns } from '../io.js';
import { jsonLogOption, ledgerPathOf, parseCount, type RegisterCommand } from './context.js';

type ReportFormat = 'table' | 'json' | 'csv' | 'html';

interface ReportFlags {
  ledger?: string;
  job?: number;
  format: ReportFormat;
  out?: string;
}

export const registerReport: RegisterCommand = (program, ctx) => {
  program
    .command('report')
    .description('summarise a job of the ledger: outcomes, errors, agents, premiums, latency, runs')
    .option('--ledger <file>', 'the ledger: a SQLite file or postgres://… (default: ./quote-batch.db)')
    .option('--job <id>', 'the job to report on (default: the latest; see `quote-batch jobs`)', parseCount('--job'))
    .addOption(new Option('--format <format>', 'output format').choices(['table', 'json', 'csv', 'html']).default('table'))
    .option('--out <file>', 'write the report to this file instead of standard output')
    .addOption(jsonLogOption())
    .action(async (flags: ReportFlags) => {
      const ledgerPath = ledgerPathOf(ctx, flags.ledger);
      const ledger = await openReportLedger(ledgerPath);
      let text: string;
      let jobId: number;
      try {
        const db = ledgerSql(ledger);
        jobId = await resolveJobId(db, flags.job, ledger.path);
        if (flags.out !== undefined) await refuseProtectedOut(resolve(ctx.io.cwd, flags.out), ledger.path, db);
        const report = await buildReport(db, jobId);
        // The terminal's width only when the table goes to it (a file gets the default width).
        const width = flags.out === undefined ? outputColumns(ctx.io) : undefined;
        text = await formatReport(report, flags.format, { width, ledger: ledger.path, problems: () => readProblemRows(db, jobId) });
      } finally {
        await closeLedger(ledger);
      }
      if (flags.out === undefined) {
        ctx.io.out(text);
      } else {
        const outPath = resolve(ctx.io.cwd, flags.out);
        writeOutput(outPath, (write) => write(text));
        ctx.createLogger().info(`report of job ${jobId} written to ${outPath}`, { event: 'report_written', job_id: jobId, format: flags.format, out: outPath });
      }
      ctx.setExitCode(0);
    });
};

async function formatReport(
  report: Report,
  format: ReportFormat,
  options: { width: number | undefined; ledger: string; problems: () => Promise<ProblemRows> },
): Promise<string> {
  switch (format) {
    case 'json':
      return `${JSON.stringify(report, null, 2)}\n`;
    case 'csv':
      return renderCsv(report);
    case 'html':
      return renderHtml(report, await options.problems(), options.ledger);
    case 'table':
      return renderTable(report, { width: options.width, ledger: options.ledger });
  }
}
