import { isQuoteBatchError } from '../../src/errors.js';
import { compileMapping } from '../../src/mapping/index.js';

/** The error a mapping text is refused with when it loads, and its hint, as the command line prints them. */
export function compileError(text: string): string {
  try {
    compileMapping(text, 'test.yaml');
  } catch (error) {
    if (isQuoteBatchError(error)) return `${error.message}\nhint: ${error.hint ?? ''}`;
    throw error;
  }
  throw new Error('the mapping loaded');
}
