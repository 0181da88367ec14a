// Summaries, exports and the HTML report of a ledger (the analysts' view): re-exports only.
export { buildReport, resolveJobId, computeStats, computeHistogram } from './build-report.js';
export { percentileOf } from '../percentile.js';
export { renderTable, DEFAULT_TABLE_WIDTH } from './render-table.js';
export { readSettledLimit } from './timeline.js';
export { formatDuration } from './_text.js';
export { renderCsv, flattenFigures } from './render-csv.js';
export { renderHtml, STATE_COLORS } from './render-html.js';
export {
  exportRows, parseStates, readProblemRows, EXPORT_COLUMNS, PROBLEM_STATES,
  type ExportFormat, type ExportOptions, type ExportedRow, type ProblemRows,
} from './export-rows.js';
export { listJobs, renderJobsTable, type JobListing } from './list-jobs.js';
export { formatCsvCell, formatCsvLine, type CsvValue } from './csv.js';
export { openReportLedger, refuseProtectedOut, writeOutput, writeOutputAsync, type WriteChunk } from './output.js';
export { checkSourcePositions, exportSourceRows, SOURCE_EXPORT_COLUMNS, type SourceExportOptions, type SourceInput } from './export-source.js';
export {
  REPORT_VERSION, ATTEMPT_KINDS, ATTEMPT_OUTCOMES, ERROR_STATES, DONE_STATES, ROW_ERROR_LIMIT,
  type Report, type ReportAttemptKind, type ReportAttempts, type ReportAttemptError, type ReportCompletions,
  type ReportInvalidAgent, type ReportJob, type ReportKindAttempts, type ReportRowError, type ReportRows,
  type ReportRun, type ReportTiming, type ReportTimeline, type ReportTimelineSegment, type ReportTimelineBucket,
  type ReportPartner, type Stats, type StatsWithHistogram, type HistogramBin,
} from './types.js';
