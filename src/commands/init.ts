/** `quote-batch init <input> [--out <file>]`: a draft mapping from the input's header and first rows. */
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { QuoteBatchError } from '../errors.js';
import { compileMapping, shortName, type CompiledMapping } from '../mapping/index.js';
import { draftMapping } from '../mapping/draft/index.js';
import { schemaReferenceFrom } from '../mapping/json-schema.js';
import { readSample } from '../mapping/draft/sample.js';
import { jsonLogOption, parseNumberIn, type RegisterCommand } from './context.js';

interface InitFlags {
  out?: string;
  force?: boolean;
  rows: number;
}

const DEFAULT_ROWS = 200;

export const registerInit: RegisterCommand = (program, ctx) => {
  program
    .command('init')
    .description('draft a mapping from a file\'s header and first rows (groups, names, formats, value tables); prints it, or writes --out')
    .argument('<input>', 'lead file: .csv, .tsv, .ndjson or .jsonl, optionally .gz')
    .option('--out <file>', 'write the draft to this file (refused when it exists, unless --force)')
    .option('--force', 'overwrite the --out file')
    .option('--rows <n>', `rows read to guess from (default ${DEFAULT_ROWS})`, parseNumberIn('--rows', 1, 100_000, true), DEFAULT_ROWS)
    .addOption(jsonLogOption())
    .action(async (input: string, flags: InitFlags) => {
      const sample = await readSample(resolve(ctx.io.cwd, input), { rows: flags.rows, signal: ctx.stop });
      if (sample.interrupted) {
        ctx.setExitCode(3);
        return;
      }
      // The editor finds the schema relative to the mapping: where --out puts it, else the current directory.
      const schemaRef = schemaReferenceFrom(flags.out === undefined ? join(ctx.io.cwd, 'mapping.yaml') : resolve(ctx.io.cwd, flags.out));
      const draft = draftMapping({
        fileName: input, format: sample.format, delimiter: sample.delimiter, columns: sample.columns, scope: sample.scope, rows: sample.rows, schemaRef,
      });
      const mapping = assertLoads(draft.yaml, sample.columns);
      if (flags.out === undefined) {
        ctx.io.out(draft.yaml);
      } else {
        await writeDraft(resolve(ctx.io.cwd, flags.out), flags.out, draft.yaml, flags.force === true);
        // CSV: every column of a numbered group counts; NDJSON: each field (of a list's elements: once).
        const placed = sample.columns === null ? `${draft.placed.length} of ${draft.placed.length + draft.unplaced.length} fields`
          : `${mapping.sourceColumns.length} of ${sample.columns.length} columns`;
        ctx.io.out([
          `wrote ${flags.out}: ${placed} placed, from ${sample.rows} row${sample.rows === 1 ? '' : 's'}`
            + `${sample.unreadable > 0 ? ` (${sample.unreadable} unreadable ${sample.unreadable === 1 ? 'row' : 'rows'} skipped)` : ''}`,
          draft.unplaced.length > 0 ? `not placed: ${draft.unplaced.map(shortName).join(', ')}` : 'every column placed',
          `next: review the lines marked "check:" and "decide:", then run`,
          `  quote-batch check ${input} --mapping ${flags.out} --coverage`,
          '',
        ].join('\n'));
      }
      ctx.setExitCode(0);
    });
};

/** The draft must load, and read only columns the file has: anything else is a bug of `init`. */
function assertLoads(yaml: string, columns: readonly string[] | null): CompiledMapping {
  try {
    const mapping = compileMapping(yaml, 'draft.yaml');
    if (columns !== null) mapping.checkColumns(columns);
    return mapping;
  } catch (error) {
    throw new Error(`init drafted a mapping that does not load: ${(error as Error).message}`, { cause: error });
  }
}

async function writeDraft(path: string, shown: string, yaml: string, force: boolean): Promise<void> {
  try {
    await writeFile(path, yaml, { flag: force ? 'w' : 'wx' });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') {
      throw new QuoteBatchError('E_USAGE', `${shown} already exists: init does not overwrite a mapping`, { hint: 'give another --out file, or add --force to replace it' });
    }
    throw new QuoteBatchError('E_USAGE', `cannot write ${shown}: ${(error as Error).message}`, { cause: error });
  }
}
