/**
 * The ledger's reads for `report`, `export`, `jobs` and the run's summary: named, typed functions
 * over a {@link SqlDb}, in SQL both SQLite and PostgreSQL accept (what differs is asked of its
 * `Dialect`). A second backend implements `SqlDb` and these run on it unchanged. Nothing outside
 * `src/ledger/` runs SQL (test/ledger/boundaries.test.ts keeps it so).
 */
import type { Ledger } from '../ledger.js';
import type { SqlDb } from '../sql/db.js';
import { SqliteDb } from '../sqlite/db.js';

const opened = new WeakMap<Ledger, SqlDb>();

/**
 * The reads of an opened ledger: the one way code outside `src/ledger/` reaches its database. A
 * ledger that carries its own `SqlDb` (the PostgreSQL one) hands out that; the SQLite one gets one
 * per ledger, so its statements are prepared once.
 */
export function ledgerSql(ledger: Ledger | { readonly sql: SqlDb }): SqlDb {
  if ('sql' in ledger) return ledger.sql;
  let db = opened.get(ledger);
  if (db === undefined) {
    db = new SqliteDb(ledger.db);
    opened.set(ledger, db);
  }
  return db;
}

export type { Dialect, SqlDb, SqlValue } from '../sql/db.js';
export { SqliteDb } from '../sqlite/db.js';
export { DONE_STATES, ERROR_STATES } from './states.js';
export { jobExists, latestJobId, readJobFiles, readJobSummaries, readRunningRuns, type JobSummary, type RunningRun } from './jobs.js';
export {
  countAttemptsByKind, countAttemptsByOutcome, countCompletionsByBucket, countRowsByState, countRowsRetried, countUnreadableAnswers,
  readAttemptErrors, readCompletionSpan, readInvalidAgents, readJobFigures, readJobSeconds, readLatencies, readPremiums,
  readRowsByOtherJobs, readRunFigures,
  type AttemptErrorGroup, type InvalidAgentFigures, type JobFigures, type RowsByOtherJobs, type RunFigures,
} from './report-figures.js';
export {
  countAnswers, countDoneRows, countRunCompletionsByBucket, readLastCompletion, readSampleExtremes, readTimelineRuns, runSampleBatches,
  type RunSampleFigures, type TimelineRun,
} from './timeline.js';
export {
  countAnsweredSamples, readAnnouncedRun, readAnsweredSamples, readRunCeiling, readWarmStartSamples,
  type AnsweredSample, type PartnerIdentity, type WarmStartSamples,
} from './settled-samples.js';
export { errorRowBatches, type ErrorRow } from './row-errors.js';
export {
  countRowsWithoutPosition, outcomeBatches, OUTCOME_COLUMNS, readFirstOutcomes, sourceRowBatches,
  type RowOutcomeColumns, type SourceRow,
} from './export.js';
