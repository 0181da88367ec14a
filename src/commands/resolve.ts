/**
 * `quote-batch resolve (--rows <n,...> | --all-in-doubt) --as succeeded|pending`: settles rows left
 * `in_doubt` once ops know what the partner did with them.
 */
import { InvalidArgumentError, Option } from 'commander';
import { QuoteBatchError } from '../errors.js';
import { closeLedger, displayTarget, ledgerSql, openLedger, RESOLUTIONS, resolveRows, type Resolution, type ResolveResult } from '../ledger/index.js';
import { commandFor, settleInDoubt } from '../advice.js';
import { resolveChanges } from '../pipeline/row-state.js';
import { resolveJobId } from '../report/index.js';
import { jsonLogOption, ledgerPathOf, parseCount, type RegisterCommand } from './context.js';

interface ResolveFlags {
  ledger?: string;
  job?: number;
  rows?: number[];
  allInDoubt?: boolean;
  as: Resolution;
  note?: string;
  jsonLog?: boolean;
}

/** Most rows one `--rows` may name (ranges included): a bound on a typo such as 1-99999999. */
const MAX_ROWS = 1_000_000;

export const registerResolve: RegisterCommand = (program, ctx) => {
  program
    .command('resolve')
    .description('settle rows left in_doubt once you know what the partner did: --as succeeded (it has them) or --as pending (send them next run)')
    .option('--ledger <file>', 'the ledger: a SQLite file or postgres://… (default: ./quote-batch.db)')
    .option('--job <id>', 'the job (default: the latest; see `quote-batch jobs`)', parseCount('--job'))
    .option('--rows <list>', 'the rows to settle, e.g. 17,42,100-120 (row numbers as in `export --status in_doubt`)', parseRowList)
    .option('--all-in-doubt', 'settle every row of the job that is in_doubt')
    .addOption(new Option('--as <state>', 'what the partner did: succeeded (it has the lead) or pending (it does not)').choices(RESOLUTIONS).makeOptionMandatory())
    .option('--note <text>', 'why, for the record (kept in the resolutions table), e.g. a ticket number')
    .addOption(jsonLogOption())
    .action(async (flags: ResolveFlags) => {
      const ledgerPath = ledgerPathOf(ctx, flags.ledger);
      if ((flags.rows === undefined) === (flags.allInDoubt !== true)) {
        throw new QuoteBatchError('E_USAGE', 'give either --rows <list> or --all-in-doubt', {
          hint: `list the rows in doubt with \`${commandFor('export', { ledger: displayTarget(ledgerPath), job: flags.job }, '--status in_doubt')}\``,
        });
      }
      const ledger = await openLedger(ledgerPath, { mustExist: true });
      try {
        const jobId = await resolveJobId(ledgerSql(ledger), flags.job, ledger.path);
        const result = await resolveRows(ledger, { jobId, rows: flags.rows ?? 'all-in-doubt', changes: resolveChanges(flags.as), note: flags.note ?? null });
        if (result.refused.length > 0) {
          const listed = result.refused.slice(0, 20).map((r) => `${r.row} (${r.state ?? 'no such row'})`).join(', ');
          const more = result.refused.length > 20 ? ` and ${result.refused.length - 20} more` : '';
          // The crashed runs were settled all the same (their rows in flight are in doubt now): say so.
          const settled = result.newlyInDoubt === 0 ? 'nothing was changed'
            : `no row was resolved; ${stoppedRunRowsText(result.newlyInDoubt)} all the same`;
          throw new QuoteBatchError('E_USAGE', `only rows in_doubt can be resolved; not in doubt in job ${jobId}: ${listed}${more}; ${settled}`, {
            hint: `list the rows in doubt with \`${commandFor('export', { ledger: ledger.path, job: jobId }, '--status in_doubt')}\``,
          });
        }
        const logger = ctx.createLogger();
        const rows = formatRowList(result.resolved);
        const crashed = result.crashedRuns === 0 && result.newlyInDoubt === 0
          ? []
          : [`job ${jobId}: ${crashedRunsText(result.crashedRuns, result.newlyInDoubt)}${
            flags.rows === undefined && result.newlyInDoubt > 0 ? ` (not settled here: ${settleInDoubt({ ledger: ledger.path, job: jobId })})` : ''}`];
        const done = result.resolved.length > 0
          ? `job ${jobId}: ${result.resolved.length} row(s) resolved from in_doubt to ${flags.as} (rows ${rows})`
          : result.newlyInDoubt > 0 ? `job ${jobId}: no row was in doubt before; nothing resolved` : `job ${jobId}: no rows in doubt; nothing to resolve`;
        const after = result.jobStatus === 'completed' ? `job ${jobId} is completed: every row is final` : nextRunText(jobId, result);
        // Rows other jobs recorded duplicate on the word of rows now pending: their lead was never sent.
        const others = [
          ...result.reopened.map(({ jobId: other, rows: r }) =>
            `job ${other}: ${r.length} row(s) that it had recorded duplicate because of these rows are pending again (rows ${formatRowList(r)}): the next run of job ${other}'s file sends their leads, unless a run of job ${jobId} sends them first`),
          ...result.notReopened.map(({ jobId: other, rows: r }) =>
            `job ${other} is being run by another process: its ${r.length} row(s) recorded duplicate because of these rows (rows ${formatRowList(r)}) stay so, though their leads were never sent; once it ends, send them with \`${commandFor('export', { ledger: ledger.path, job: other }, '--status duplicate --format source')}\` (keep those rows) and --resend-sent`),
        ];
        if (ctx.jsonLog) {
          logger.info('resolved rows in doubt', {
            event: 'resolve', job: jobId, to: flags.as, resolved: result.resolved.length, job_status: result.jobStatus, unfinished: result.unfinished,
            crashed_runs: result.crashedRuns, newly_in_doubt: result.newlyInDoubt, in_doubt: result.inDoubt, read_to_end: result.readToEnd,
            reopened_rows: result.reopened.reduce((n, r) => n + r.rows.length, 0), not_reopened_rows: result.notReopened.reduce((n, r) => n + r.rows.length, 0),
          });
        }
        // Recorded: a reader that closes standard output no longer changes the outcome.
        ctx.setExitCode(0);
        ctx.io.out(`${[...crashed, done, after, ...others].join('\n')}\n`);
      } finally {
        await closeLedger(ledger);
      }
    });
};

/** What settling the runs a process left behind did: `runs` found crashed, `rows` they (or a run that failed) left in flight. */
function crashedRunsText(runs: number, rows: number): string {
  if (runs === 0) return stoppedRunRowsText(rows);
  const left = rows === 0 ? 'they left no row in flight' : `the ${rows} row(s) they left in flight are now in doubt`;
  return `${runs} run(s) had ended without recording it (crash or kill): ${left}`;
}

function stoppedRunRowsText(rows: number): string {
  return `the ${rows} row(s) a stopped run had left in flight are now in doubt`;
}

/** What the next run of a job not completed does: the rows it sends, the input it has yet to read, the rows in doubt it leaves. */
function nextRunText(jobId: number, result: ResolveResult): string {
  const toSend = result.unfinished - result.inDoubt;
  const sends = [
    toSend > 0 ? `sends its ${toSend} row(s) still to send` : '',
    result.readToEnd ? '' : 'reads the rest of the input',
  ].filter((part) => part !== '').join(' and ');
  const next = sends === '' ? 'sends nothing' : sends;
  const left = result.inDoubt === 0 ? ''
    : `; its ${result.inDoubt} row(s) in doubt stay so until settled here (or sent again by a run with --resend-in-doubt)`;
  return `job ${jobId} is not completed: the next \`quote-batch run\` of the same file and mapping ${next}${left}`;
}

/** Parses `17,42,100-120` into row numbers (≥ 1); throws a usage error naming the flag. */
export function parseRowList(value: string): number[] {
  const rows: number[] = [];
  for (const part of value.split(',')) {
    const m = /^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$/.exec(part);
    const from = Number(m?.[1]);
    const to = m?.[2] === undefined ? from : Number(m[2]);
    if (m === null || from < 1 || to < from) {
      throw new InvalidArgumentError(`--rows expects row numbers and ranges such as 17,42,100-120, got "${value}"`);
    }
    if (rows.length + (to - from + 1) > MAX_ROWS) throw new InvalidArgumentError(`--rows names more than ${MAX_ROWS} rows`);
    for (let row = from; row <= to; row += 1) rows.push(row);
  }
  return rows;
}

/** `1-3, 7, 9-12`: sorted row numbers written back as ranges, the first 20 of them. */
function formatRowList(rows: readonly number[]): string {
  const parts: string[] = [];
  let i = 0;
  while (i < rows.length && parts.length < 20) {
    let j = i;
    while (j + 1 < rows.length && rows[j + 1] === (rows[j] as number) + 1) j += 1;
    parts.push(i === j ? String(rows[i]) : `${rows[i]}-${rows[j]}`);
    i = j + 1;
  }
  return i < rows.length ? `${parts.join(', ')}, …` : parts.join(', ');
}
