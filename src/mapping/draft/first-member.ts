/**
 * An unnumbered first member: exports that write the primary driver's columns without a number
 * (`First Name`, `Date Of Birth`) and the others' with one (`Driver 2 First Name`…). The numbered
 * columns alone make a group starting at 2; this folds the unnumbered columns in as its member 1,
 * which the mapping writes `first_without: "Driver {n} "`. Pure: a group and the plain fields in.
 */
import { fillTemplate, mark } from './groups.js';
import { refText, type SourceField, type SourceGroup } from './sources.js';

export interface FoldedGroup {
  /** The group numbered from 1, each field's values led by its member-1 column's. */
  group: SourceGroup;
  /** The plain fields left once member 1's are taken. */
  plain: SourceField[];
  /** The text member 1's column names lack, with the group's mark for its number (`Driver \uE0000\uE001 `). */
  drop: string;
  /** Member 1's columns, for the draft's note. */
  firstColumns: string[];
}

const MARK = mark(0);

/**
 * The group with its unnumbered first member, when the numbers start at 2, the group has no nested
 * groups, and at least two of its fields (and at least half) have a column named like theirs
 * without the number. A field member 1 lacks goes to `partial` (not there for every number).
 */
export function foldUnnumberedFirst(group: SourceGroup, plain: readonly SourceField[]): FoldedGroup | undefined {
  if (group.kind !== 'numbered' || group.start !== 2 || group.scope.groups.length > 0) return undefined;
  const drops = new Set(group.scope.fields.map((field) => dropOf(refText(field), group.stem)));
  const drop = drops.size === 1 ? [...drops][0] : undefined;
  if (drop === undefined) return undefined;
  const byColumn = new Map(plain.filter((field) => 'column' in field.ref).map((field) => [refText(field), field]));
  const firstOf = new Map<SourceField, SourceField>();
  for (const field of group.scope.fields) {
    const first = byColumn.get(refText(field).split(drop).join(''));
    if (first !== undefined) firstOf.set(field, first);
  }
  if (firstOf.size < 2 || firstOf.size * 2 < group.scope.fields.length) return undefined;
  const fields: SourceField[] = [];
  const partial = [...group.scope.partial];
  for (const field of group.scope.fields) {
    const first = firstOf.get(field);
    if (first === undefined) {
      for (let n = group.start; n <= group.end; n += 1) partial.push(fillTemplate(refText(field), [n]));
      continue;
    }
    fields.push({ ...field, values: [...first.values, ...field.values] });
  }
  const taken = new Set(firstOf.values());
  return {
    group: { ...group, start: 1, scope: { ...group.scope, fields, partial } },
    plain: plain.filter((field) => !taken.has(field)),
    drop,
    firstColumns: [...taken].map(refText),
  };
}

/** What member 1's name lacks: the stem and number at the front (`Driver 2 `), or the separator and number at the end (`_2`). */
function dropOf(template: string, stem: string): string | undefined {
  if (template.startsWith(`${stem}${MARK}`)) {
    const after = template.slice(stem.length + MARK.length);
    const separators = /^[\s_.-]*/.exec(after)?.[0] ?? '';
    return after.length > separators.length ? `${stem}${MARK}${separators}` : undefined;
  }
  if (template.endsWith(`${stem}${MARK}`) && template.length > stem.length + MARK.length) return `${stem}${MARK}`;
  return undefined;
}
