/**
 * Why a failed run failed, as `runs.end_reason` records it for `report`: a known error's own line,
 * a ledger fault named by its SQLite code, and for a bug only that it was one (its stack and message
 * may carry data: they go to the run's standard error, not into the ledger).
 */
import { describe, expect, it } from 'vitest';
import { QuoteBatchError } from '../../src/errors.js';
import { failureReason } from '../../src/pipeline/run-job.js';

class SqliteLikeError extends Error {
  constructor(readonly code: string) {
    super(`${code}: something`);
  }
}

describe('failureReason', () => {
  it.each([
    ['a known error: its message', new QuoteBatchError('E_INPUT', 'cannot read the input leads.csv: it was truncated while the run read it'), 'cannot read the input leads.csv: it was truncated while the run read it'],
    ['a full disk under the ledger', new SqliteLikeError('SQLITE_FULL'), 'cannot write to the ledger: the disk is full (SQLITE_FULL)'],
    ['a ledger another process keeps locked', new SqliteLikeError('SQLITE_BUSY'), expect.stringMatching(/^the ledger is busy: another process kept it locked .*\(SQLITE_BUSY\)$/)],
    ['a bug, with data in its message', new TypeError('Cannot read properties of undefined (reading "Jane Doe 555-0100")'), 'internal error (a bug in quote-batch; the run printed the details on its standard error)'],
    ['something thrown that is not an Error', 'Jane Doe', 'internal error (a bug in quote-batch; the run printed the details on its standard error)'],
  ])('%s', (_what, error, expected) => {
    expect(failureReason(error)).toEqual(expected);
  });
});
