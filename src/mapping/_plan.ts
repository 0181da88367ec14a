/**
 * The plan: what the compiler (`_compiler.ts`) builds from a mapping file and what `_run.ts` runs
 * on each row. It is a tree of small closures (readers, converters, setters) built once, so that
 * mapping a row interprets no YAML; every field keeps the sources it reads, so that a problem at a
 * request path can name its columns (`_trace.ts`).
 */
import type { FieldRunner, FastText } from './_generate.js';
import type { PathSegment } from './_request-paths.js';
import type { RowIssue } from './types.js';

export type Rec = Record<string, unknown>;

/** A produced value that leaves its path out of the request. */
export const OMIT: unique symbol = Symbol('omit');

/** Where a source reads from: a column of the row, or a path below the row or a group element. */
export type Reader = (record: Rec, item: unknown) => unknown;

export interface FieldPlan {
  /** Relative to the instance's object. */
  target: readonly PathSegment[];
  /** Index of the target's parent among the instance's distinct parents (set once per row). */
  parent: number;
  parentPath: readonly PathSegment[];
  leaf: string;
  targetText: string;
  /** Columns or source paths (relative to the element when `relative`) read by this field. */
  sources: readonly string[];
  relative: boolean;
  kind: 'column' | 'field';
  isPass: boolean;
  /** A value-table miss may warn: the row state must know the field's path first. */
  warns: boolean;
  /** The known words when the target is an enumerated word (an unknown one warns). */
  known: ReadonlySet<string> | undefined;
  knownText: string;
  read: Reader;
  /** A top-level CSV column that `read` reads (lets generated code read it directly). */
  column: string | undefined;
  /**
   * Turns the raw source into the request value, OMIT, or FAIL (reason in `failure`). The record
   * and item are there for the few steps that read a second source (a time zone from a column).
   */
  produce: (raw: unknown, row: RowState, record: Rec, item: unknown) => unknown;
  /** The text steps of `produce`, for the generated code (undefined: always call `produce`). */
  fast: FastText | undefined;
}

export interface InstancePlan {
  fields: FieldPlan[];
  /** Fields whose target goes through an array index: set after the groups built the arrays. */
  lateFields: FieldPlan[];
  groups: GroupPlan[];
  trace: TraceEntry[];
  /** The element's key value (several key columns: the first that has one); `present` at the top. */
  readKey: Reader;
  /** The key as the mapping writes it (`driver{n}_first_name`), for the left-out warning. */
  keyText: string;
  /** The key's columns (or paths in the element), expanded. */
  keySources: readonly string[];
  /** The sources of the element and its nested groups, for `filledSources` (see _compiler.ts). */
  probe: {
    columns: readonly string[];
    empties: readonly (ReadonlySet<string> | undefined)[];
    others: readonly ((record: Rec, item: unknown, srcPrefix: string, found: string[]) => void)[];
  };
  /** A group element's sources (and its nested groups') that have a value: undefined at the top. */
  filledSources: ((record: Rec, item: unknown, srcPrefix: string) => readonly string[]) | undefined;
  /** Generated equivalents of `runFields(fields)` and `runFields(lateFields)` (see _generate.ts). */
  runFields: FieldRunner<RowState>;
  runLateFields: FieldRunner<RowState>;
}

export interface GroupPlan {
  target: readonly PathSegment[];
  targetText: string;
  /** Numbered groups: one instance per number. `each` groups: one instance for every element. */
  instances: InstancePlan[];
  each: { read: Reader; text: string; relative: boolean } | undefined;
}

/** What one field (or group, or group key) of an instance reads, for tracing a path to its sources. */
export interface TraceEntry {
  target: string;
  sources: readonly string[];
  relative: boolean;
  kind: 'column' | 'field';
  isPass: boolean;
}

/** The whole compiled mapping: the request's plan and the values read beside it. */
export interface MappingPlan {
  root: InstancePlan;
  /** The agent e-mail (outside the request). */
  agentEmail: FieldPlan | undefined;
  agentIdPath: readonly PathSegment[];
  /** The row key: request paths tried in order, or a source of its own. */
  rowKeyPaths: readonly (readonly PathSegment[])[];
  rowKeySource: FieldPlan | undefined;
  /** A pass-through object may hold enumerated words: scan the whole request for them. */
  passCoversEnums: boolean;
}

/** The state of one row while it is mapped. */
export interface RowState {
  rowNumber: number;
  errors: RowIssue[];
  warnings: RowIssue[];
  /** Which plan built each group element (for tracing schema issues to columns). */
  // A list, not a Map: it is read only when a row has a problem, and keying a Map by fresh objects
  // costs an identity hash per element on every row.
  elements: { element: object; instance: InstancePlan; srcPrefix: string }[];
  /** True while the fields of the first element of a group's list are mapped (`required: first`). */
  first: boolean;
  /** Set while a field is produced, so map misses can warn with the right path. */
  currentPath: string;
  currentColumns: readonly string[];
  currentKind: 'column' | 'field';
  /** Run the interpreted reference (`runFields`) instead of the generated code (tests compare the two). */
  reference: boolean;
}

/** A fresh row state. */
export function startRow(rowNumber: number, reference: boolean): RowState {
  return {
    rowNumber, errors: [], warnings: [], elements: [], first: true, currentPath: '', currentColumns: [], currentKind: 'column', reference,
  };
}

/** The sources of a field inside an `each` element, made absolute (`drivers[1].dob`). */
export function prefixSources(sources: readonly string[], relative: boolean, srcPrefix: string): readonly string[] {
  if (!relative || srcPrefix === '') return sources;
  return sources.map((source) => `${srcPrefix}.${source}`);
}
