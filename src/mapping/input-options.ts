import { shellWord } from '../advice.js';
import { QuoteBatchError } from '../errors.js';
import { detectInput, type InputFormat, type InputOptions } from '../input/index.js';
import type { CompiledMapping } from './types.js';

/**
 * Options for `openInput` from a mapping's `input:` hints. The file's extension tells the format
 * when it can; the mapping's `format` decides only for a file whose extension says nothing (e.g.
 * `.txt`). A mapping that declares CSV (or TSV) for an NDJSON file, or NDJSON for a delimited one,
 * is refused (E_MAPPING): it would read every row as invalid.
 */
export function resolveInputOptions(inputPath: string, mapping: Pick<CompiledMapping, 'input'>): InputOptions {
  const options: InputOptions = {};
  let detected: InputFormat | undefined;
  try {
    detected = detectInput(inputPath).format;
  } catch {
    detected = undefined;
  }
  const declared = mapping.input.format;
  if (detected === undefined && declared !== undefined) options.format = declared;
  if (detected !== undefined && declared !== undefined && isNdjson(detected) !== isNdjson(declared)) {
    // Every row would be invalid (a CSV mapping's columns are not NDJSON fields, and the other way round).
    throw new QuoteBatchError('E_MAPPING', `the mapping is written for ${label(declared)} input (its input.format), and ${inputPath} is ${label(detected)} (by its extension)`, {
      hint: `use the mapping written for this file (\`quote-batch init ${shellWord(inputPath)}\` drafts one), or, if the extension is wrong, rename the file`,
    });
  }
  if (mapping.input.delimiter !== undefined) options.delimiter = mapping.input.delimiter;
  return options;
}

function isNdjson(format: InputFormat): boolean {
  return format === 'ndjson';
}

function label(format: InputFormat): string {
  return format === 'ndjson' ? 'NDJSON' : format.toUpperCase();
}
