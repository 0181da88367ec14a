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
  /** NDJSON: some sample values were JSON numbers (a text field of the request then needs a conversion). */
  numbers?: boolean;
}

/** The column or path as the mapping writes it (a numbered group's field keeps its group marks). */
export function refText(field: SourceField): string {
  return 'column' in field.ref ? field.ref.column : field.ref.path;
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
/** Characters kept of a value: more than any date, e-mail, phone or code needs. */
const MAX_VALUE_CHARS = 200;
/**
 * Characters (plus one per value) a sample keeps in all: about 16 MB of strings. Past it the
 * collector is `full` and the reading stops, whatever the file's width and the `--rows` asked.
 */
const MAX_SAMPLE_UNITS = 8_000_000;
/** Fields and groups read from NDJSON records at most (records that invent keys stay bounded). */
const MAX_PATHS = 2000;

/** What a sample may still hold; shared by a record's fields and its lists' fields. */
interface Budget {
  units: number;
  paths: number;
}

/**
 * Gathers the sample `init` drafts from while the input streams, never holding a record: per field
 * its first {@link MAX_VALUES} values, each cut to {@link MAX_VALUE_CHARS} characters, within
 * {@link MAX_SAMPLE_UNITS} in all. `columns` is the CSV header, null for NDJSON.
 */
export class SampleCollector {
  /** Records added. */
  rows = 0;
  readonly #columns: readonly string[] | null;
  readonly #budget: Budget = { units: MAX_SAMPLE_UNITS, paths: MAX_PATHS };
  /** CSV: each column's values, in the header's order. */
  readonly #values: string[][];
  /** NDJSON: the records' fields and lists. */
  readonly #tree: TreeSample;

  constructor(columns: readonly string[] | null) {
    this.#columns = columns;
    this.#values = (columns ?? []).map(() => []);
    this.#tree = new TreeSample(this.#budget);
  }

  /** True once the sample holds all it may: the caller stops reading. */
  get full(): boolean {
    return this.#budget.units <= 0;
  }

  add(record: Readonly<Record<string, unknown>>): void {
    if (this.full) return;
    this.rows += 1;
    const columns = this.#columns;
    if (columns === null) {
      this.#tree.add(record);
      return;
    }
    columns.forEach((column, i) => {
      const values = this.#values[i] as string[];
      const value = record[column];
      if (values.length < MAX_VALUES) values.push(keep(typeof value === 'string' ? value : '', this.#budget));
    });
  }

  /** The fields and groups with their sample values. */
  scope(): SourceScope {
    if (this.#columns === null) return this.#tree.scope();
    const byColumn = new Map(this.#columns.map((column, i) => [column, this.#values[i] as string[]]));
    return csvScope(this.#columns, (column) => byColumn.get(column) ?? []);
  }
}

/** The fields and groups of `records` (every record's values kept, as {@link SampleCollector} keeps them). */
export function collectSample(columns: readonly string[] | null, records: Iterable<Readonly<Record<string, unknown>>>): { scope: SourceScope; rows: number } {
  const collector = new SampleCollector(columns);
  for (const record of records) collector.add(record);
  return { scope: collector.scope(), rows: collector.rows };
}

/** A value as the sample keeps it: cut, and copied when cut (a slice would keep the whole string alive). */
function keep(value: string, budget: Budget): string {
  const kept = value.length <= MAX_VALUE_CHARS ? value : Buffer.from(value.slice(0, MAX_VALUE_CHARS)).toString();
  budget.units -= kept.length + 1;
  return kept;
}

/** CSV: the header's numbered groups and plain columns, with each column's sample values. */
function csvScope(header: readonly string[], valuesOfColumn: (column: string) => readonly string[]): SourceScope {
  const { groups, rest } = detectGroups(header);
  const have = new Set(header);
  // A group's field takes its columns' values row by row (D1_DOB, D2_DOB, then the next row's).
  const valuesOf = (columns: readonly string[]): string[] => {
    const lists = columns.map(valuesOfColumn);
    const rows = Math.max(0, ...lists.map((list) => list.length));
    const out: string[] = [];
    for (let row = 0; row < rows; row += 1) {
      for (const list of lists) {
        if (out.length >= MAX_VALUES) return out;
        out.push(list[row] ?? '');
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

/** NDJSON: the records' scalar leaves as fields, their lists of objects as groups (whose elements are sampled alike). */
class TreeSample {
  readonly #fields = new Map<string, SourceField>();
  readonly #lists = new Map<string, { elements: number; sample: TreeSample }>();

  constructor(private readonly budget: Budget) {}

  add(object: unknown): void {
    if (object !== null && typeof object === 'object') this.#visit(object, '');
  }

  scope(): SourceScope {
    const groups = [...this.#lists].map(([path, list]): SourceGroup => ({ kind: 'each', stem: path, start: 0, end: 0, scope: list.sample.scope() }));
    return { fields: [...this.#fields.values()], groups, partial: [] };
  }

  #visit(value: unknown, path: string): void {
    const { budget } = this;
    if (value === null || value === undefined) return;
    if (Array.isArray(value)) {
      if (!value.some((v) => v !== null && typeof v === 'object' && !Array.isArray(v))) return;
      let list = this.#lists.get(path);
      if (list === undefined) {
        if (budget.paths <= 0) return;
        budget.paths -= 1;
        list = { elements: 0, sample: new TreeSample(budget) };
        this.#lists.set(path, list);
      }
      for (const element of value) {
        if (list.elements >= MAX_VALUES) break;
        list.elements += 1;
        list.sample.add(element);
      }
      return;
    }
    if (typeof value === 'object') {
      for (const [key, child] of Object.entries(value as Rec)) this.#visit(child, path === '' ? key : `${path}.${key}`);
      return;
    }
    let field = this.#fields.get(path);
    if (field === undefined) {
      if (budget.paths <= 0 || !/^[A-Za-z_$][\w$-]*(?:\.[A-Za-z_$][\w$-]*)*$/.test(path)) return;
      budget.paths -= 1;
      // A key of the record (or of a list's element) reads as a column; anything deeper as a path.
      field = { ref: path.includes('.') ? { path } : { column: path }, name: path, values: [] };
      this.#fields.set(path, field);
    }
    if (typeof value === 'number') field.numbers = true;
    if (field.values.length < MAX_VALUES) field.values.push(keep(String(value), budget));
  }
}
