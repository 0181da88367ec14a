/** `quote-batch check <input> --mapping <file>`: read, map and validate every row offline. */
import { resolve } from 'node:path';
import { describeErrorKind, type ErrorGroup } from '../error-groups.js';
import { checkInput, DRAFT_PLACEHOLDER, loadMapping, shortName, type CheckSummary, type CoverageReport } from '../mapping/index.js';
import { jsonLogOption, type RegisterCommand } from './context.js';

interface CheckFlags {
  mapping: string;
  json?: boolean;
  coverage?: boolean;
}

export const registerCheck: RegisterCommand = (program, ctx) => {
  program
    .command('check')
    .description('read, map and validate every row offline (nothing is sent); exit 0 all valid, 1 some invalid, 2 bad mapping or file')
    .argument('<input>', 'lead file: .csv, .tsv, .ndjson or .jsonl, optionally .gz')
    .requiredOption('--mapping <file>', 'mapping file (YAML, see docs/mapping.md)')
    .option('--coverage', 'also list the columns the mapping never reads and the request fields no row filled')
    .option('--json', 'print the summary as JSON')
    .addOption(jsonLogOption())
    .action(async (input: string, flags: CheckFlags) => {
      const mapping = await loadMapping(resolve(ctx.io.cwd, flags.mapping));
      const summary = await checkInput(resolve(ctx.io.cwd, input), mapping, { signal: ctx.stop, coverage: flags.coverage === true });
      // Paths as the user typed them, not as resolved.
      summary.input = input;
      summary.mapping = flags.mapping;
      const { placeholders } = mapping;
      ctx.io.out(flags.json === true ? `${JSON.stringify(toJson(summary, placeholders), null, 2)}\n` : formatSummary(summary, placeholders));
      ctx.setExitCode(summary.interrupted ? 3 : summary.invalid > 0 ? 1 : 0);
    });
};

/**
 * The JSON output: the summary, each group with its one-line description (the grouping key is
 * internal), and the mapping's fields still holding `init`'s placeholder.
 */
function toJson(s: CheckSummary, placeholders: readonly string[]): unknown {
  const group = (g: ErrorGroup): unknown => {
    const { key: _key, ...rest } = g;
    return { ...rest, description: describeErrorKind(g) };
  };
  return { ...s, errorGroups: s.errorGroups.map(group), warningGroups: s.warningGroups.map(group), placeholders };
}

function formatSummary(s: CheckSummary, placeholders: readonly string[]): string {
  const lines: string[] = [];
  const rate = s.durationMs > 0 ? ` (${Math.round((s.rows * 1000) / s.durationMs).toLocaleString('en-US')} rows/s)` : '';
  lines.push(`checked ${s.input} with ${s.mapping} (${s.format}): ${s.rows} rows in ${(s.durationMs / 1000).toFixed(2)} s${rate}`);
  if (s.interrupted) lines.push('interrupted: the counts cover the rows read so far');
  lines.push(`  valid      ${s.valid}`);
  lines.push(`  invalid    ${s.invalid}${s.unreadable > 0 ? ` (${s.unreadable} unreadable)` : ''}`);
  lines.push(`  repeated   ${s.duplicates} valid rows repeat an earlier row's key (the run records them duplicate)`);
  lines.push(`  warnings   ${s.warnings} in ${s.rowsWithWarnings} rows`);
  if (s.errorGroups.length > 0) {
    lines.push('', 'invalid rows by kind (rows affected; a row with several problems counts under each):');
    lines.push(...s.errorGroups.flatMap(formatGroup));
  }
  if (s.warningGroups.length > 0) {
    lines.push('', 'warnings by kind (rows affected):');
    lines.push(...s.warningGroups.flatMap(formatGroup));
  }
  if (s.repeatedKeys.length > 0) {
    lines.push('', 'repeated row keys (warnings: the run sends the first row of a key and records the others duplicate):');
    for (const r of s.repeatedKeys) lines.push(`  row ${r.row}: key ${JSON.stringify(r.key)} first seen in row ${r.firstRow}`);
    if (s.duplicates > s.repeatedKeys.length) lines.push(`  … ${s.duplicates - s.repeatedKeys.length} more (use --json)`);
  }
  if (s.invalidRows.length > 0) {
    lines.push('', s.invalid > s.invalidRows.length ? `first ${s.invalidRows.length} invalid rows:` : 'invalid rows:');
    for (const row of s.invalidRows) lines.push(...row.messages.map((m) => `  ${m}`));
    if (s.invalid > s.invalidRows.length) lines.push(`  … ${s.invalid - s.invalidRows.length} more (use --json, or preview --row N)`);
  }
  if (s.coverage !== undefined) lines.push('', ...formatCoverage(s.coverage, s.format));
  if (placeholders.length > 0) {
    lines.push('', 'left to decide in the mapping (`run` sends it only to the sandbox):');
    for (const path of placeholders) lines.push(`  ${path}: still ${DRAFT_PLACEHOLDER}, the placeholder \`init\` wrote`);
  }
  lines.push('', s.invalid === 0 ? 'all rows are valid' : `${s.invalid} of ${s.rows} rows are invalid and would not be sent`);
  return `${lines.join('\n')}\n`;
}

/** One line per group, without a row number; its sample rows on the next line. */
function formatGroup(g: ErrorGroup): string[] {
  const more = g.count > g.rows.length ? ', …' : '';
  return [`  ${String(g.count).padStart(6)} × ${describeErrorKind(g)}`, `           sample rows: ${g.rows.join(', ')}${more}`];
}

function formatCoverage(c: CoverageReport, format: string): string[] {
  const noun = format === 'ndjson' ? 'fields' : 'columns';
  const lines = [`${noun} the mapping never reads (${c.unread.length}):`];
  if (c.unread.length === 0) lines.push('  none');
  for (const u of c.unread) lines.push(`  ${shortName(u.source)}  (${u.rowsWithValue === 0 ? 'empty in every row' : `a value in ${u.rowsWithValue} rows`})`);
  const mappedEmpty = c.unfilled.filter((u) => u.mapped);
  const notMapped = c.unfilled.filter((u) => !u.mapped);
  lines.push('', `request fields no row filled (${c.unfilled.length}):`);
  if (mappedEmpty.length > 0) {
    lines.push('  mapped, but empty in every row:');
    for (const u of mappedEmpty) lines.push(`    ${u.path}${u.required ? '  (required)' : ''}`);
  }
  if (notMapped.length > 0) {
    lines.push('  not in the mapping:');
    for (const u of notMapped) lines.push(`    ${u.path}${u.required ? '  (required)' : ''}`);
  }
  if (c.unfilled.length === 0) lines.push('  none');
  if (c.truncated) lines.push('', 'note: the file has more distinct paths than are counted; the lists above are incomplete');
  return lines;
}
