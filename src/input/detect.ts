import { QuoteBatchError } from '../errors.js';
import type { InputFormat } from './types.js';

const FORMAT_BY_EXTENSION: ReadonlyMap<string, InputFormat> = new Map([
  ['.csv', 'csv'],
  ['.tsv', 'tsv'],
  ['.ndjson', 'ndjson'],
  ['.jsonl', 'ndjson'],
]);

/** The format of an input file cannot be told from its name (see {@link detectInput}). */
export class UnknownFormatError extends QuoteBatchError {}

/**
 * Tells the format of an input file from its extension (`.csv`, `.tsv`, `.ndjson`, `.jsonl`,
 * each optionally followed by `.gz`); `format` overrides the extension. Throws
 * `QuoteBatchError('E_INPUT')` for an unknown extension without a format hint.
 */
export function detectInput(path: string, format?: InputFormat): { format: InputFormat; gzip: boolean } {
  const lower = path.toLowerCase();
  const gzip = lower.endsWith('.gz');
  if (format !== undefined) return { format, gzip };
  const stem = gzip ? lower.slice(0, -3) : lower;
  const dot = stem.lastIndexOf('.');
  const slash = Math.max(stem.lastIndexOf('/'), stem.lastIndexOf('\\'));
  const extension = dot > slash ? stem.slice(dot) : '';
  const detected = FORMAT_BY_EXTENSION.get(extension);
  if (detected === undefined) {
    throw new UnknownFormatError(
      'E_INPUT',
      `cannot tell the format of input file ${path}: expected .csv, .tsv, .ndjson or .jsonl (optionally .gz)`,
      { hint: 'rename the file or state the input format in the mapping' },
    );
  }
  return { format: detected, gzip };
}
