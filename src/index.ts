// The public API of quote-batch as a library: re-exports only.
export * from './errors.js';
export * from './partner/index.js';
export { startSandbox, type SandboxHandle, type SandboxOptions } from './sandbox/index.js';
export { loadMapping, compileMapping, formatRowIssue } from './mapping/index.js';
export type { CompiledMapping, MappedRow, RowIssue } from './mapping/index.js';
export { openInput, detectInput } from './input/index.js';
export type { InputFormat, InputItem, InputOptions, InputReader, InputStart } from './input/index.js';
export { Ledger, ROW_STATES } from './ledger/index.js';
export type { RowState } from './ledger/index.js';
export { runJob } from './pipeline/run-job.js';
export type { RunJobOptions, RunJobResult } from './pipeline/run-job.js';
