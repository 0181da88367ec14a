export { Ledger, now } from './ledger.js';
export type { AgentRecord, JobIdentity, JobRecord, NewRow, ResumePoint, RowOutcome, RunRecord, RunSample } from './ledger.js';
export { FINAL_STATES, JOB_STATUSES, ROW_STATES, RUN_STATUSES, SCHEMA_VERSION } from './schema.js';
export type { JobStatus, RowState, RunStatus } from './schema.js';
