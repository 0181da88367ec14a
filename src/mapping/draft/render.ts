/**
 * Writes a draft as YAML with the `yaml` library's Document API, so that the notes for the user
 * are real comments next to the lines they are about, and field objects stay on one line.
 */
import { Document, isMap, isPair, isScalar, isSeq, type Node, type Pair, type YAMLMap } from 'yaml';

export interface DraftField {
  /** The request path (relative to one element inside a group). */
  target: string;
  /** A column name (shorthand) or a field object. */
  spec: string | Record<string, unknown>;
  /** A comment for the user, written after the line. */
  note: string | undefined;
}

export interface DraftGroup {
  target: string;
  /** `firstWithout`: the text member 1's column names lack (`Driver {n} `), see `first_without:`. */
  numbered?: { index: string; start: number; count: number; firstWithout?: string };
  /** A comment after `first_without:`. */
  firstNote?: string;
  each?: string;
  /** One key column, or several (the element exists when any has a value). */
  key: string | string[];
  fields: DraftField[];
  groups: DraftGroup[];
}

export interface DraftMapping {
  /** Where editors find the mapping JSON Schema: the draft's first line says so. */
  schemaRef?: string | undefined;
  /** Comment lines at the top of the file. */
  comments: string[];
  input: { delimiter?: string } | undefined;
  /** `value` undefined: no `row_key:` line, only the note. */
  rowKey: { value: string | undefined; note: string | undefined } | undefined;
  agent: { spec: string | Record<string, unknown>; note: string | undefined } | undefined;
  fields: DraftField[];
  groups: DraftGroup[];
  /** Comment lines at the end of the file. */
  footer: string[];
}

/** The draft as YAML text (a mapping file that loads as it is). */
export function renderDraft(draft: DraftMapping): string {
  const content: Record<string, unknown> = { version: 1, description: 'Draft written by quote-batch init: review it, then remove this line' };
  if (draft.input !== undefined) content.input = draft.input;
  if (draft.rowKey?.value !== undefined) content.row_key = draft.rowKey.value;
  if (draft.agent !== undefined) content.agent = { email: draft.agent.spec };
  content.fields = Object.fromEntries(draft.fields.map((f) => [f.target, f.spec]));
  if (draft.groups.length > 0) content.groups = draft.groups.map(groupContent);
  const doc = new Document(content);
  // The YAML language server reads the schema from this first comment: a typo is underlined as it is typed.
  const modeline = draft.schemaRef === undefined ? [] : [` yaml-language-server: $schema=${draft.schemaRef}`];
  doc.commentBefore = [...modeline, ...draft.comments].join('\n');
  flowFieldObjects(doc.contents as Node);
  const top = doc.contents as YAMLMap;
  const inputNode = childMap(top, 'input');
  if (inputNode !== undefined) inputNode.flow = true;
  if (draft.rowKey?.note !== undefined) {
    if (draft.rowKey.value !== undefined) commentAfter(pairOf(top, 'row_key'), draft.rowKey.note);
    else commentBefore(pairOf(top, 'fields'), ` ${draft.rowKey.note}`);
  }
  const agent = childMap(top, 'agent');
  const agentEmail = agent === undefined ? undefined : childMap(agent, 'email');
  if (agentEmail !== undefined) agentEmail.flow = true;
  if (draft.agent?.note !== undefined) commentAfter(pairOf(agent, 'email'), draft.agent.note);
  annotateFields(childMap(top, 'fields'), draft.fields);
  const groups = top.get('groups', true);
  if (isSeq(groups)) draft.groups.forEach((group, i) => annotateGroup(groups.items[i] as YAMLMap, group));
  if (draft.footer.length > 0) doc.comment = draft.footer.map((line) => ` ${line}`).join('\n');
  return doc.toString({ lineWidth: 0 });
}

function groupContent(group: DraftGroup): Record<string, unknown> {
  const out: Record<string, unknown> = { target: group.target };
  if (group.numbered !== undefined) {
    out.index = group.numbered.index;
    if (group.numbered.start !== 1) out.start = group.numbered.start;
    out.count = group.numbered.count;
    if (group.numbered.firstWithout !== undefined) out.first_without = group.numbered.firstWithout;
  }
  if (group.each !== undefined) out.each = group.each;
  out.key = group.key;
  out.fields = Object.fromEntries(group.fields.map((f) => [f.target, f.spec]));
  if (group.groups.length > 0) out.groups = group.groups.map(groupContent);
  return out;
}

function annotateGroup(node: YAMLMap, group: DraftGroup): void {
  const key: unknown = node.get('key', true);
  if (isSeq(key)) key.flow = true;
  if (group.firstNote !== undefined) commentAfter(pairOf(node, 'first_without'), group.firstNote);
  annotateFields(childMap(node, 'fields'), group.fields);
  const nested = node.get('groups', true);
  if (isSeq(nested)) group.groups.forEach((g, i) => annotateGroup(nested.items[i] as YAMLMap, g));
}

function childMap(map: YAMLMap, key: string): YAMLMap | undefined {
  const node: unknown = map.get(key, true);
  return isMap(node) ? node : undefined;
}

function annotateFields(fields: YAMLMap | undefined, drafted: readonly DraftField[]): void {
  for (const field of drafted) {
    if (field.note !== undefined) commentAfter(pairOf(fields, field.target), field.note);
  }
}

/** Field objects (`{ column: dob, type: date }`) on one line, as people write them. */
function flowFieldObjects(node: Node): void {
  if (!isMap(node)) {
    if (isSeq(node)) for (const item of node.items) flowFieldObjects(item as Node);
    return;
  }
  for (const pair of node.items) {
    const key = isScalar(pair.key) ? String(pair.key.value) : '';
    if (key === 'fields' && isMap(pair.value)) {
      for (const field of pair.value.items) if (isMap(field.value)) field.value.flow = true;
    } else if (pair.value !== null && typeof pair.value === 'object') {
      flowFieldObjects(pair.value as Node);
    }
  }
}

function pairOf(map: YAMLMap | undefined, key: string): Pair | undefined {
  return map?.items.find((pair) => isPair(pair) && isScalar(pair.key) && pair.key.value === key);
}

function commentAfter(pair: Pair | undefined, note: string): void {
  const value = pair?.value as Node | null | undefined;
  if (value !== null && value !== undefined) value.comment = ` ${note}`;
}

function commentBefore(pair: Pair | undefined, note: string): void {
  const key = pair?.key as Node | null | undefined;
  if (key !== null && key !== undefined) key.commentBefore = note;
}
