import { matchName } from './names.js';

/**
 * Numbered groups found in column names: `driver2_dob`, `D2_DOB`, `Driver 2 DOB`, `dob_2`, and
 * nested ones such as `D1_Inc2_Code`. Pure: a header in, groups and the remaining columns out.
 */

/** Marks a group's number in a column template: `mark(0)` is the outer group's, `mark(1)` the nested one's. */
export function mark(level: number): string {
  // Private-use characters: no column name holds them.
  return `\uE000${level}\uE001`;
}

/** Replaces each mark of `template` by what `put` gives for its level. */
export function replaceMarks(template: string, put: (level: number) => string): string {
  return template.replace(/\uE000(\d+)\uE001/g, (_, level: string) => put(Number(level)));
}

/** A template with each level's number put back (`D{0}_Inc{1}_Code` with [2, 1] → `D2_Inc1_Code`). */
export function fillTemplate(template: string, numbers: readonly (number | string)[]): string {
  return replaceMarks(template, (level) => String(numbers[level] ?? ''));
}

export interface ColumnGroup {
  /** The text before the number (`D`, `driver`, `Driver `, `_Inc`); for numbers at the end of names, the separator. */
  stem: string;
  /** The numbers seen at this level, ascending. */
  numbers: number[];
  fields: GroupColumn[];
  groups: ColumnGroup[];
}

export interface GroupColumn {
  /** The name without the group's stem and number, for matching (`FName`, `first_name`). */
  residual: string;
  /** The column name with each level's number replaced by {@link mark}. */
  template: string;
  /** The columns of the field, with their numbers (outer first). */
  columns: { column: string; numbers: number[] }[];
}

interface Item {
  column: string;
  /** The template of the part of the name already read. */
  head: string;
  /** The part still to read. */
  name: string;
  numbers: number[];
}

/** `driver1_x` → `driver`, `1`, `_x`: the first number after a letter. */
const NUMBERED = /^([^\d]*[A-Za-z][^\d]*?)(\d+)(.*)$/s;
const INDEX = /^(?:0|[1-9]\d?)$/;
/** Longer names are never part of a group (the patterns above would take quadratic time on a 10 MB name). */
const MAX_NAME = 200;

/**
 * Splits a header into numbered groups and the other columns. A run of columns is a group when
 * they share the text before a number and at least two different fields follow it (so
 * `address_line_1`, `address_line_2` stay plain columns), and either the number takes two values
 * or the stem names a driver, vehicle or incident.
 */
export function detectGroups(columns: readonly string[]): { groups: ColumnGroup[]; rest: string[] } {
  const items = columns.map((column) => ({ column, head: '', name: column, numbers: [] }));
  const { groups, rest } = detectLevel(items, 0);
  const suffix = detectSuffixGroups(rest);
  const order = new Map(columns.map((column, i) => [column, i]));
  const plain = suffix.rest.map((item) => item.column).sort((a, b) => (order.get(a) ?? 0) - (order.get(b) ?? 0));
  return { groups: [...groups, ...suffix.groups], rest: plain };
}

function detectLevel(items: readonly Item[], level: number): { groups: ColumnGroup[]; rest: Item[] } {
  const buckets = new Map<string, { item: Item; number: number; rest: string }[]>();
  const rest: Item[] = [];
  for (const item of items) {
    const m = item.name.length > MAX_NAME ? null : NUMBERED.exec(item.name);
    if (m === null || !INDEX.test(m[2] ?? '')) {
      rest.push(item);
      continue;
    }
    const stem = m[1] ?? '';
    let bucket = buckets.get(stem);
    if (bucket === undefined) {
      bucket = [];
      buckets.set(stem, bucket);
    }
    bucket.push({ item, number: Number(m[2]), rest: m[3] ?? '' });
  }
  const groups: ColumnGroup[] = [];
  for (const [stem, members] of buckets) {
    const residuals = new Set(members.map((m) => stripSeparators(m.rest)).filter((r) => r !== ''));
    const numbers = [...new Set(members.map((m) => m.number))].sort((a, b) => a - b);
    if (residuals.size < 2 || (numbers.length < 2 && stemEntity(stem) === undefined)) {
      rest.push(...members.map((m) => m.item));
      continue;
    }
    const inner: Item[] = members.map((m) => ({
      column: m.item.column, head: `${m.item.head}${stem}${mark(level)}`, name: m.rest, numbers: [...m.item.numbers, m.number],
    }));
    const nested = detectLevel(inner.filter((i) => /\d/.test(i.name)), level + 1);
    const plain = [...inner.filter((i) => !/\d/.test(i.name)), ...nested.rest];
    groups.push({ stem, numbers, fields: collectFields(plain), groups: nested.groups });
  }
  return { groups, rest };
}

/**
 * `first_name_1`, `dob_1`, `first_name_2`… or `firstName1`, `vin2`: the number at the end, after a
 * separator or straight after a letter. Names numbered without a separator make a group only when
 * three or more of them repeat (`address1`, `address2` alone are two lines of one address). The
 * fields that name a vehicle's make a group of their own: drivers and vehicles are numbered alike.
 */
function detectSuffixGroups(items: readonly Item[]): { groups: ColumnGroup[]; rest: Item[] } {
  const bySeparator = new Map<string, { item: Item; residual: string; number: number }[]>();
  const rest: Item[] = [];
  for (const item of items) {
    const m = item.name.length > MAX_NAME ? null : /^(.*[A-Za-z])([\s_.-]?)(\d+)$/s.exec(item.name);
    if (m === null || !INDEX.test(m[3] ?? '')) {
      rest.push(item);
      continue;
    }
    const list = bySeparator.get(m[2] ?? '') ?? [];
    list.push({ item, residual: m[1] ?? '', number: Number(m[3]) });
    bySeparator.set(m[2] ?? '', list);
  }
  const groups: ColumnGroup[] = [];
  for (const [separator, members] of bySeparator) {
    const numbersOf = new Map<string, Set<number>>();
    for (const m of members) numbersOf.set(m.residual, (numbersOf.get(m.residual) ?? new Set()).add(m.number));
    const repeated = [...numbersOf].filter(([, numbers]) => numbers.size >= 2).map(([residual]) => residual);
    if (repeated.length < (separator === '' ? 3 : 2)) {
      rest.push(...members.map((m) => m.item));
      continue;
    }
    rest.push(...members.filter((m) => !repeated.includes(m.residual)).map((m) => m.item));
    const vehicles = new Set(repeated.filter(namesVehicle));
    for (const [stem, part] of [[separator, repeated.filter((r) => !vehicles.has(r))], [`vehicle${separator}`, [...vehicles]]] as const) {
      if (part.length === 0) continue;
      const inGroup = members.filter((m) => part.includes(m.residual));
      const numbers = [...new Set(inGroup.map((m) => m.number))].sort((a, b) => a - b);
      const fields = collectFields(inGroup.map((m) => ({ column: m.item.column, head: '', name: `${m.residual}${separator}${mark(0)}`, numbers: [m.number] })));
      for (const field of fields) field.residual = stripSeparators(replaceMarks(field.template, () => ''));
      groups.push({ stem, numbers, fields, groups: [] });
    }
  }
  return { groups, rest };
}

/** A field's name says it is a vehicle's (`vin`, `modelYear`), more than a driver's. */
function namesVehicle(residual: string): boolean {
  const vehicle = matchName(residual, ['vehicle', 'vehicle_coverage'])[0]?.confidence ?? 0;
  const driver = matchName(residual, ['driver'])[0]?.confidence ?? 0;
  return vehicle >= 0.6 && vehicle > driver;
}

function collectFields(items: readonly Item[]): GroupColumn[] {
  const fields = new Map<string, GroupColumn>();
  for (const item of items) {
    const template = `${item.head}${item.name}`;
    let field = fields.get(template);
    if (field === undefined) {
      field = { residual: stripSeparators(item.name), template, columns: [] };
      fields.set(template, field);
    }
    field.columns.push({ column: item.column, numbers: item.numbers });
  }
  return [...fields.values()];
}

function stripSeparators(text: string): string {
  return text.replace(/^[\s_.-]+|[\s_.-]+$/g, '');
}

/** The entity a group's stem names, if it names one: `D`, `Driver ` → driver; `V`, `Veh` → vehicle; `_Inc` → incident. */
export function stemEntity(stem: string): 'driver' | 'vehicle' | 'incident' | undefined {
  const word = stem.toLowerCase().replace(/[^a-z]+/g, ' ').trim().split(' ').pop() ?? '';
  if (/^(?:d|drv|drvr|driver|drivers|operator|op)$/.test(word)) return 'driver';
  if (/^(?:v|veh|vehicle|vehicles|car|auto|unit)$/.test(word)) return 'vehicle';
  if (/^(?:i|inc|incident|incidents|acc|accident|accidents|viol|violation|violations|claim|claims|ticket|tickets|event)$/.test(word)) return 'incident';
  return undefined;
}
