/** `quote-batch preview <input> --mapping <file>`: the exact JSON each of the first rows would send. */
import { resolve } from 'node:path';
import { QuoteBatchError } from '../errors.js';
import { openInput } from '../input/index.js';
import { formatRowIssue, loadMapping, resolveInputOptions, type CompiledMapping, type RowIssue } from '../mapping/index.js';
import { jsonLogOption, parseCount, type RegisterCommand } from './context.js';

interface PreviewFlags {
  mapping: string;
  rows?: number;
  row?: number;
  json?: boolean;
}

/** One previewed row (the `--json` output holds a list of these). */
export interface PreviewRow {
  row: number;
  line: number;
  /** False when the row has errors: it would be recorded `invalid` and not sent. */
  valid: boolean;
  rowKey: string | null;
  agentEmail: string | null;
  /** The request as it would be sent, except the agent id (added at run time). */
  request: Record<string, unknown> | null;
  errors: RowIssue[];
  warnings: RowIssue[];
  /** One line per error, then per warning (see formatRowIssue). */
  messages: string[];
}

const DEFAULT_ROWS = 3;
const AGENT_ID_PLACEHOLDER = '<agent id from validation, set at run time>';

export const registerPreview: RegisterCommand = (program, ctx) => {
  program
    .command('preview')
    .description('print the exact JSON the first rows would send, with their problems; sends nothing')
    .argument('<input>', 'lead file: .csv, .tsv, .ndjson or .jsonl, optionally .gz')
    .requiredOption('--mapping <file>', 'mapping file (YAML, see docs/mapping.md)')
    .option('--rows <n>', `how many rows from the start (default ${DEFAULT_ROWS})`, parseCount('--rows'))
    .option('--row <n>', 'only this row (1-based data row, header excluded)', parseCount('--row'))
    .option('--json', 'print a JSON array of rows')
    .addOption(jsonLogOption())
    .action(async (input: string, flags: PreviewFlags) => {
      if (flags.rows !== undefined && flags.row !== undefined) {
        throw new QuoteBatchError('E_USAGE', 'give either --rows or --row, not both');
      }
      if (flags.row === 0) throw new QuoteBatchError('E_USAGE', '--row counts from 1 (the first data row)');
      const mapping = await loadMapping(resolve(ctx.io.cwd, flags.mapping));
      const rows = await previewRows(resolve(ctx.io.cwd, input), mapping, flags, ctx.stop);
      if (ctx.stop.aborted) {
        ctx.setExitCode(3);
        return;
      }
      if (flags.row !== undefined && rows.length === 0) {
        throw new QuoteBatchError('E_USAGE', `${input} has no row ${flags.row}`, { hint: 'rows are numbered from 1, header excluded' });
      }
      ctx.io.out(flags.json === true ? `${JSON.stringify(rows, null, 2)}\n` : formatRows(rows, mapping));
      ctx.setExitCode(rows.every((r) => r.valid) ? 0 : 1);
    });
};

async function previewRows(inputPath: string, mapping: CompiledMapping, flags: PreviewFlags, stop: AbortSignal): Promise<PreviewRow[]> {
  // The reader stops too: a file of blank lines yields no row to check the signal at.
  const reader = await openInput(inputPath, { ...resolveInputOptions(inputPath, mapping), signal: stop });
  const wanted = flags.row === undefined ? (flags.rows ?? DEFAULT_ROWS) : 1;
  const rows: PreviewRow[] = [];
  try {
    if (reader.columns !== null) mapping.checkColumns(reader.columns);
    if (wanted === 0) return rows;
    for await (const item of reader) {
      // `--row 900000` skips many rows: Ctrl-C / SIGTERM must not wait for them.
      if (stop.aborted) break;
      if (flags.row !== undefined && item.rowNumber < flags.row) continue;
      if (flags.row !== undefined && item.rowNumber > flags.row) break;
      if (item.kind === 'error') {
        const issue: RowIssue = { path: '(input)', message: item.message, columns: [] };
        rows.push({
          row: item.rowNumber, line: item.line, valid: false, rowKey: null, agentEmail: null, request: null,
          errors: [issue], warnings: [], messages: [formatRowIssue(item.rowNumber, issue)],
        });
      } else {
        const mapped = mapping.mapRow(item.record, item.rowNumber);
        rows.push({
          row: item.rowNumber,
          line: item.line,
          valid: mapped.errors.length === 0,
          rowKey: mapped.rowKey,
          agentEmail: mapped.agentEmail,
          request: mapped.request,
          errors: mapped.errors,
          warnings: mapped.warnings,
          messages: [...mapped.errors, ...mapped.warnings].map((issue) => formatRowIssue(item.rowNumber, issue)),
        });
      }
      if (rows.length >= wanted) break;
    }
  } finally {
    await reader.close();
  }
  return rows;
}

function formatRows(rows: readonly PreviewRow[], mapping: CompiledMapping): string {
  if (rows.length === 0) return 'the input has no rows\n';
  const out: string[] = [];
  for (const row of rows) {
    const facts = [`line ${row.line}`];
    if (row.rowKey !== null) facts.push(`key ${row.rowKey}`);
    if (row.request !== null) facts.push(`agent ${row.agentEmail ?? '(none)'}`);
    facts.push(row.valid ? 'valid' : 'INVALID: would not be sent');
    out.push(`── row ${row.row} (${facts.join(', ')}) ──`);
    if (row.request !== null) {
      // Shown where it will go; the request itself is validated and stored without it. A row
      // without an agent e-mail is sent as it is: no agent id is added to it.
      const shown = structuredClone(row.request);
      if (row.agentEmail !== null) mapping.setAgentId(shown, AGENT_ID_PLACEHOLDER);
      out.push(JSON.stringify(shown, null, 2));
      out.push(row.agentEmail === null
        ? 'note: the row has no agent e-mail: it is sent as shown, without an agent id'
        : `note: the agent id is a placeholder: it comes from validating ${row.agentEmail} when the job runs`);
    }
    const errors = row.errors.map((issue) => `  error:   ${formatRowIssue(row.row, issue)}`);
    const warnings = row.warnings.map((issue) => `  warning: ${formatRowIssue(row.row, issue)}`);
    if (errors.length + warnings.length > 0) out.push(...errors, ...warnings);
    out.push('');
  }
  return `${out.join('\n')}\n`;
}
