// The mapping language: load and compile mapping files, map rows, format row issues.
export { loadMapping, compileMapping, type CompileOptions } from './compile.js';
export { formatRowIssue } from './format.js';
export type { CompiledMapping, MappedRow, RowIssue } from './types.js';
export { resolveInputOptions } from './input-options.js';
export { checkInput, type CheckSummary, type CheckOptions, type IssueCount, type InvalidRow } from './check-input.js';
