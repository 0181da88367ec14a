export { Ledger, now } from './ledger.js';
export type { AgentRecord, Awaitable, JobIdentity, JobRecord, MarkLookup, NewRow, ResumePoint, RejectedRow, RowChange, RowOutcome, RowWrite, RowWriteResult, RunLedger, RunRecord, RunSample, SentRow, SentRowRef } from './types.js';
export { countUnfinished, FINAL_STATES, INPUT_READER, inputReadingOf, JOB_STATUSES, ROW_STATES, RUN_STATUSES, SCHEMA_VERSION, STOPPED_IN_FLIGHT } from './schema.js';
export type { JobStatus, RowState, RunStatus } from './schema.js';
export { jobLockPath } from './_job-lock.js';
export { runMayBeAlive, STALE_HEARTBEAT_MS } from './_liveness.js';
export { boundJson, boundKey, boundText, MAX_STORED_ID_CHARS, MAX_STORED_JSON_CHARS, MAX_STORED_MESSAGE_CHARS } from './limits.js';
export { pruneJobs, resolveInDoubt, RESOLUTIONS, vacuumLedger } from './maintenance.js';
export type { PruneCandidate, PruneOptions, PruneResult, Resolution, ResolveChanges, ResolveRequest, ResolveResult, VacuumResult } from './maintenance.js';
