/**
 * Straight-line code for the fields of one mapping instance (see compile.ts `runFields`, the
 * reference it must match). Why: the compiled plan is a list of closures called from one loop,
 * so every call site there sees dozens of different functions and V8 cannot inline any of them;
 * the same steps written out once per field give each field its own call sites and let V8 turn
 * a column read into a plain property load. This is most of the cost of mapping a row.
 *
 * Only the common case is written out: a text value that is trimmed, cased, looked up in a value
 * table and converted. Everything else (a missing or non-text source, a value-table miss, a
 * required value that is empty, a failure, an unknown enumerated word) calls back into the
 * reference code of the field, so messages and warnings come from one place.
 */
import type { Converter } from './_convert.js';

type Rec = Record<string, unknown>;

/** What the generated code needs to know about one field's text pipeline (compile.ts fills it). */
export interface FastText {
  trim: boolean;
  /** Texts read as empty (`N/A`), lower-cased. */
  empties: ReadonlySet<string> | undefined;
  upper: boolean;
  lower: boolean;
  /** The value table, keys lower-cased. */
  table: ReadonlyMap<string, unknown> | undefined;
  convert: Converter | undefined;
  /** An empty value: left out, replaced by the default, or (required) handed to the reference code. */
  empty: 'omit' | 'default' | 'reference';
  fallback: unknown;
}

/** One field as the generator sees it (a subset of compile.ts `FieldPlan`). */
export interface GeneratedField {
  /** A top-level CSV column read straight from the record; undefined: call `read`. */
  column: string | undefined;
  read: (record: Rec, item: unknown) => unknown;
  /** Undefined: always call the reference `produce` (literals, pass-through). */
  fast: FastText | undefined;
  /** Slot of the target's parent object shared by fields with the same parent. */
  parent: number;
  /** The target's parent is the instance's object itself. */
  parentIsOut: boolean;
  leaf: string;
  known: ReadonlySet<string> | undefined;
}

/** The reference code's pieces the generated code calls back into. */
export interface ReferenceHooks<Row> {
  omit: symbol;
  fail: symbol;
  /** The reference produce of field `i` (sets the row's current path first when it may warn). */
  produce(i: number, raw: unknown, row: Row, base: string, srcPrefix: string, record: Rec, item: unknown): unknown;
  /** Records the failure of field `i` (reason in `failure`). */
  reportFailure(i: number, raw: unknown, row: Row, base: string, srcPrefix: string): void;
  /** Finds or creates the parent object of field `i` in `out`. */
  ensureParent(i: number, out: Rec): Rec;
  /** Warns about an unknown enumerated word unless the field already warned. */
  reportUnknown(i: number, value: unknown, row: Row, warningsBefore: number, base: string, srcPrefix: string): void;
}

/** `(out, record, item, row, base, srcPrefix)`: maps `fields` of one instance into `out`. */
export type FieldRunner<Row> = (out: Rec, record: Rec, item: unknown, row: Row, base: string, srcPrefix: string) => void;

/** Compiles `fields` into one function; the result matches compile.ts `runFields` exactly. */
export function generateFieldRunner<Row extends { warnings: unknown[] }>(
  fields: readonly GeneratedField[],
  hooks: ReferenceHooks<Row>,
): FieldRunner<Row> {
  const lines: string[] = [];
  const slots = new Set<number>();
  fields.forEach((field, i) => {
    const call = `${i}, raw, row, base, srcPrefix`;
    const produce = `H.produce(${call}, record, item)`;
    lines.push(`// field ${i}`);
    lines.push(field.column === undefined ? `raw = R${i}(record, item);` : `raw = record[${JSON.stringify(field.column)}];`);
    if (field.known !== undefined) lines.push('wb = row.warnings.length;');
    const fast = field.fast;
    if (fast === undefined) {
      lines.push(`v = ${produce};`);
    } else {
      lines.push(`if (typeof raw === 'string') {`);
      lines.push(fast.trim ? 't = raw.trim();' : 't = raw;');
      const empty = fast.empty === 'omit' ? 'OMIT' : fast.empty === 'default' ? `D${i}` : produce;
      lines.push(fast.empties === undefined ? `if (t === '') v = ${empty};` : `if (t === '' || E${i}.has(t.toLowerCase())) v = ${empty};`, 'else {');
      if (fast.upper) lines.push('t = t.toUpperCase();');
      else if (fast.lower) lines.push('t = t.toLowerCase();');
      const convert = (text: string): string => (fast.convert === undefined ? text : `C${i}(${text})`);
      if (fast.table !== undefined) {
        // A miss may warn or fail, and null means "send nothing": the reference code handles them from the start.
        lines.push(`m = T${i}.get(t.toLowerCase());`);
        lines.push(`if (m === undefined || m === null) v = ${produce};`);
        lines.push(`else if (typeof m !== 'string') v = m;`);
        lines.push(`else v = ${convert('m')};`);
      } else {
        lines.push(`v = ${convert('t')};`);
      }
      lines.push('}', `} else v = ${produce};`);
    }
    const parent = field.parentIsOut ? 'out' : `(p${field.parent} ??= H.ensureParent(${i}, out))`;
    if (!field.parentIsOut) slots.add(field.parent);
    lines.push('if (v !== OMIT) {');
    lines.push(`if (v === FAIL) H.reportFailure(${call});`);
    lines.push('else {', `${parent}[${JSON.stringify(field.leaf)}] = v;`);
    if (field.known !== undefined) {
      lines.push(`if (typeof v === 'string' && !K${i}.has(v)) H.reportUnknown(${i}, v, row, wb, base, srcPrefix);`);
    }
    lines.push('}', '}');
  });
  // The per-field values become constants of the generated function (R3, T3, C3, D3, K3).
  const constants: string[] = ['const OMIT = H.omit, FAIL = H.fail;'];
  fields.forEach((field, i) => {
    if (field.column === undefined) constants.push(`const R${i} = F[${i}].read;`);
    if (field.fast?.table !== undefined) constants.push(`const T${i} = F[${i}].fast.table;`);
    if (field.fast?.empties !== undefined) constants.push(`const E${i} = F[${i}].fast.empties;`);
    if (field.fast?.convert !== undefined) constants.push(`const C${i} = F[${i}].fast.convert;`);
    if (field.fast?.empty === 'default') constants.push(`const D${i} = F[${i}].fast.fallback;`);
    if (field.known !== undefined) constants.push(`const K${i} = F[${i}].known;`);
  });
  const locals = ['raw', 'v', 't', 'm', 'wb', ...[...slots].map((s) => `p${s}`)];
  const source = [
    ...constants,
    'return function runFields(out, record, item, row, base, srcPrefix) {',
    `let ${locals.join(', ')};`,
    ...lines,
    '};',
  ].join('\n');
  // Only column and member names are interpolated, as JSON string literals: data never becomes code.
  const factory = new Function('F', 'H', source) as (f: readonly GeneratedField[], h: ReferenceHooks<Row>) => FieldRunner<Row>;
  return factory(fields, hooks);
}
