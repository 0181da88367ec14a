/**
 * An element of a group whose key is empty is left out of the request; when other sources of it
 * have values, those values are dropped with it, which the row says (`_run.ts` warns). These build,
 * once per element, the check of which of its sources have a value. It runs for every absent
 * driver of every row, so plain columns are read straight from the record.
 */
import { prefixSources, type FieldPlan, type GroupPlan, type InstancePlan, type Rec } from './_plan.js';

export function isEmptyValue(value: unknown): boolean {
  return value === undefined || value === null || (typeof value === 'string' && value.trim() === '');
}

/** What an element's sources are, for {@link buildFilledSources}: plain columns, and other reads. */
interface Probe {
  /** Top-level columns, read straight from the record (most of a CSV group's sources). */
  columns: readonly string[];
  /** Per column, the texts its fields read as empty (`empty: [N/A]`), lower-cased. */
  empties: readonly (ReadonlySet<string> | undefined)[];
  /** Other sources (paths, sources in an `each` element, lists of nested `each` groups): push their names when filled. */
  others: readonly ((record: Rec, item: unknown, srcPrefix: string, found: string[]) => void)[];
}

const SIMPLE_NAME = /^[^.[\]]*$/;

/** The sources of an instance's fields and of its nested groups' elements (constants and copied objects are not data of the row). */
export function probeOf(fields: readonly FieldPlan[], groups: readonly GroupPlan[]): Probe {
  const columns = new Map<string, ReadonlySet<string> | undefined>();
  const others: Probe['others'][number][] = [];
  for (const field of fields) {
    if (field.sources.length === 0 || field.isPass) continue;
    if (!field.relative && field.kind === 'column' && field.sources.every((source) => SIMPLE_NAME.test(source))) {
      for (const source of field.sources) if (!columns.has(source) || field.fast?.empties === undefined) columns.set(source, field.fast?.empties);
      continue;
    }
    const { read, sources, relative } = field;
    others.push((record, item, srcPrefix, found) => {
      const value = read(record, item);
      // An object is not a value of this element (a failed template piece, FAIL, is one).
      if (!isEmptyValue(value) && typeof value !== 'object') found.push(...prefixSources(sources, relative, srcPrefix));
    });
  }
  for (const group of groups) {
    const each = group.each;
    if (each === undefined) {
      for (const instance of group.instances) {
        instance.probe.columns.forEach((column, i) => {
          if (!columns.has(column)) columns.set(column, instance.probe.empties[i]);
        });
        others.push(...instance.probe.others);
      }
    } else {
      others.push((record, item, srcPrefix, found) => {
        const list = each.read(record, item);
        if (Array.isArray(list) && list.length > 0) found.push(each.relative && srcPrefix !== '' ? `${srcPrefix}.${each.text}` : each.text);
      });
    }
  }
  return { columns: [...columns.keys()], empties: [...columns.values()], others };
}

/**
 * For an element left out because its key is empty: which of its sources have a value, so that the
 * row can say what was dropped with it (`_run.ts`). Runs for every absent driver of every row: the
 * columns are read straight from the record, an empty one costing one comparison.
 */
export function buildFilledSources(probe: Probe): NonNullable<InstancePlan['filledSources']> {
  const { columns, empties, others } = probe;
  return (record, item, srcPrefix) => {
    let found: string[] | undefined;
    for (let i = 0; i < columns.length; i += 1) {
      const column = columns[i] as string;
      const value = record[column];
      if (value === undefined || value === '' || value === null) continue;
      if (typeof value === 'string') {
        const text = value.trim();
        if (text === '' || empties[i]?.has(text.toLowerCase()) === true) continue;
      }
      (found ??= []).push(column);
    }
    if (others.length > 0) {
      const more: string[] = [];
      for (const other of others) other(record, item, srcPrefix, more);
      if (more.length > 0) (found ??= []).push(...more);
    }
    return found ?? NONE;
  };
}

const NONE: readonly string[] = [];
