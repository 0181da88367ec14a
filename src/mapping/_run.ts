/**
 * Running a plan on one row: the fields of each instance (by the code generated from them, or by
 * the interpreted reference), the groups that build the request's lists, then the values read
 * beside the request (agent e-mail, row key), the QuoteRequest check and the known-word warnings.
 * Never throws for bad data: problems become the row's errors and warnings.
 */
import { buildProbe } from './_fast-validate.js';
import { findUnknownEnumValues, isAgentEmail, QuoteRequest, validateQuoteRequest } from '../partner/schemas.js';
import { FAIL, failure } from './_convert.js';
import { generateFieldRunner, type FieldRunner } from './_generate.js';
import {
  OMIT, prefixSources, startRow, type FieldPlan, type GroupPlan, type InstancePlan, type MappingPlan, type Rec, type RowState,
} from './_plan.js';
import { requiredMembers, type PathSegment } from './_request-paths.js';
import { quoteValue } from './_text.js';
import { overlaps, traceColumns } from './_trace.js';
import type { MappedRow, RowIssue } from './types.js';

/** zod's answer for a valid request, found quicker (see _fast-validate.ts). */
const isValidRequest = buildProbe(QuoteRequest);

/** Maps one record with `plan` (see CompiledMapping.mapRow). */
export function mapRecord(plan: MappingPlan, record: Rec, rowNumber: number, reference: boolean): MappedRow {
  const row = startRow(rowNumber, reference);
  const request: Rec = {};
  runInstance(plan.root, request, record, undefined, row, '', '');
  const conversionErrors = row.errors.length;
  const agentRaw = readSide(plan.agentEmail, record, row);
  let email: string | null = null;
  if (agentRaw !== undefined && agentRaw !== null) {
    email = String(agentRaw).trim().toLowerCase();
    if (!isAgentEmail(email)) {
      const agent = plan.agentEmail;
      row.errors.push({ path: 'agent.email', message: 'expected an e-mail address', columns: agent?.sources ?? [], sourceKind: agent?.kind ?? 'column', received: agentRaw });
    }
  }
  let rowKey: string | undefined;
  if (plan.rowKeySource !== undefined) {
    const key = readSide(plan.rowKeySource, record, row);
    if (key !== undefined && key !== null && String(key) !== '') rowKey = String(key);
  } else {
    for (const segments of plan.rowKeyPaths) {
      const key = getPath(request, segments);
      if (key !== undefined && key !== null && typeof key !== 'object' && String(key) !== '') {
        rowKey = String(key);
        break;
      }
    }
  }
  const schemaIssues = isValidRequest(request) ? [] : validateQuoteRequest(request);
  const known = schemaIssues.length === 0 ? [] : row.errors.slice(0, conversionErrors).map((e) => e.path);
  for (const issue of schemaIssues) {
    // A value that failed conversion was left out: the schema's "missing" says it again.
    if (known.some((path) => overlaps(issue.path, path))) continue;
    const { message, columns, kind } = describeMissing(plan, request, issue.path, issue.message, row);
    const rowIssue: RowIssue = { path: issue.path, message, columns, sourceKind: kind };
    if (issue.received !== undefined) {
      rowIssue.received = issue.received;
      // The file's own text, when a conversion changed it: the request's value is not in the file.
      const text = kind === 'column' && columns.length === 1 ? record[columns[0] as string] : undefined;
      if (typeof text === 'string' && text !== String(issue.received)) rowIssue.sourceText = text;
    }
    row.errors.push(rowIssue);
  }
  const enumWarnings = plan.passCoversEnums ? findUnknownEnumValues(request) : [];
  const warned = new Set(enumWarnings.length === 0 ? [] : row.warnings.map((w) => w.path));
  // Mapped words were checked field by field; only whole copied objects need a scan.
  for (const warning of enumWarnings) {
    if (warned.has(warning.path)) continue;
    const { columns, kind } = traceColumns(plan.root, request, warning.path, row);
    row.warnings.push({ path: warning.path, message: warning.message, columns, sourceKind: kind, received: warning.value });
  }
  return {
    rowNumber,
    request,
    agentEmail: email === '' ? null : email,
    rowKey: rowKey ?? `row-${rowNumber}`,
    errors: row.errors,
    warnings: row.warnings,
  };
}

/**
 * A schema issue with the sources to name. A missing object names the members it needs and their
 * sources, not the optional members mapped below it (`name.middle_name`) that happened to be empty;
 * a missing value no source is mapped to says so.
 */
function describeMissing(plan: MappingPlan, request: Rec, path: string, message: string, row: RowState):
  { message: string; columns: readonly string[]; kind: 'column' | 'field' } {
  const missing = /^required (\w+), got nothing$/.exec(message);
  if (missing?.[1] === 'object') {
    const members = requiredMembers(path);
    if (members.length > 0) {
      const traced = members.map((member) => traceColumns(plan.root, request, `${path}.${member}`, row));
      const columns = [...new Set(traced.flatMap((t) => t.columns))];
      const kind = traced.find((t) => t.columns.length > 0)?.kind ?? 'column';
      const none = columns.length === 0 ? (members.length === 1 ? '; the mapping does not fill it' : '; the mapping fills none of them') : '';
      return { message: `required object (it needs ${members.join(', ')}${none}), got nothing`, columns, kind };
    }
  }
  const { columns, kind } = traceColumns(plan.root, request, path, row);
  if (missing !== null && columns.length === 0) return { message: `required ${missing[1] ?? ''} (the mapping does not fill it), got nothing`, columns, kind };
  return { message, columns, kind };
}

/** A value read beside the request (agent e-mail, row key source). */
function readSide(field: FieldPlan | undefined, record: Rec, row: RowState): unknown {
  if (field === undefined) return undefined;
  row.currentPath = field.targetText;
  row.currentColumns = field.sources;
  row.currentKind = field.kind;
  const raw = field.read(record, undefined);
  const value = field.produce(raw, row, record, undefined);
  if (value === FAIL) {
    const issue: RowIssue = { path: field.targetText, message: failure.message, columns: field.sources, sourceKind: field.kind };
    if (typeof raw === 'string' && raw !== '') issue.received = raw;
    row.errors.push(issue);
    return undefined;
  }
  return value === OMIT ? undefined : value;
}

function runInstance(
  instance: InstancePlan, out: Rec, record: Rec, item: unknown, row: RowState, base: string, srcPrefix: string,
): void {
  if (row.reference) runFields(instance.fields, out, record, item, row, base, srcPrefix);
  else instance.runFields(out, record, item, row, base, srcPrefix);
  if (instance.groups.length > 0) {
    const first = row.first;
    for (const group of instance.groups) runGroup(group, out, record, item, row, base, srcPrefix);
    row.first = first;
  }
  if (instance.lateFields.length > 0) {
    if (row.reference) runFields(instance.lateFields, out, record, item, row, base, srcPrefix);
    else instance.runLateFields(out, record, item, row, base, srcPrefix);
  }
}

/**
 * The reference way to map an instance's fields: interprets the plan. The generated code of
 * {@link buildFieldRunner} does the same, faster; tests compare the two.
 */
function runFields(fields: readonly FieldPlan[], out: Rec, record: Rec, item: unknown, row: RowState, base: string, srcPrefix: string): void {
  const parents: (Rec | undefined)[] = [];
  for (const field of fields) {
    const raw = field.read(record, item);
    const warningsBefore = row.warnings.length;
    const value = produceField(field, raw, row, base, srcPrefix, record, item);
    if (value === OMIT) continue;
    if (value === FAIL) {
      reportFailure(field, raw, row, base, srcPrefix);
      continue;
    }
    let parent = parents[field.parent];
    if (parent === undefined) {
      parent = ensureParent(field, out);
      parents[field.parent] = parent;
    }
    parent[field.leaf] = value;
    if (field.known !== undefined && typeof value === 'string' && !field.known.has(value)) {
      reportUnknown(field, value, row, warningsBefore, base, srcPrefix);
    }
  }
}

function produceField(field: FieldPlan, raw: unknown, row: RowState, base: string, srcPrefix: string, record: Rec, item: unknown): unknown {
  if (field.warns) {
    // A value-table miss warns with the field's path: the row must know it first.
    row.currentPath = base === '' ? field.targetText : `${base}.${field.targetText}`;
    row.currentColumns = prefixSources(field.sources, field.relative, srcPrefix);
    row.currentKind = field.kind;
  }
  return field.produce(raw, row, record, item);
}

function reportFailure(field: FieldPlan, raw: unknown, row: RowState, base: string, srcPrefix: string): void {
  const issue: RowIssue = {
    path: base === '' ? field.targetText : `${base}.${field.targetText}`,
    message: failure.message,
    columns: prefixSources(field.sources, field.relative, srcPrefix),
    sourceKind: field.kind,
  };
  if (raw === FAIL) {
    // A template's reference failed its pipe: the text that failed, not the template.
    if (failure.received !== undefined) issue.received = failure.received;
  } else if (raw !== undefined && raw !== null && typeof raw !== 'object' && (typeof raw !== 'string' || raw.trim() !== '')) issue.received = raw;
  row.errors.push(issue);
}

function ensureParent(field: FieldPlan, out: Rec): Rec {
  return field.parentPath.length === 0 ? out : ensurePath(out, field.parentPath, typeof field.target[field.target.length - 1] === 'number');
}

/** An enumerated word outside the known list warns, unless the field has already warned (value-table miss). */
function reportUnknown(field: FieldPlan, value: string, row: RowState, warningsBefore: number, base: string, srcPrefix: string): void {
  if (row.warnings.length !== warningsBefore) return;
  row.warnings.push({
    path: base === '' ? field.targetText : `${base}.${field.targetText}`,
    message: `unknown value ${quoteValue(value)} (known: ${field.knownText})`,
    columns: prefixSources(field.sources, field.relative, srcPrefix),
    sourceKind: field.kind,
    received: value,
  });
}

/** Generates the code of `runFields(fields)` (see _generate.ts); the hooks are the reference's own steps. */
export function buildFieldRunner(fields: readonly FieldPlan[]): FieldRunner<RowState> {
  const field = (i: number): FieldPlan => fields[i] as FieldPlan;
  return generateFieldRunner<RowState>(
    fields.map((f) => ({
      column: f.column, read: f.read, fast: f.fast, parent: f.parent, parentIsOut: f.parentPath.length === 0, leaf: f.leaf, known: f.known,
    })),
    {
      omit: OMIT,
      fail: FAIL,
      produce: (i, raw, row, base, srcPrefix, record, item) => produceField(field(i), raw, row, base, srcPrefix, record, item),
      reportFailure: (i, raw, row, base, srcPrefix) => reportFailure(field(i), raw, row, base, srcPrefix),
      ensureParent: (i, out) => ensureParent(field(i), out),
      reportUnknown: (i, value, row, warningsBefore, base, srcPrefix) => reportUnknown(field(i), value as string, row, warningsBefore, base, srcPrefix),
    },
  );
}

function runGroup(group: GroupPlan, out: Rec, record: Rec, item: unknown, row: RowState, base: string, srcPrefix: string): void {
  let list: Rec[] | undefined;
  const prefix = base === '' ? group.targetText : `${base}.${group.targetText}`;
  if (group.each === undefined) {
    for (const instance of group.instances) {
      if (isEmpty(instance.readKey(record, item))) {
        reportLeftOut(instance, record, item, row, prefix, srcPrefix);
        continue;
      }
      list ??= [];
      const element: Rec = {};
      row.elements.push({ element, instance, srcPrefix });
      row.first = list.length === 0;
      runInstance(instance, element, record, item, row, `${prefix}[${list.length}]`, srcPrefix);
      list.push(element);
    }
  } else {
    const source = group.each.read(record, item);
    const instance = group.instances[0];
    if (Array.isArray(source) && instance !== undefined) {
      const sourceBase = group.each.relative && srcPrefix !== '' ? `${srcPrefix}.${group.each.text}` : group.each.text;
      for (let j = 0; j < source.length; j += 1) {
        const element = source[j] as unknown;
        const elementPrefix = `${sourceBase}[${j}]`;
        if (isEmpty(instance.readKey(record, element))) {
          reportLeftOut(instance, record, element, row, prefix, elementPrefix);
          continue;
        }
        list ??= [];
        const built: Rec = {};
        row.elements.push({ element: built, instance, srcPrefix: elementPrefix });
        row.first = list.length === 0;
        runInstance(instance, built, record, element, row, `${prefix}[${list.length}]`, elementPrefix);
        list.push(built);
      }
    } else if (source !== undefined && source !== null && source !== '') {
      row.errors.push({ path: prefix, message: `expected a list, got ${quoteValue(source)}`, columns: [group.each.text], sourceKind: 'field' });
    }
  }
  if (list !== undefined) setPath(out, group.target, list);
}

/**
 * An element whose key is empty is left out; when other sources of it have values, those values are
 * dropped with it, which the row says (a warning: the rest of the row is still sent).
 */
function reportLeftOut(instance: InstancePlan, record: Rec, item: unknown, row: RowState, prefix: string, srcPrefix: string): void {
  const filled = instance.filledSources?.(record, item, srcPrefix);
  if (filled === undefined || filled.length === 0) return;
  const kind = instance.trace.find((t) => t.target === '#key')?.kind ?? 'column';
  const keys = prefixSources(instance.keySources, kind === 'field', srcPrefix);
  row.warnings.push({
    path: prefix,
    message: `left out: its key ${instance.keyText} is empty while other ${kind === 'field' ? 'fields' : 'columns'} of it have values`,
    columns: [...new Set([...keys, ...filled])],
    sourceKind: kind,
  });
}

function isEmpty(value: unknown): boolean {
  return value === undefined || value === null || (typeof value === 'string' && value.trim() === '');
}

/** Sets `value` at `segments` below `root`, creating the objects and arrays on the way. */
export function setPath(root: Rec, segments: readonly PathSegment[], value: unknown): void {
  let node: Rec = root;
  const last = segments.length - 1;
  for (let i = 0; i < last; i += 1) {
    const key = segments[i] as string;
    let next = node[key];
    if (next === null || typeof next !== 'object') {
      next = typeof segments[i + 1] === 'number' ? [] : {};
      node[key] = next;
    }
    node = next as Rec;
  }
  node[segments[last] as string] = value;
}

/** The object (or array) at `segments`, created when missing. */
function ensurePath(root: Rec, segments: readonly PathSegment[], asArray: boolean): Rec {
  let node: Rec = root;
  for (let i = 0; i < segments.length; i += 1) {
    const key = segments[i] as string;
    let next = node[key];
    if (next === null || typeof next !== 'object') {
      next = typeof segments[i + 1] === 'number' || (i === segments.length - 1 && asArray) ? [] : {};
      node[key] = next;
    }
    node = next as Rec;
  }
  return node;
}

function getPath(root: unknown, segments: readonly PathSegment[]): unknown {
  let node = root;
  for (const segment of segments) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Rec)[segment as string];
  }
  return node;
}
