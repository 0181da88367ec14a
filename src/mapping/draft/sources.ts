/**
 * The input as the draft sees it: fields with their sample values, and groups of them (numbered
 * columns of a CSV file, lists of objects in NDJSON records). One model for both formats.
 */
import { detectGroups, fillTemplate, type ColumnGroup } from './groups.js';

type Rec = Record<string, unknown>;

export interface SourceField {
  /** How the mapping reads it: a column (a template with group marks in a numbered group) or a path. */
  ref: { column: string } | { path: string };
  /** The name matched against request fields (a numbered group's field without stem and number). */
  name: string;
  /** Sample values as text (empty ones included), at most {@link MAX_VALUES}. */
  values: string[];
}

export interface SourceGroup {
  /** Numbered columns (CSV) or a list in the record (NDJSON). */
  kind: 'numbered' | 'each';
  /** Numbered: the text before the number; each: the list's path. */
  stem: string;
  /** Numbered: first and last number. */
  start: number;
  end: number;
  scope: SourceScope;
}

export interface SourceScope {
  fields: SourceField[];
  groups: SourceGroup[];
  /** Columns that could not be part of their group (not there for every number), for the draft's notes. */
  partial: string[];
}

/** Sample values kept per field. */
const MAX_VALUES = 1000;
/** Fields and groups read from NDJSON records at most (records that invent keys stay bounded). */
const MAX_PATHS = 2000;

/** CSV: the header's numbered groups and plain columns, with the sample's values. */
export function csvScope(header: readonly string[], records: readonly Rec[]): SourceScope {
  const { groups, rest } = detectGroups(header);
  const have = new Set(header);
  const valuesOf = (columns: readonly string[]): string[] => {
    const out: string[] = [];
    for (const record of records) {
      for (const column of columns) {
        if (out.length >= MAX_VALUES) return out;
        const value = record[column];
        out.push(typeof value === 'string' ? value : '');
      }
    }
    return out;
  };
  const toGroup = (group: ColumnGroup, outer: readonly number[][]): SourceGroup => {
    const start = group.numbers[0] ?? 1;
    const end = group.numbers[group.numbers.length - 1] ?? start;
    // Every combination of numbers the mapping will expand: a field is in the group only if all its columns exist.
    const combos: number[][] = [];
    for (const prefix of outer) for (let n = start; n <= end; n += 1) combos.push([...prefix, n]);
    const scope: SourceScope = { fields: [], groups: [], partial: [] };
    for (const field of group.fields) {
      const names = combos.map((numbers) => fillTemplate(field.template, numbers));
      if (names.every((name) => have.has(name))) {
        scope.fields.push({ ref: { column: field.template }, name: field.residual, values: valuesOf(names) });
      } else {
        scope.partial.push(...field.columns.map((c) => c.column));
      }
    }
    scope.groups = group.groups.map((nested) => toGroup(nested, combos));
    return { kind: 'numbered', stem: group.stem, start, end, scope };
  };
  return {
    fields: rest.map((column) => ({ ref: { column }, name: column, values: valuesOf([column]) })),
    groups: groups.map((group) => toGroup(group, [[]])),
    partial: [],
  };
}

/** NDJSON: the records' scalar leaves as fields, their lists of objects as groups. */
export function ndjsonScope(records: readonly Rec[]): SourceScope {
  const budget = { paths: 0 };
  return scopeOf(records, budget);
}

function scopeOf(objects: readonly unknown[], budget: { paths: number }): SourceScope {
  const fields = new Map<string, SourceField>();
  const lists = new Map<string, unknown[]>();
  const visit = (value: unknown, path: string): void => {
    if (value === null || value === undefined) return;
    if (Array.isArray(value)) {
      if (value.some((v) => v !== null && typeof v === 'object' && !Array.isArray(v))) {
        let elements = lists.get(path);
        if (elements === undefined) {
          if (budget.paths >= MAX_PATHS) return;
          budget.paths += 1;
          elements = [];
          lists.set(path, elements);
        }
        for (const v of value) if (elements.length < MAX_VALUES) elements.push(v);
      }
      return;
    }
    if (typeof value === 'object') {
      for (const [key, child] of Object.entries(value as Rec)) visit(child, path === '' ? key : `${path}.${key}`);
      return;
    }
    let field = fields.get(path);
    if (field === undefined) {
      if (budget.paths >= MAX_PATHS || !/^[A-Za-z_$][\w$-]*(?:\.[A-Za-z_$][\w$-]*)*$/.test(path)) return;
      budget.paths += 1;
      // A key of the record (or of a list's element) reads as a column; anything deeper as a path.
      field = { ref: path.includes('.') ? { path } : { column: path }, name: path, values: [] };
      fields.set(path, field);
    }
    if (field.values.length < MAX_VALUES) field.values.push(String(value));
  };
  for (const object of objects) if (object !== null && typeof object === 'object') visit(object, '');
  const groups: SourceGroup[] = [];
  for (const [path, elements] of lists) {
    groups.push({ kind: 'each', stem: path, start: 0, end: 0, scope: scopeOf(elements, budget) });
  }
  return { fields: [...fields.values()], groups, partial: [] };
}
