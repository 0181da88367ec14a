/** The report's round numbers: axis scales (`niceScale`) and the steps under them and the histogram's bins (`niceStep`). */
import { describe, expect, it } from 'vitest';
import { niceStep } from '../../src/report/_nice.js';
import { niceScale } from '../../src/report/_svg.js';

describe('niceStep', () => {
  it.each([
    [0.3, false, 0.5],
    [1, false, 1],
    [2.2, false, 2.5],
    [2.2, true, 5],
    [7, false, 10],
    [0.075, false, 0.1],
    [0.75, true, 1],
    [430, false, 500],
    [2100, true, 2500],
  ])('niceStep(%s, integer %s) = %s', (raw, integer, expected) => {
    expect(niceStep(raw, integer)).toBeCloseTo(expected, 12);
  });
});

describe('niceScale', () => {
  it.each([
    [100, {}, 100, [0, 25, 50, 75, 100]],
    [9, { integer: true }, 10, [0, 5, 10]],
    [0.3, {}, 0.30000000000000004, [0, 0.1, 0.2, 0.3]],
    [3, { integer: true }, 3, [0, 1, 2, 3]],
    [0.2, { integer: true }, 1, [0, 1]],
    [0, {}, 1, [0, 1]],
    [NaN, { integer: true }, 1, [0, 1]],
    [1234, { count: 5 }, 1250, [0, 250, 500, 750, 1000, 1250]],
  ] as const)('niceScale(%s, %o) tops at %s with ticks %o', (max, options, top, ticks) => {
    const scale = niceScale(max, options);
    expect(scale.top).toBeCloseTo(top, 12);
    expect(scale.ticks).toEqual(ticks);
  });
});
