import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { Option } from 'commander';
import { QuoteBatchError } from '../errors.js';
import { detectInput } from '../input/index.js';
import { loadMapping, resolveInputOptions } from '../mapping/index.js';
import { sha256File } from '../pipeline/run-job.js';
import {
  checkSourcePositions, exportRows, exportSourceRows, openReportLedger, parseStates, refuseProtectedOut, resolveJobId, writeOutputAsync,
  type ExportFormat, type SourceInput,
} from '../report/index.js';
import { closeLedger, inputReadingOf, ledgerSql, type AnyLedger, type RowState } from '../ledger/index.js';
import { outputBytes, outputText } from '../io.js';
import { jsonLogOption, ledgerPathOf, parseCount, type CommandContext, type RegisterCommand } from './context.js';

interface ExportFlags {
  ledger?: string;
  job?: number;
  status?: string;
  format: ExportFormat | 'source';
  out?: string;
}

export const registerExport: RegisterCommand = (program, ctx) => {
  program
    .command('export')
    .description('the rows of a job with their outcome: one line each (csv, ndjson), or in the input\'s own layout (source), to hand back to the lead source')
    .option('--ledger <file>', 'the ledger: a SQLite file or postgres://… (default: ./quote-batch.db)')
    .option('--job <id>', 'the job to export (default: the latest; see `quote-batch jobs`)', parseCount('--job'))
    .option('--status <states>', 'only rows in these states, e.g. failed,in_doubt,rejected (default: every row)')
    .addOption(new Option('--format <format>', 'csv/ndjson: the outcome columns; source: the input\'s own rows with qb_state, qb_error_code, qb_error_message appended')
      .choices(['csv', 'ndjson', 'source']).default('csv'))
    .option('--out <file>', 'write to this file instead of standard output')
    .addOption(jsonLogOption())
    .action(async (flags: ExportFlags) => {
      const states = flags.status === undefined ? [] : parseStates(flags.status);
      const ledgerPath = ledgerPathOf(ctx, flags.ledger);
      const ledger = await openReportLedger(ledgerPath);
      try {
        const jobId = await resolveJobId(ledgerSql(ledger), flags.job, ledger.path);
        const outPath = flags.out === undefined ? undefined : resolve(ctx.io.cwd, flags.out);
        if (outPath !== undefined) await refuseProtectedOut(outPath, ledger.path, ledgerSql(ledger));
        const count = flags.format === 'source'
          ? await exportSource(ctx, ledger, { jobId, states }, outPath)
          : await exportOutcomes(ctx, ledger, { jobId, states, format: flags.format }, outPath);
        ctx.createLogger().info(`exported ${count} rows of job ${jobId}${outPath === undefined ? '' : ` to ${outPath}`}`, {
          event: 'exported', job_id: jobId, rows: count, format: flags.format, out: outPath,
        });
      } finally {
        await closeLedger(ledger);
      }
      ctx.setExitCode(0);
    });
};

function exportOutcomes(ctx: CommandContext, ledger: AnyLedger, options: Parameters<typeof exportRows>[1], outPath: string | undefined): Promise<number> {
  const db = ledgerSql(ledger);
  if (outPath === undefined) return exportRows(db, options, outputText(ctx.io));
  return writeOutputAsync(outPath, (write) => exportRows(db, options, write));
}

async function exportSource(
  ctx: CommandContext,
  ledger: AnyLedger,
  selection: { jobId: number; states: RowState[] },
  outPath: string | undefined,
): Promise<number> {
  // The cheap refusal first: a ledger without positions needs no input file.
  const db = ledgerSql(ledger);
  await checkSourcePositions(db, selection.jobId, selection.states);
  const options = { ...selection, input: await readSourceInput(ledger, selection.jobId, ctx.io.cwd) };
  if (outPath !== undefined) return writeOutputAsync(outPath, (write) => exportSourceRows(db, options, write));
  // Bytes, not text: the rows most in need of fixing may be the ones that are not valid UTF-8.
  const out = outputBytes(ctx.io);
  const count = await exportSourceRows(db, options, out.write);
  out.end();
  return count;
}

/**
 * The job's input as the run read it: the same file (its SHA-256 as recorded), with the format
 * and delimiter its mapping gives. Refuses when the file is gone or changed, or the mapping unreadable.
 */
async function readSourceInput(ledger: AnyLedger, jobId: number, cwd: string): Promise<SourceInput> {
  const job = await ledger.getJob(jobId);
  if (job === undefined) throw new QuoteBatchError('E_USAGE', `job ${jobId} is not in ledger ${ledger.path}`);
  // `run` records absolute paths; resolving keeps a hand-made relative one working too.
  const path = resolve(cwd, job.input_path);
  const mappingPath = resolve(cwd, job.mapping_path);
  const what = `cannot export the rows of job ${jobId} in their input's layout`;
  const hint = `put back the file the job read at ${path}, or export the outcomes alone with --format csv`;
  if (!existsSync(path) || !statSync(path).isFile()) {
    throw new QuoteBatchError('E_INPUT', `${what}: its input file ${path} is gone`, { hint });
  }
  if ((await sha256File(path)) !== job.input_sha256) {
    throw new QuoteBatchError('E_INPUT', `${what}: ${path} has changed since the job read it (its SHA-256 differs)`, { hint });
  }
  let mapping;
  try {
    mapping = await loadMapping(mappingPath);
  } catch (error) {
    throw new QuoteBatchError('E_MAPPING', `${what}: its mapping ${mappingPath}, which gives the input's format and delimiter, cannot be read: ${(error as Error).message}`, {
      cause: error,
      hint: 'put the mapping back at that path, or export the outcomes alone with --format csv',
    });
  }
  const options = resolveInputOptions(path, mapping);
  const { format, gzip } = detectInput(path, options.format);
  return { path, format, gzip, delimiter: options.delimiter ?? (format === 'tsv' ? '\t' : ','), ...inputReadingOf(job.input_reader) };
}
