import { describe, expect, it } from 'vitest';
import { isQuoteBatchError, type QuoteBatchError } from '../../src/errors.js';
import { compileMapping } from '../../src/mapping/index.js';
import { findClosest } from '../../src/mapping/_text.js';

function compileError(yaml: string): QuoteBatchError {
  try {
    compileMapping(yaml, 'hostile.yaml');
  } catch (error) {
    if (isQuoteBatchError(error)) return error;
    throw error;
  }
  throw new Error('the mapping loaded');
}

describe('hostile mappings and headers', () => {
  it('a YAML alias bomb is a mistake of the mapping (E_MAPPING) at its line, not an internal error', () => {
    const levels = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    for (let i = 1; i < 9; i += 1) {
      const previous = String.fromCharCode(96 + i);
      levels.push(`${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(9).fill(`*${previous}`).join(',')}]`);
    }
    const error = compileError(`version: 1\nfields: {}\ndescription: x\n${levels.join('\n')}\n`);
    expect(error.code).toBe('E_MAPPING');
    expect(error.message).toMatch(/hostile\.yaml:5:\d+: YAML: too many alias references/);
  });

  it('did-you-mean stays fast with a 10 MB column name and with 100,000 columns', () => {
    const mapping = compileMapping('version: 1\nfields:\n  tracking.click_id: clik_id\n', 'm.yaml');
    const huge = 'x'.repeat(10 * 1024 * 1024);
    const many = Array.from({ length: 100_000 }, (_, i) => `column_${i}`);
    const started = performance.now();
    let message = '';
    try {
      mapping.checkColumns([huge, ...many, 'click_id']);
    } catch (error) {
      message = (error as Error).message;
    }
    // Loose bound (shared machines): it took 78 s before names were compared with a cut-off.
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(message).toMatch(/the input has no column "clik_id" \(did you mean "click_id"\?\)/);

    let hint = '';
    try {
      mapping.checkColumns([huge]);
    } catch (error) {
      hint = (error as QuoteBatchError).hint ?? '';
    }
    // The 10 MB name is shown cut, with its length.
    expect(hint).toMatch(/x{60}… \(10485760 characters\)$/);
    expect(hint.length).toBeLessThan(200);
  });

  it('findClosest: the same answers as a plain edit distance on ordinary names', () => {
    expect(findClosest('clik_id', ['click_id', 'lead_id'])).toBe('click_id');
    expect(findClosest('driver1_dbo', ['driver1_dob', 'driver2_dob'])).toBe('driver1_dob');
    expect(findClosest('zzz', ['click_id'])).toBeUndefined();
    expect(findClosest('x'.repeat(300), ['x'.repeat(300)])).toBeUndefined();
  });
});
