/** `quote-batch check <input> --mapping <file>`: read, map and validate every row offline. */
import { resolve } from 'node:path';
import { checkInput, loadMapping, type CheckSummary, type IssueCount } from '../mapping/index.js';
import type { RegisterCommand } from './context.js';

interface CheckFlags {
  mapping: string;
  json?: boolean;
}

export const registerCheck: RegisterCommand = (program, ctx) => {
  program
    .command('check')
    .description('read, map and validate every row offline (nothing is sent); exit 0 all valid, 1 some invalid, 2 bad mapping or file')
    .argument('<input>', 'lead file: .csv, .tsv, .ndjson or .jsonl, optionally .gz')
    .requiredOption('--mapping <file>', 'mapping file (YAML, see docs/mapping.md)')
    .option('--json', 'print the summary as JSON')
    .action(async (input: string, flags: CheckFlags) => {
      const mapping = await loadMapping(resolve(ctx.io.cwd, flags.mapping));
      const summary = await checkInput(resolve(ctx.io.cwd, input), mapping, { signal: ctx.stop });
      // Paths as the user typed them, not as resolved.
      summary.input = input;
      summary.mapping = flags.mapping;
      ctx.io.out(flags.json === true ? `${JSON.stringify(summary, null, 2)}\n` : formatSummary(summary));
      ctx.setExitCode(summary.interrupted ? 3 : summary.invalid > 0 ? 1 : 0);
    });
};

function formatSummary(s: CheckSummary): string {
  const lines: string[] = [];
  const rate = s.durationMs > 0 ? ` (${Math.round((s.rows * 1000) / s.durationMs).toLocaleString('en-US')} rows/s)` : '';
  lines.push(`checked ${s.input} with ${s.mapping} (${s.format}): ${s.rows} rows in ${(s.durationMs / 1000).toFixed(2)} s${rate}`);
  if (s.interrupted) lines.push('interrupted: the counts cover the rows read so far');
  lines.push(`  valid    ${s.valid}`);
  lines.push(`  invalid  ${s.invalid}${s.unreadable > 0 ? ` (${s.unreadable} unreadable)` : ''}`);
  lines.push(`  warnings ${s.warnings} in ${s.rowsWithWarnings} rows`);
  if (s.topErrors.length > 0) {
    lines.push('', 'most frequent errors:');
    lines.push(...s.topErrors.map(formatCount));
  }
  if (s.topWarnings.length > 0) {
    lines.push('', 'most frequent warnings:');
    lines.push(...s.topWarnings.map(formatCount));
  }
  if (s.invalidRows.length > 0) {
    lines.push('', s.invalid > s.invalidRows.length ? `first ${s.invalidRows.length} invalid rows:` : 'invalid rows:');
    for (const row of s.invalidRows) lines.push(...row.messages.map((m) => `  ${m}`));
    if (s.invalid > s.invalidRows.length) lines.push(`  … ${s.invalid - s.invalidRows.length} more (use --json, or preview --row N)`);
  }
  lines.push('', s.invalid === 0 ? 'all rows are valid' : `${s.invalid} of ${s.rows} rows are invalid and would not be sent`);
  return `${lines.join('\n')}\n`;
}

function formatCount(c: IssueCount): string {
  const columns = c.columns.length === 0 ? '' : ` (${c.columns.join(', ')})`;
  const rows = `row${c.rows.length > 1 ? 's' : ''} ${c.rows.join(', ')}${c.count > c.rows.length ? ', …' : ''}`;
  return `  ${String(c.count).padStart(6)} × ${c.path}: ${c.message}${columns} — ${rows}`;
}
