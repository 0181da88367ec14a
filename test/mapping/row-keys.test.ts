import { describe, expect, it } from 'vitest';
import { RowKeySet } from '../../src/mapping/_row-keys.js';

describe('RowKeySet', () => {
  it('answers as a Map from key to first row would, through growth and after reserve', () => {
    for (const reserve of [undefined, 50_000]) {
      const keys = new RowKeySet();
      if (reserve !== undefined) keys.reserve(reserve);
      const reference = new Map<string, number>();
      // 60,000 rows over 40,000 distinct keys: every third row repeats an earlier key.
      for (let row = 1; row <= 60_000; row += 1) {
        const key = row % 3 === 0 ? `clk_${(row * 7919) % 40_000}` : `clk_${row % 40_000}`;
        const expected = reference.get(key) ?? 0;
        if (expected === 0) reference.set(key, row);
        expect(keys.add(key, row)).toBe(expected);
      }
      expect(keys.size).toBe(reference.size);
    }
  });

  it('keys that differ only slightly are different keys', () => {
    const keys = new RowKeySet();
    expect(keys.add('row-1', 1)).toBe(0);
    expect(keys.add('row-10', 2)).toBe(0);
    expect(keys.add('ROW-1', 3)).toBe(0);
    expect(keys.add('', 4)).toBe(0);
    expect(keys.add('row-1', 5)).toBe(1);
    expect(keys.add('', 6)).toBe(4);
  });
});
