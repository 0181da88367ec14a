import { detectInput, type InputOptions } from '../input/index.js';
import type { CompiledMapping } from './types.js';

/**
 * Options for `openInput` from a mapping's `input:` hints. The file's extension tells the format
 * when it can (so a mapping written for one format cannot silently misread a file of the other);
 * the mapping's `format` decides only for a file whose extension says nothing (e.g. `.txt`).
 */
export function resolveInputOptions(inputPath: string, mapping: Pick<CompiledMapping, 'input'>): InputOptions {
  const options: InputOptions = {};
  let known = true;
  try {
    detectInput(inputPath);
  } catch {
    known = false;
  }
  if (!known && mapping.input.format !== undefined) options.format = mapping.input.format;
  if (mapping.input.delimiter !== undefined) options.delimiter = mapping.input.delimiter;
  return options;
}
