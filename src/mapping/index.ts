// The mapping language. Where things are:
//   YAML → plan      compile.ts (file, YAML, schema check) → _compiler.ts (paths, sources, groups)
//                    → _produce.ts (one value's steps: trim, case, value table, conversion, _convert.ts)
//   plan on a row    _run.ts (groups, late fields, request check), _generate.ts (the generated fast path)
//   value → column   _trace.ts (a request path back to the columns that fed it)
//   commands' help   check-input.ts (`check`), draft/ (`init`), format.ts (one line per row issue)
export { loadMapping, compileMapping, type CompileOptions } from './compile.js';
export { formatRowIssue } from './format.js';
export { shortName } from './_text.js';
export type { CompiledMapping, MappedRow, RowIssue } from './types.js';
export { DRAFT_PLACEHOLDER } from './types.js';
export { resolveInputOptions } from './input-options.js';
export { checkInput, type CheckSummary, type CheckOptions, type InvalidRow, type RepeatedKey } from './check-input.js';
export type { CoverageReport } from './coverage.js';
