/**
 * Loading a mapping: YAML text → the file's content checked by zod (`_schema.ts`) → a plan
 * (`_compiler.ts`) → the {@link CompiledMapping} the commands and the pipeline use, which runs the
 * plan on each row (`_run.ts`) and traces problems back to their columns (`_trace.ts`).
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { isAlias, LineCounter, parseDocument, visit, type Document } from 'yaml';
import { QuoteBatchError } from '../errors.js';
import { compilePlan, type PlanFacts } from './_compiler.js';
import type { MappingPlan } from './_plan.js';
import { MappingProblems, type YamlPath } from './_problems.js';
import { mapRecord, setPath } from './_run.js';
import { formatSegments } from './_request-paths.js';
import { MappingFile } from './_schema.js';
import { findClosest, shortName } from './_text.js';
import { DRAFT_PLACEHOLDER, type CompiledMapping } from './types.js';

/** References a mapping may make to YAML anchors (`*name`) in all; more is refused (alias bombs). */
const MAX_ALIASES = 100;

/** Reads a mapping file and compiles it; a bad file is a QuoteBatchError('E_MAPPING'). */
export async function loadMapping(file: string): Promise<CompiledMapping> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message;
    throw new QuoteBatchError('E_MAPPING', `cannot read mapping ${file}: ${reason}`, {
      cause: error,
      hint: 'pass --mapping <file>, e.g. --mapping mappings/example-csv.yaml',
    });
  }
  return compileText(bytes.toString('utf8'), file, createHash('sha256').update(bytes).digest('hex'));
}

/** Options of {@link compileMapping}. */
export interface CompileOptions {
  /**
   * Map rows by interpreting the compiled plan instead of running the code generated from it
   * (same results, slower): the reference the generated code is tested against.
   */
  reference?: boolean;
}

/** Compiles mapping text (as found in `fileName`, which only names it in messages). */
export function compileMapping(yamlText: string, fileName: string, options: CompileOptions = {}): CompiledMapping {
  return compileText(yamlText, fileName, createHash('sha256').update(yamlText, 'utf8').digest('hex'), options.reference === true);
}

function compileText(text: string, fileName: string, sha256: string, reference = false): CompiledMapping {
  const { spec, problems, lineOf } = parseMappingFile(text, fileName);
  const { plan, facts } = compilePlan(spec, problems, lineOf);
  problems.throwIfAny();
  return createMapper(plan, facts, spec, fileName, sha256, reference);
}

/** The YAML parsed and checked against the mapping file's schema; every mistake is thrown with its line. */
function parseMappingFile(text: string, fileName: string): { spec: MappingFile; problems: MappingProblems; lineOf: (path: YamlPath) => number } {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: true, uniqueKeys: true });
  const problems = new MappingProblems(fileName, doc, lineCounter);
  for (const error of doc.errors) {
    const pos = error.linePos?.[0] ?? { line: 1, col: 1 };
    const message = (error.message.split('\n')[0] ?? error.message).replace(/ at line \d+, column \d+:?$/, '');
    const lineText = text.split('\n')[pos.line - 1] ?? '';
    const hint = error.code === 'DUPLICATE_KEY' ? 'each request path is mapped once: remove or rename one of them'
      // `key: [drv{n}_first, …]`: inside [ ] or { } YAML reads the braces of {n} as a map.
      : /[[{][^"']*\w\{[a-z]\w*\}/.test(lineText) ? 'quote a value that holds {n} inside [ ] or { }, e.g. ["driver{n}_first", "driver{n}_last"]'
        : 'check the indentation and quoting on that line';
    problems.addAt(pos.line, pos.col, `YAML: ${message}`, hint);
  }
  problems.throwIfAny();
  if (doc.contents === null) {
    throw new QuoteBatchError('E_MAPPING', `invalid mapping ${fileName}: the file is empty`, {
      hint: 'start from mappings/example-csv.yaml; see docs/mapping.md',
    });
  }
  let content: unknown;
  try {
    content = doc.toJS({ maxAliasCount: MAX_ALIASES });
  } catch (error) {
    if (!(error instanceof ReferenceError)) throw error;
    // yaml refuses an alias that expands past the limit (a "billion laughs" file): a mistake of the file.
    const at = firstAliasOffset(doc);
    const { line, col } = at === undefined ? { line: 1, col: 1 } : lineCounter.linePos(at);
    problems.addAt(line, col, `YAML: too many alias references (*name), more than ${MAX_ALIASES} values in all`,
      'write the values out, or use fewer anchors and aliases');
    problems.throwIfAny();
  }
  const parsed = MappingFile.safeParse(content);
  if (!parsed.success) {
    problems.addZodIssues(parsed.error.issues);
    problems.throwIfAny();
    // A zod issue the translator skipped should still stop the load.
    throw new QuoteBatchError('E_MAPPING', `invalid mapping ${fileName}: ${parsed.error.issues[0]?.message ?? 'unknown problem'}`);
  }
  const lineOf = (path: YamlPath): number => {
    // A shorthand (`tracking.click_id: click_id`) has no `column` node: use the nearest one.
    for (let depth = path.length; depth > 0; depth -= 1) {
      const node = doc.getIn(path.slice(0, depth), true) as { range?: [number, number, number] } | undefined;
      if (node?.range !== undefined) return lineCounter.linePos(node.range[0]).line;
    }
    return 0;
  };
  return { spec: parsed.data, problems, lineOf };
}

function firstAliasOffset(doc: Document): number | undefined {
  let offset: number | undefined;
  visit(doc, {
    Alias(_key, node) {
      if (isAlias(node) && node.range) offset = node.range[0];
      return visit.BREAK;
    },
  });
  return offset;
}

/** Columns the mapping names that the header lacks are listed at most this many at once. */
const MAX_LISTED_COLUMNS = 10;

function createMapper(plan: MappingPlan, facts: PlanFacts, spec: MappingFile, fileName: string, sha256: string, reference: boolean): CompiledMapping {
  const sourceColumns = [...facts.columns.keys()];
  const usesNested = facts.usesEach || facts.nestedPaths.length > 0;
  const input: CompiledMapping['input'] = {};
  if (spec.input?.format !== undefined) input.format = spec.input.format;
  if (spec.input?.delimiter !== undefined) input.delimiter = spec.input.delimiter;
  const sourcePaths = [...facts.sourcePatterns].map(([path, whole]) => ({ path, whole }));

  return {
    path: fileName,
    sha256,
    input,
    sourceColumns,
    sourcePaths,
    targetPaths: [...facts.targetPatterns],
    agentIdPath: formatSegments(plan.agentIdPath),
    placeholders: Object.entries(spec.fields).filter(([, field]) => field.literal === DRAFT_PLACEHOLDER).map(([path]) => path),
    checkColumns(header) {
      const have = new Set(header);
      const missing = sourceColumns.filter((column) => !have.has(column));
      const lines: string[] = [];
      let hint: string | undefined;
      for (const column of missing.slice(0, MAX_LISTED_COLUMNS)) {
        const close = findClosest(column, header);
        hint ??= close === undefined ? undefined : `did you mean "${shortName(close)}" for "${shortName(column)}"?`;
        const line = facts.columns.get(column) ?? 0;
        lines.push(`${fileName}${line > 0 ? `:${line}` : ''}: the input has no column "${shortName(column)}"${close === undefined ? '' : ` (did you mean "${shortName(close)}"?)`}`);
      }
      if (missing.length > MAX_LISTED_COLUMNS) lines.push(`... and ${missing.length - MAX_LISTED_COLUMNS} more`);
      // One header column holding another separator: the file is not comma-separated.
      const separator = header.length === 1 ? [';', '\t', '|'].find((c) => header[0]?.includes(c)) : undefined;
      if (separator !== undefined) {
        hint = `the header is one column containing ${JSON.stringify(separator)}: add \`input: { delimiter: ${JSON.stringify(separator)} }\` to the mapping (docs/mapping.md, "Input hints")`;
      }
      if (missing.length > 0) {
        const shown = header.slice(0, 12).map(shortName);
        throw new QuoteBatchError('E_MAPPING', `the mapping names ${missing.length} column(s) the input does not have:\n  ${lines.join('\n  ')}`, {
          hint: hint ?? `the input's columns are: ${shown.join(', ')}${header.length > 12 ? ', …' : ''}`,
        });
      }
      if (usesNested) {
        throw new QuoteBatchError('E_MAPPING', `${fileName} reads nested NDJSON paths (${facts.nestedPaths[0] ?? 'each:'}), but the input is a flat CSV file`, {
          hint: 'use a mapping written for CSV columns, or give an .ndjson input',
        });
      }
    },
    mapRow(record, rowNumber) {
      return mapRecord(plan, record, rowNumber, reference);
    },
    setAgentId(request, agentId) {
      setPath(request, plan.agentIdPath, agentId);
    },
  };
}
