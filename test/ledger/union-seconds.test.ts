import { describe, expect, it } from 'vitest';
import { unionSeconds } from '../../src/ledger/queries/report-figures.js';

describe('unionSeconds: the time the runs of a job worked, workers at once counted once', () => {
  it.each([
    { name: 'none', spans: [], seconds: 0 },
    { name: 'one run', spans: [[0, 5000]], seconds: 5 },
    { name: 'runs one after another (resumed)', spans: [[0, 5000], [8000, 10_000]], seconds: 7 },
    { name: 'three workers at once', spans: [[0, 27_000], [200, 26_500], [400, 26_800]], seconds: 27 },
    { name: 'overlapping in part, given out of order', spans: [[4000, 9000], [0, 5000]], seconds: 9 },
    { name: 'one inside another', spans: [[0, 10_000], [2000, 3000]], seconds: 10 },
    { name: 'a run that never worked (no heartbeat)', spans: [[3000, 3000], [0, 1000]], seconds: 1 },
  ] as { name: string; spans: [number, number][]; seconds: number }[])('$name', ({ spans, seconds }) => {
    expect(unionSeconds(spans)).toBe(seconds);
  });
});
