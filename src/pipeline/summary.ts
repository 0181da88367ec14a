/** The summary printed at the end of `run` (also when a completed job is run again). */
import { formatErrorGroupLines, groupRowErrors, wrapWords } from '../error-groups.js';
import { errorRowBatches, ledgerSql, ROW_STATES, type Ledger, type SqlDb } from '../ledger/index.js';
import { commandFor, settleInDoubt, unreadableAnswersText } from '../advice.js';
import type { RunJobResult } from './run-job.js';
import { describeWindow } from '../partner/announced-limit.js';
import { formatDuration } from '../duration.js';

/** The closing line: what the exit code means and, for 3, what to do next. */
export function nextStep(result: RunJobResult, ledgerPath: string): string {
  const here = { ledger: ledgerPath, job: result.job.id };
  const others = result.worker?.othersAtEnd ?? 0;
  if (others > 0 && result.end === 'unfinished') {
    return `this worker's part is done; job ${result.job.id} goes on with ${others} other worker(s), and the last of them completes it`;
  }
  if (result.exitCode === 0 && result.emptyInput) return 'job completed; the input had no data rows (nothing was sent)';
  if (result.exitCode === 0) return 'job completed; every row succeeded (or was a duplicate)';
  if (result.exitCode === 1) return 'job completed; some rows need their data fixed (invalid, rejected or agent_invalid)';
  if (result.end === 'halted') {
    const reason = result.haltReason ?? '';
    switch (result.haltKind) {
      case 'forbidden':
        return 'job not completed: the partner refused the API key; fix QUOTE_BATCH_API_KEY / --api-key-file or --env, then run again to resume';
      case 'misrouted':
        return 'job not completed: the partner says the endpoint is wrong; check --base-url / --env (and the gateway), then run again to resume';
      case 'retry_after':
        return `job not completed: ${reason}`;
      case 'quota':
        return `job not completed: the partner's quota for this key is spent; ${result.counts.pending} row(s) left pending: run the same command again after ${result.haltRetryAfter?.toISOString() ?? 'its reset'} to send them`;
      case 'outage':
        return 'job not completed: the partner looks down; run the same command again later to resume';
      case 'proxy_auth':
        return 'job not completed: the proxy refused its credentials (407); fix the proxy URL\'s user and password, then run again to resume';
      case 'tls_trust':
        return 'job not completed: the partner\'s TLS certificate is not trusted; give its CA with --ca-file, then run again to resume';
      case 'tls_client_cert':
        return 'job not completed: the partner refused the TLS connection without a client certificate it trusts; give it with --client-cert and --client-key, then run again to resume';
      case 'refused':
        return `job not completed: ${reason}`;
      case 'unreachable':
        return `job not completed: ${reason}; fix the base URL (--base-url, --env, QUOTE_BATCH_*_URL or the config file), then run the same command again`;
      case 'in_doubt':
        // A resumed run does not resend rows in doubt: saying only "run again" would leave them.
        return `job not completed: the partner stopped answering and ${result.counts.in_doubt} row(s) are in doubt; ${settleInDoubt(here)}, then run the same command again later to resume`;
      default:
        return `job not completed (${reason}); run the same command again to resume`;
    }
  }
  if (result.end === 'interrupted') return 'job not completed (interrupted); run the same command again to resume';
  if (result.limitedTo !== null) return `job not completed: this run was limited to the first ${result.limitedTo} rows; run without --limit to send the rest`;
  const { failed, in_doubt: inDoubt, pending } = result.counts;
  if (failed + pending > 0) return `job not completed: ${failed + pending} row(s) still to send; run the same command again to resume`;
  if (inDoubt > 0) return `job not completed: ${inDoubt} row(s) in doubt; ${settleInDoubt(here)}, then run the same command again to resume`;
  return 'job not completed; run the same command again to resume';
}

/** True when the partner's announced rate, kept to, paced most of the run's seconds in which it was in force. */
function pacedByAnnounced(announced: RunJobResult['announced']): boolean {
  return announced !== null && announced.distrusted_after_ms === null && announced.pacedSeconds > 0 && announced.pacedSeconds >= announced.announcedSeconds / 2;
}

/**
 * What the partner announced of its limit, and what the run made of it: paced by it, ignored once
 * it was not kept to, or a quota spent.
 */
export function announcedLines(announced: NonNullable<RunJobResult['announced']>, width = 100): string[] {
  const windows = announced.windows.map((w) => describeWindow({ limit: w.limit, windowS: w.window_s, remaining: null, longestResetS: 0 })).join(', ');
  const lines = [`announced    ${windows} (${announced.headers})`];
  let then: string;
  if (announced.distrusted_after_ms !== null) {
    then = `not kept to: ${announced.throttled_under} of the ${announced.answers_under} requests sent within it were answered 429; ignored after ${formatDuration(announced.distrusted_after_ms)}, the pace learned from the partner's 429s instead`;
  } else if (announced.spent_until !== null) {
    then = `its quota spent until ${announced.spent_until}`;
  } else if (announced.rate === null) {
    then = 'a quota, not a rate: the run kept within what was left of it';
  } else if (announced.pacedSeconds > 0) {
    then = `the run was paced by it in ${announced.pacedSeconds} of its ${announced.announcedSeconds} s`;
  } else {
    then = 'the run kept within it without being held back by it';
  }
  lines.push(...wrapWords(then, Math.max(40, width - 13), 4).map((line) => `${' '.repeat(13)}${line}`));
  return lines;
}

/** Error kinds the summary lists; `report` lists more. */
const SUMMARY_ERROR_KINDS = 5;

/**
 * The summary as text of at most `width` columns (the terminal's, else 100): rows by state, the
 * most frequent error kinds (grouped as `report` and `check` group them), and what to do next.
 */
export async function formatSummary(result: RunJobResult, ledger: Ledger | { readonly path: string; readonly sql: SqlDb }, width = 100): Promise<string> {
  const { job, counts } = result;
  const here = { ledger: ledger.path, job: job.id };
  const total = ROW_STATES.reduce((sum, s) => sum + counts[s], 0);
  const lines: string[] = [];
  // Stopped by its --limit only when nothing else ended it (a halt or Ctrl-C while the last answers came in).
  const ending = result.limitedTo !== null && result.end === 'unfinished' ? `stopped at --limit ${result.limitedTo}` : result.end;
  const worker = result.worker;
  const title = result.alreadyCompleted ? `job ${job.id}: already completed, nothing sent`
    : worker !== undefined && worker.othersAtEnd > 0 && result.end === 'unfinished' ? `job ${job.id}: run ${result.runId ?? '-'} (a worker) done with its part`
      : `job ${job.id}: run ${result.runId ?? '-'} ${ending}`;
  lines.push('', title, '-'.repeat(Math.min(78, title.length)));
  lines.push(`input        ${job.input_path}`);
  lines.push(`environment  ${job.environment} (${job.operation})`);
  lines.push(`ledger       ${ledger.path}`);
  if (!result.alreadyCompleted) lines.push(`duration     ${(result.durationMs / 1000).toFixed(1)} s${result.resumed && worker === undefined ? ' (resumed)' : ''}`);
  if (worker !== undefined && !result.alreadyCompleted) {
    const took = worker.takenOver > 0 ? `, ${worker.takenOver} taken over from workers whose lease ran out` : '';
    const now = worker.othersAtEnd > 0 ? `${worker.othersAtEnd} other worker(s) still at it` : 'no other worker at it now';
    lines.push(`workers      ${worker.workersAtStart} when this one started; it settled ${worker.rowsDone} row(s) in ${worker.chunks} chunk(s)${took}; ${now}`);
  }
  if (result.haltReason !== null) lines.push(`stopped      ${result.haltReason}`);
  // After an outage the figures are from before it: the back-off since says nothing of the partner's limit.
  // A median, as `report`'s settled limit: the end of a run moves too much to be read alone.
  const span = `median of ${result.settledSamples === 1 ? '1 s' : `the last ${result.settledSamples} s`}`;
  const when = result.settledBeforeSilence ? `when the partner last answered (${span} of answers)` : `at the end (${span})`;
  if (result.settledLimit !== null) {
    const allowed = `in flight    ${Math.round(result.settledLimit * 10) / 10} requests allowed ${when}`;
    // At the ceiling the partner showed no limit of its own: the number is the user's, not a finding.
    // Nor below it when the run seldom filled its window and met no 429 or failure.
    const heldBy = result.limitHeldBy === 'rate' ? `--rate ${result.rateCap}/s held the sends back` : 'the run had fewer requests to send than it allowed';
    lines.push(result.settledLimit >= result.ceiling
      ? `${allowed}: the --concurrency ceiling (the partner's answers never called for fewer)`
      : result.limitHeldBy !== null
        ? `${allowed} (adaptive concurrency; ${heldBy}, so the window seldom filled: no limit of the partner's)`
        : `${allowed} (adaptive concurrency: where the partner's answers led it)`);
  }
  if (result.settledPace !== null) {
    const why = pacedByAnnounced(result.announced) ? 'the rate the partner announces' : 'paced since the partner\'s 429s: about its rate limit';
    lines.push(`pace         ${Math.round(result.settledPace * 10) / 10} requests/s ${when} (${why})`);
  }
  if (result.announced !== null) lines.push(...announcedLines(result.announced, width));
  lines.push('', 'rows by state');
  for (const state of ROW_STATES) {
    if (counts[state] === 0) continue;
    const pct = total > 0 ? ((100 * counts[state]) / total).toFixed(1) : '0.0';
    lines.push(`  ${state.padEnd(14)} ${String(counts[state]).padStart(8)}  ${pct.padStart(5)}%`);
  }
  // A run that stopped before it knew the end of the file counts only the rows it had read.
  const unread = !result.alreadyCompleted && result.end !== 'completed' && job.total_rows === null;
  lines.push(`  ${'total'.padEnd(14)} ${String(total).padStart(8)}${unread ? '  (rows read before the run stopped; the input may hold more)' : ''}`);
  if (result.unreadableAnswers > 0) {
    const text = `Of the succeeded rows, ${unreadableAnswersText(result.unreadableAnswers)}: ${commandFor('export', here, '--status succeeded')} lists them (see input_issues_json).`;
    lines.push('', ...wrapWords(text, width, 6));
  }
  const errors = await groupRowErrors(errorRowBatches(ledgerSql(ledger), job.id), { limit: SUMMARY_ERROR_KINDS, samples: 2 });
  if (errors.groups.length > 0) {
    lines.push('', `errors by kind (${errors.kinds} ${errors.kinds === 1 ? 'kind' : 'kinds'}, most rows first)`);
    for (const g of errors.groups) lines.push(...formatErrorGroupLines({ count: g.rows, description: g.kind, sampleRows: g.sample_rows }, width, 6));
    if (errors.kinds > errors.groups.length) {
      lines.push(`  … ${errors.kinds - errors.groups.length} more: ${commandFor('report', here)}`);
    }
  }
  const { sent: sentBefore, rejected: rejectedBefore } = result.byOtherJobs;
  if (sentBefore > 0) {
    lines.push('', `${sentBefore} duplicate row(s) were not sent: another job of this ledger had sent (or may have sent)`,
      `their leads to ${job.environment} (a changed input or mapping, or --fresh, makes a new job). List them with`,
      `  ${commandFor('export', here, `--status duplicate --format source --out sent-before.${job.input_format}`)}`,
      'and to send some all the same, keep those rows in that file and run it with --resend-sent.');
    const { in_doubt_there: doubtful, in_doubt_jobs: doubtJobs } = result.byOtherJobs;
    if (doubtful > 0) {
      const there = doubtJobs.length === 1 ? `job ${doubtJobs[0]}` : `jobs ${doubtJobs.join(', ')}`;
      lines.push(`Of those, ${doubtful} only may have been sent: their rows are in doubt in ${there}. Settle them there`,
        ...doubtJobs.slice(0, 3).map((other) => `  ${commandFor('resolve', { ledger: ledger.path, job: other }, '--rows <n,...> --as succeeded|pending')}`),
        '(pending: the partner never had the lead; these rows become pending again, and the next run sends it).');
    }
  }
  if (rejectedBefore > 0) {
    lines.push('', `${rejectedBefore} rejected row(s) were not sent again: the partner had rejected the very same request in`,
      'another job, and they carry its answer. Fix their data (export --status rejected --format source',
      'lists them), or send them as they are: a file of those rows, run with --resend-sent.');
  }
  if (counts.in_doubt > 0) {
    lines.push('', `${counts.in_doubt} row(s) in doubt: they may have reached the partner. List them with`,
      `  ${commandFor('export', here, '--status in_doubt')}`,
      'then, once the partner told you, settle them with',
      `  ${commandFor('resolve', here, '--rows <n,...> --as succeeded|pending')}`,
      '(pending: sent by the next run), or re-run with --resend-in-doubt to send them all again.');
  }
  lines.push('', `exit ${result.exitCode}: ${nextStep(result, ledger.path)}`, '');
  return lines.join('\n');
}
