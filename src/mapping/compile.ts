/**
 * The mapping compiler: a validated mapping file becomes a tree of small closures (readers,
 * converters, setters) built once, so that mapping a row interprets no YAML. Every field keeps
 * the source columns it reads, so that a problem at a request path can name them (tracing).
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { LineCounter, parseDocument } from 'yaml';
import type { z } from 'zod';
import { QuoteBatchError } from '../errors.js';
import { findUnknownEnumValues, KNOWN_VALUES, QuoteRequest, validateQuoteRequest } from '../partner/schemas.js';
import { buildProbe } from './_fast-validate.js';
import { generateFieldRunner, type FastText, type FieldRunner } from './_generate.js';
import {
  buildBoolean, buildDate, buildTimestamp, convertDecimal, convertDigits, convertInteger, FAIL, failure,
  FORMAT_TOKENS, compileZone, type Converter,
} from './_convert.js';
import { MappingProblems, type YamlPath } from './_problems.js';
import {
  elementOf, formatSegments, lookUpTarget, parseRequestPath, type PathSegment,
} from './_request-paths.js';
import { MappingFile, type ConversionType, type FieldSpec, type GroupSpec } from './_schema.js';
import { findClosest, quoteValue } from './_text.js';
import type { CompiledMapping, MappedRow, RowIssue } from './types.js';

type Rec = Record<string, unknown>;

const OMIT: unique symbol = Symbol('omit');
const DEFAULT_ROW_KEY_PATHS = ['tracking.click_id', 'channel.channel_lead_id'];
const DEFAULT_AGENT_ID_PATH = 'channel.agent_id';
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

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

// ---------------------------------------------------------------------------------------------
// Plans: what the compiler builds

/** Where a source reads from: a column of the row, or a path below the row or a group element. */
type Reader = (record: Rec, item: unknown) => unknown;

interface FieldPlan {
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
  /** Turns the raw source into the request value, OMIT, or FAIL (reason in `failure`). */
  produce: (raw: unknown, row: RowState) => unknown;
  /** The text steps of `produce`, for the generated code (undefined for literals and pass-through). */
  fast: FastText | undefined;
}

interface InstancePlan {
  fields: FieldPlan[];
  /** Fields whose target goes through an array index: set after the groups built the arrays. */
  lateFields: FieldPlan[];
  groups: GroupPlan[];
  trace: TraceEntry[];
  readKey: Reader;
  /** Generated equivalents of `runFields(fields)` and `runFields(lateFields)` (see _generate.ts). */
  runFields: FieldRunner<RowState>;
  runLateFields: FieldRunner<RowState>;
}

interface GroupPlan {
  target: readonly PathSegment[];
  targetText: string;
  /** Numbered groups: one instance per number. `each` groups: one instance for every element. */
  instances: InstancePlan[];
  each: { read: Reader; text: string; relative: boolean } | undefined;
}

interface TraceEntry {
  target: string;
  sources: readonly string[];
  relative: boolean;
  kind: 'column' | 'field';
  isPass: boolean;
}

interface RowState {
  rowNumber: number;
  errors: RowIssue[];
  warnings: RowIssue[];
  /** Which plan built each group element (for tracing schema issues to columns). */
  // A list, not a Map: it is read only when a row has a problem, and keying a Map by fresh objects
  // costs an identity hash per element on every row.
  elements: { element: object; instance: InstancePlan; srcPrefix: string }[];
  /** Set while a field is produced, so map misses can warn with the right path. */
  currentPath: string;
  currentColumns: readonly string[];
  currentKind: 'column' | 'field';
  /** Run the interpreted reference (`runFields`) instead of the generated code (tests compare the two). */
  reference: boolean;
}

// ---------------------------------------------------------------------------------------------
// Compilation

interface Scope {
  /** Index variables of the enclosing numbered groups and their values. */
  vars: ReadonlyMap<string, number>;
  /** Inside an `each` group: sources read the element. */
  inEach: boolean;
  /** Schema of the instance's object (the QuoteRequest at the top). */
  schema: z.ZodType | undefined;
  /** Request path of the instance, for messages (`application.drivers[]`). */
  label: string;
}

class Compiler {
  readonly columns = new Map<string, number>();
  readonly nestedPaths = new Set<string>();
  usesEach = false;
  /** A pass-through object may hold enumerated words: scan the whole request for them. */
  passCoversEnums = false;

  constructor(readonly problems: MappingProblems, readonly lineOf: (path: YamlPath) => number) {}

  compileInstance(
    fields: Record<string, FieldSpec>,
    groups: readonly GroupSpec[],
    key: string | undefined,
    scope: Scope,
    at: YamlPath,
  ): InstancePlan {
    const plans: FieldPlan[] = [];
    const seen = new Set<string>();
    for (const [targetText, spec] of Object.entries(fields)) {
      const fieldAt = [...at, 'fields', targetText];
      let target: PathSegment[];
      try {
        target = parseRequestPath(targetText);
      } catch (error) {
        this.problems.add(fieldAt, (error as Error).message, undefined, true);
        continue;
      }
      const normalized = formatSegments(target);
      if (seen.has(normalized)) this.problems.add(fieldAt, `"${normalized}" is mapped twice`, undefined, true);
      seen.add(normalized);
      const lookup = scope.schema === undefined ? undefined : lookUpTarget(target, scope.schema);
      if (lookup !== undefined && !lookup.ok) {
        const close = lookup.segment === undefined ? undefined : findClosest(lookup.segment, lookup.candidates);
        const hint = close !== undefined ? `did you mean "${close}"?`
          : lookup.candidates.length > 0 ? `members there: ${lookup.candidates.join(', ')}` : undefined;
        this.problems.add(fieldAt, `not a QuoteRequest path: ${lookup.message}`, hint, true);
        continue;
      }
      const plan = this.compileField(spec, scope, fieldAt, normalized, target, lookup?.ok === true ? lookup.kind : 'any');
      if (plan !== undefined) plans.push(plan);
    }
    // Whole objects first, so a pass-through object receives the fields mapped inside it;
    // otherwise the file's order, which is the order a user reads in `preview`.
    plans.sort((a, b) => (a.isPass === b.isPass ? 0 : a.isPass ? -1 : 1));
    const groupPlans: GroupPlan[] = [];
    groups.forEach((group, i) => {
      const plan = this.compileGroup(group, scope, [...at, 'groups', i]);
      if (plan !== undefined) groupPlans.push(plan);
    });
    const trace: TraceEntry[] = plans.map((p) => ({
      target: p.targetText, sources: p.sources, relative: p.relative, kind: p.kind, isPass: p.isPass,
    }));
    for (const group of groupPlans) {
      const sources = [...new Set(group.instances.flatMap((inst) => inst.trace.filter((t) => t.target === '#key').flatMap((t) => t.sources)))];
      trace.push({ target: group.targetText, sources, relative: scope.inEach, kind: this.usesEach ? 'field' : 'column', isPass: false });
    }
    let readKey: Reader = () => 'present';
    if (key !== undefined) {
      const keySpec: FieldSpec = scope.inEach ? { path: key } : { column: key };
      const keyPlan = this.compileSource(keySpec, scope, [...at, 'key']);
      if (keyPlan !== undefined) {
        readKey = keyPlan.read;
        trace.push({ target: '#key', sources: keyPlan.sources, relative: keyPlan.relative, kind: keyPlan.kind, isPass: false });
      }
    }
    const fieldsNow = plans.filter((p) => !p.target.some((s) => typeof s === 'number'));
    const lateFields = plans.filter((p) => p.target.some((s) => typeof s === 'number'));
    numberParents(fieldsNow);
    numberParents(lateFields);
    return {
      fields: fieldsNow,
      lateFields,
      groups: groupPlans,
      trace,
      readKey,
      runFields: buildFieldRunner(fieldsNow),
      runLateFields: buildFieldRunner(lateFields),
    };
  }

  compileGroup(group: GroupSpec, scope: Scope, at: YamlPath): GroupPlan | undefined {
    let target: PathSegment[];
    try {
      target = parseRequestPath(group.target);
    } catch (error) {
      this.problems.add([...at, 'target'], (error as Error).message);
      return undefined;
    }
    let elementSchema: z.ZodType | undefined;
    if (scope.schema !== undefined) {
      const lookup = lookUpTarget(target, scope.schema);
      if (!lookup.ok) {
        const close = lookup.segment === undefined ? undefined : findClosest(lookup.segment, lookup.candidates);
        this.problems.add([...at, 'target'], `not a QuoteRequest path: ${lookup.message}`, close === undefined ? undefined : `did you mean "${close}"?`);
        return undefined;
      }
      if (lookup.kind !== 'array' && lookup.kind !== 'any') {
        this.problems.add([...at, 'target'], `${group.target} is not an array in the QuoteRequest`, 'a group fills an array such as application.drivers, application.vehicles or incident_history');
        return undefined;
      }
      elementSchema = elementOf(lookup.schema);
    }
    const targetText = formatSegments(target);
    const label = `${scope.label === '' ? '' : `${scope.label}.`}${targetText}[]`;
    const numbered = group.index !== undefined || group.count !== undefined;
    if (numbered && group.each !== undefined) {
      this.problems.add([...at, 'each'], 'a group is either numbered (index/count) or repeats over a source array (each), not both');
      return undefined;
    }
    if (!numbered && group.each === undefined) {
      this.problems.add([...at, 'target'], 'a group needs `index:` and `count:` (numbered columns) or `each:` (an NDJSON array)',
        'for driver1_* … driver4_* columns write `index: n` and `count: 4`', true);
      return undefined;
    }
    const groups = group.groups ?? [];
    if (numbered) {
      if (group.index === undefined || group.count === undefined) {
        this.problems.add(at, 'a numbered group needs both `index:` and `count:`', 'e.g. `index: n` and `count: 4` for driver1_* … driver4_*');
        return undefined;
      }
      if (scope.vars.has(group.index)) {
        this.problems.add([...at, 'index'], `index "${group.index}" is already used by an enclosing group`, 'pick another letter, e.g. m');
        return undefined;
      }
      if (!group.key.includes(`{${group.index}}`)) {
        this.problems.add([...at, 'key'], `the key "${group.key}" does not contain {${group.index}}: every group would read the same column`,
          `e.g. key: driver{${group.index}}_first_name`);
        return undefined;
      }
      const instances: InstancePlan[] = [];
      const start = group.start ?? 1;
      for (let n = start; n < start + group.count; n += 1) {
        const vars = new Map(scope.vars).set(group.index, n);
        const problemsBefore = this.problems.count;
        instances.push(this.compileInstance(group.fields, groups, group.key, { vars, inEach: scope.inEach, schema: elementSchema, label }, at));
        // One mistake in the group's fields would otherwise be reported once per number.
        if (this.problems.count > problemsBefore) break;
      }
      return { target, targetText, instances, each: undefined };
    }
    const eachText = group.each ?? '';
    const eachReader = this.compileReader(eachText, scope, [...at, 'each']);
    if (eachReader === undefined) return undefined;
    this.usesEach = true;
    const instance = this.compileInstance(group.fields, groups, group.key, { vars: scope.vars, inEach: true, schema: elementSchema, label }, at);
    return { target, targetText, instances: [instance], each: { read: eachReader.read, text: eachReader.text, relative: eachReader.relative } };
  }

  /** Replaces `{n}` of the enclosing groups; reports any `{x}` left over in a name. */
  expand(text: string, scope: Scope, at: YamlPath, isTemplate = false): string | undefined {
    let out = text;
    for (const [name, value] of scope.vars) out = out.split(`{${name}}`).join(String(value));
    if (!isTemplate && /[{}]/.test(out)) {
      const names = [...scope.vars.keys()];
      this.problems.add(at, `"${text}" has an unknown {…} index`,
        names.length === 0 ? '{n} only works inside a numbered group (index: n)' : `the enclosing groups define ${names.map((n) => `{${n}}`).join(', ')}`);
      return undefined;
    }
    return out;
  }

  compileReader(pathText: string, scope: Scope, at: YamlPath): { read: Reader; text: string; relative: boolean } | undefined {
    const expanded = this.expand(pathText, scope, at);
    if (expanded === undefined) return undefined;
    const fromRoot = expanded.startsWith('$.');
    const text = fromRoot ? expanded.slice(2) : expanded;
    let segments: PathSegment[];
    try {
      segments = parseRequestPath(text);
    } catch (error) {
      this.problems.add(at, (error as Error).message.replace('application.drivers[0].dob', 'contact.address.zip'));
      return undefined;
    }
    if (segments.length > 1) this.nestedPaths.add(text);
    const relative = scope.inEach && !fromRoot;
    return { read: buildPathReader(segments, relative), text, relative };
  }

  compileSource(spec: FieldSpec, scope: Scope, at: YamlPath): Pick<FieldPlan, 'read' | 'sources' | 'relative' | 'kind'> & { isPass: boolean; isLiteral: boolean; column?: string } | undefined {
    const given = (['column', 'literal', 'template', 'path', 'pass'] as const).filter((key) => spec[key] !== undefined);
    if (given.length !== 1) {
      this.problems.add(at, given.length === 0
        ? 'no source: give one of column, literal, template, path or pass'
        : `more than one source (${given.join(', ')}): give exactly one`,
      given.length === 0 ? 'e.g. `{ column: first_name }`, or just the column name' : 'use `default:` for a fallback value');
      return undefined;
    }
    if (spec.column !== undefined) {
      const column = this.expand(spec.column, scope, [...at, 'column']);
      if (column === undefined) return undefined;
      if (scope.inEach) {
        return { read: (_record, item) => (item as Rec | undefined)?.[column], sources: [column], relative: true, kind: 'field', isPass: false, isLiteral: false };
      }
      this.noteColumn(column, [...at, 'column']);
      return { read: (record) => record[column], column, sources: [column], relative: false, kind: 'column', isPass: false, isLiteral: false };
    }
    if (spec.literal !== undefined) {
      const literal = spec.literal;
      const read: Reader = literal !== null && typeof literal === 'object' ? () => structuredClone(literal) : () => literal;
      return { read, sources: [], relative: false, kind: 'column', isPass: false, isLiteral: true };
    }
    if (spec.template !== undefined) {
      const text = this.expand(spec.template, scope, [...at, 'template'], true);
      if (text === undefined) return undefined;
      const parts = text.split(/\{([^{}]+)\}/);
      const names = parts.filter((_, i) => i % 2 === 1);
      if (names.length === 0) {
        this.problems.add([...at, 'template'], `template "${spec.template}" names no column`, 'write columns in braces: "{first_name} {last_name}"; for a constant use literal:');
        return undefined;
      }
      const readers: Reader[] = names.map((name) => buildNameReader(name, scope.inEach));
      if (!scope.inEach) for (const name of names) this.noteColumn(name, [...at, 'template']);
      const collapse = spec.trim !== false;
      const read: Reader = (record, item) => {
        let out = '';
        let any = false;
        for (let i = 0; i < parts.length; i += 1) {
          if (i % 2 === 0) out += parts[i];
          else {
            const value = readers[(i - 1) / 2]?.(record, item);
            if (value === undefined || value === null) continue;
            const piece = typeof value === 'string' ? value.trim() : String(value);
            if (piece !== '') any = true;
            out += piece;
          }
        }
        if (!any) return undefined;
        return collapse ? out.replace(/\s{2,}/g, ' ').trim() : out;
      };
      return { read, sources: names, relative: scope.inEach, kind: scope.inEach ? 'field' : 'column', isPass: false, isLiteral: false };
    }
    const pathText = spec.path ?? spec.pass ?? '';
    const reader = this.compileReader(pathText, scope, [...at, spec.path !== undefined ? 'path' : 'pass']);
    if (reader === undefined) return undefined;
    return { read: reader.read, sources: [reader.text], relative: reader.relative, kind: 'field', isPass: spec.pass !== undefined, isLiteral: false };
  }

  noteColumn(column: string, at: YamlPath): void {
    if (!this.columns.has(column)) this.columns.set(column, this.lineOf(at));
  }

  compileField(spec: FieldSpec, scope: Scope, at: YamlPath, targetText: string, target: PathSegment[], kind: string): FieldPlan | undefined {
    const source = this.compileSource(spec, scope, at);
    if (source === undefined) return undefined;
    const produced = this.compileProduce(spec, source, at, kind, targetText, scope);
    if (produced === undefined) return undefined;
    const { produce, fast } = produced;
    const warns = spec.map !== undefined && spec.on_miss !== undefined && spec.on_miss !== 'error';
    const pattern = `${scope.label === '' ? '' : `${scope.label}.`}${targetText}`.replace(/\[\d+\]/g, '[]');
    const knownList = KNOWN_VALUES[pattern];
    if (source.isPass && Object.keys(KNOWN_VALUES).some((p) => p.startsWith(`${pattern}.`) || p.startsWith(`${pattern}[`))) {
      this.passCoversEnums = true;
    }
    return {
      ...source, column: source.column, target, targetText, produce, fast, warns, parent: 0, parentPath: target.slice(0, -1), leaf: String(target[target.length - 1]),
      known: knownList === undefined ? undefined : new Set(knownList),
      knownText: knownList === undefined ? '' : knownList.join(', '),
    };
  }

  /** Builds the value pipeline: empty check → case → value table → conversion. */
  compileProduce(
    spec: FieldSpec,
    source: { isPass: boolean; isLiteral: boolean; kind: 'column' | 'field' },
    at: YamlPath,
    targetKind: string,
    targetText: string,
    scope: Scope,
  ): Pick<FieldPlan, 'produce' | 'fast'> | undefined {
    const conversions = (['trim', 'case', 'map', 'on_miss', 'type', 'format', 'zone', 'true', 'false'] as const).filter((k) => spec[k] !== undefined);
    if ((source.isPass || source.isLiteral) && conversions.length > 0) {
      this.problems.add([...at, conversions[0] ?? 'type'], `${source.isPass ? 'pass' : 'literal'} takes no conversion (${conversions.join(', ')})`,
        source.isPass ? 'use path: to convert a single value' : 'write the literal exactly as it should be sent');
      return undefined;
    }
    const type: ConversionType | undefined = spec.type;
    let convert: Converter | undefined;
    try {
      convert = buildConverter(spec);
    } catch (error) {
      this.problems.add([...at, spec.zone !== undefined && /zone/.test((error as Error).message) ? 'zone' : 'format'], (error as Error).message,
        /zone/.test((error as Error).message) ? 'use UTC, an offset such as -05:00, or an IANA name such as America/New_York' : `tokens: ${FORMAT_TOKENS}; or iso, epoch, epoch_ms for timestamps`);
      return undefined;
    }
    if ((spec.format !== undefined || spec.zone !== undefined) && type !== 'date' && type !== 'timestamp') {
      this.problems.add([...at, spec.format !== undefined ? 'format' : 'zone'], '`format`/`zone` only apply to `type: date` or `type: timestamp`', 'add `type: date` (or timestamp)', true);
      return undefined;
    }
    if (type === 'date' && spec.format === undefined) {
      this.problems.add([...at, 'type'], 'a date needs its source format', 'add e.g. `format: MM/DD/YYYY` (or `format: iso` for YYYY-MM-DD)');
      return undefined;
    }
    if (spec.zone !== undefined && type !== 'timestamp') {
      this.problems.add([...at, 'zone'], '`zone` only applies to `type: timestamp`', undefined, true);
      return undefined;
    }
    if ((spec.true !== undefined || spec.false !== undefined) && type !== 'boolean') {
      this.problems.add([...at, spec.true !== undefined ? 'true' : 'false'], '`true`/`false` word lists only apply to `type: boolean`', 'add `type: boolean`', true);
      return undefined;
    }
    if (spec.on_miss !== undefined && spec.map === undefined) {
      this.problems.add([...at, 'on_miss'], '`on_miss` only applies with a value table (`map:`)', undefined, true);
      return undefined;
    }
    if (spec.on_miss === 'default' && spec.default === undefined) {
      this.problems.add([...at, 'on_miss'], '`on_miss: default` needs a `default:` value', 'add e.g. `default: other`');
      return undefined;
    }
    // The request type decides what the text must become: catch the missing conversion here,
    // not as the same schema error on every row.
    if (!source.isPass && !source.isLiteral && source.kind === 'column') {
      const mapValues = spec.map === undefined ? [] : Object.values(spec.map).filter((v) => v !== null);
      const mapGives = (t: string): boolean => mapValues.length > 0 && mapValues.every((v) => typeof v === t);
      if (targetKind === 'number' && type !== 'integer' && type !== 'decimal' && !mapGives('number')) {
        this.problems.add(at, `${scope.label === '' ? '' : `${scope.label}.`}${targetText} is a number in the QuoteRequest`, 'add `type: integer` or `type: decimal`', true);
        return undefined;
      }
      if (targetKind === 'boolean' && type !== 'boolean' && !mapGives('boolean')) {
        this.problems.add(at, `${scope.label === '' ? '' : `${scope.label}.`}${targetText} is true/false in the QuoteRequest`, 'add `type: boolean` (reads Y/N, yes/no, 1/0, true/false)', true);
        return undefined;
      }
      if (targetKind === 'string' && (type === 'integer' || type === 'decimal' || type === 'boolean')) {
        this.problems.add([...at, 'type'], `${scope.label === '' ? '' : `${scope.label}.`}${targetText} is text in the QuoteRequest: type ${type} would send a ${type === 'boolean' ? 'boolean' : 'number'}`,
          type === 'boolean' ? 'remove `type:` or use a value table' : 'use `type: digits` for numeric text, or remove `type:`');
        return undefined;
      }
      if ((targetKind === 'object' || targetKind === 'array')) {
        this.problems.add(at, `${targetText} is ${targetKind === 'array' ? 'a list' : 'an object'} in the QuoteRequest`, targetKind === 'array' ? 'fill it with a group (groups:)' : `map its members (e.g. ${targetText}.<member>) or copy a whole object with pass:`, true);
        return undefined;
      }
    }
    if (source.isPass || source.isLiteral) {
      const pass = source.isPass;
      const produce: FieldPlan['produce'] = (raw) => {
        if (raw === undefined || raw === null || raw === '') return OMIT;
        if (pass && typeof raw === 'object') return Array.isArray(raw) ? [...(raw as unknown[])] : { ...(raw as Rec) };
        return raw;
      };
      return { produce, fast: undefined };
    }

    const trim = spec.trim !== false;
    const upper = spec.case === 'upper';
    const lower = spec.case === 'lower';
    const hasDefault = spec.default !== undefined;
    const fallback = spec.default;
    const required = spec.required === true;
    const onMiss = spec.on_miss ?? 'error';
    let table: Map<string, unknown> | undefined;
    let known = '';
    if (spec.map !== undefined) {
      table = new Map();
      for (const [from, to] of Object.entries(spec.map)) table.set(from.trim().toLowerCase(), to);
      const keys = Object.keys(spec.map);
      known = keys.length > 12 ? `${keys.slice(0, 12).join(', ')}, …` : keys.join(', ');
    }
    const toText = (value: number | boolean): string => String(value);

    const whenEmpty = (): unknown => {
      if (hasDefault) return fallback;
      if (required) {
        failure.message = 'required value is missing';
        return FAIL;
      }
      return OMIT;
    };

    const fromText = (input: string, row: RowState): unknown => {
      let text = input;
      if (upper) text = text.toUpperCase();
      else if (lower) text = text.toLowerCase();
      if (table !== undefined) {
        const mapped = table.get(text.toLowerCase());
        if (mapped === undefined) {
          if (onMiss === 'error') {
            failure.message = `expected a code of the value table (${known})`;
            return FAIL;
          }
          const message = `${quoteValue(text)} is not in the value table (knows ${known})`;
          if (onMiss === 'keep') {
            row.warnings.push({ path: row.currentPath, message: `${message}; sent as is`, columns: row.currentColumns, sourceKind: row.currentKind });
          } else if (onMiss === 'default') {
            row.warnings.push({ path: row.currentPath, message: `${message}; sent the default ${quoteValue(fallback)}`, columns: row.currentColumns, sourceKind: row.currentKind });
            return fallback;
          } else {
            row.warnings.push({ path: row.currentPath, message: `${message}; left out`, columns: row.currentColumns, sourceKind: row.currentKind });
            return whenEmpty();
          }
        } else {
          if (typeof mapped !== 'string') return mapped;
          text = mapped;
        }
      }
      return convert === undefined ? text : convert(text);
    };

    // The same steps as fromText below, for the generated code (which calls `produce` for the rest).
    const fast: FastText = {
      trim, upper, lower, table, convert,
      empty: hasDefault ? 'default' : required ? 'reference' : 'omit',
      fallback,
    };
    const produce: FieldPlan['produce'] = (raw, row) => {
      if (typeof raw === 'string') {
        const text = trim ? raw.trim() : raw;
        if (text === '') return whenEmpty();
        return fromText(text, row);
      }
      if (raw === undefined || raw === null) return whenEmpty();
      if (typeof raw === 'number' || typeof raw === 'boolean') {
        // NDJSON values that already have a JSON type: keep them unless a conversion is asked for.
        if (table !== undefined) return fromText(toText(raw), row);
        if (type === undefined) return raw;
        if (typeof raw === 'number' && (type === 'decimal' || (type === 'integer' && Number.isInteger(raw)))) return raw;
        if (typeof raw === 'boolean' && type === 'boolean') return raw;
        if (type === 'string') return toText(raw);
        return fromText(toText(raw), row);
      }
      failure.message = `expected a single value, got ${Array.isArray(raw) ? 'a list' : 'an object'}`;
      return FAIL;
    };
    return { produce, fast };
  }
}

/** Fields sharing a parent object share its slot, so a row finds each parent object once. */
function numberParents(fields: FieldPlan[]): void {
  const ids = new Map<string, number>();
  for (const field of fields) {
    const key = formatSegments(field.parentPath);
    let id = ids.get(key);
    if (id === undefined) {
      id = ids.size;
      ids.set(key, id);
    }
    field.parent = id;
  }
}

function buildConverter(spec: FieldSpec): Converter | undefined {
  switch (spec.type) {
    case undefined:
    case 'string':
      return undefined;
    case 'digits':
      return convertDigits;
    case 'integer':
      return convertInteger;
    case 'decimal':
      return convertDecimal;
    case 'boolean':
      return buildBoolean(spec.true, spec.false);
    case 'date':
      return buildDate(spec.format ?? 'iso');
    case 'timestamp':
      compileZone(spec.zone);
      return buildTimestamp(spec.format ?? 'iso', spec.zone);
  }
}

function buildPathReader(segments: readonly PathSegment[], relative: boolean): Reader {
  const first = segments[0] ?? '';
  if (segments.length === 1) {
    return relative ? (_record, item) => (item as Rec | undefined)?.[first as string] : (record) => record[first as string];
  }
  return (record, item) => {
    let node: unknown = relative ? item : record;
    for (const segment of segments) {
      if (node === null || typeof node !== 'object') return undefined;
      node = (node as Rec)[segment as string];
    }
    return node;
  };
}

/** A template reference: the key of that exact name, else (NDJSON) the path it spells. */
function buildNameReader(name: string, relative: boolean): Reader {
  let segments: PathSegment[] | undefined;
  if (/[.[]/.test(name)) {
    try {
      segments = parseRequestPath(name);
    } catch {
      segments = undefined;
    }
  }
  const byPath = segments === undefined ? undefined : buildPathReader(segments, relative);
  return (record, item) => {
    const holder = (relative ? item : record) as Rec | undefined;
    const value = holder?.[name];
    return value === undefined && byPath !== undefined ? byPath(record, item) : value;
  };
}

function setPath(root: Rec, segments: readonly PathSegment[], value: unknown): void {
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

// ---------------------------------------------------------------------------------------------
// Running the plan on a row

function runInstance(
  instance: InstancePlan, out: Rec, record: Rec, item: unknown, row: RowState, base: string, srcPrefix: string,
): void {
  if (row.reference) runFields(instance.fields, out, record, item, row, base, srcPrefix);
  else instance.runFields(out, record, item, row, base, srcPrefix);
  for (const group of instance.groups) runGroup(group, out, record, item, row, base, srcPrefix);
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
    const value = produceField(field, raw, row, base, srcPrefix);
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

function produceField(field: FieldPlan, raw: unknown, row: RowState, base: string, srcPrefix: string): unknown {
  if (field.warns) {
    // A value-table miss warns with the field's path: the row must know it first.
    row.currentPath = base === '' ? field.targetText : `${base}.${field.targetText}`;
    row.currentColumns = prefixSources(field.sources, field.relative, srcPrefix);
    row.currentKind = field.kind;
  }
  return field.produce(raw, row);
}

function reportFailure(field: FieldPlan, raw: unknown, row: RowState, base: string, srcPrefix: string): void {
  const issue: RowIssue = {
    path: base === '' ? field.targetText : `${base}.${field.targetText}`,
    message: failure.message,
    columns: prefixSources(field.sources, field.relative, srcPrefix),
    sourceKind: field.kind,
  };
  if (raw !== undefined && raw !== null && typeof raw !== 'object' && (typeof raw !== 'string' || raw.trim() !== '')) issue.received = raw;
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
function buildFieldRunner(fields: readonly FieldPlan[]): FieldRunner<RowState> {
  const field = (i: number): FieldPlan => fields[i] as FieldPlan;
  return generateFieldRunner<RowState>(
    fields.map((f) => ({
      column: f.column, read: f.read, fast: f.fast, parent: f.parent, parentIsOut: f.parentPath.length === 0, leaf: f.leaf, known: f.known,
    })),
    {
      omit: OMIT,
      fail: FAIL,
      produce: (i, raw, row, base, srcPrefix) => produceField(field(i), raw, row, base, srcPrefix),
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
      if (isEmpty(instance.readKey(record, item))) continue;
      list ??= [];
      const element: Rec = {};
      row.elements.push({ element, instance, srcPrefix });
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
        if (isEmpty(instance.readKey(record, element))) continue;
        list ??= [];
        const built: Rec = {};
        const elementPrefix = `${sourceBase}[${j}]`;
        row.elements.push({ element: built, instance, srcPrefix: elementPrefix });
        runInstance(instance, built, record, element, row, `${prefix}[${list.length}]`, elementPrefix);
        list.push(built);
      }
    } else if (source !== undefined && source !== null && source !== '') {
      row.errors.push({ path: prefix, message: `expected a list, got ${quoteValue(source)}`, columns: [group.each.text], sourceKind: 'field' });
    }
  }
  if (list !== undefined) setPath(out, group.target, list);
}

function isEmpty(value: unknown): boolean {
  return value === undefined || value === null || (typeof value === 'string' && value.trim() === '');
}

function prefixSources(sources: readonly string[], relative: boolean, srcPrefix: string): readonly string[] {
  if (!relative || srcPrefix === '') return sources;
  return sources.map((source) => `${srcPrefix}.${source}`);
}

/** The source columns behind `path` in this row's request (empty when none is known). */
function traceColumns(root: InstancePlan, request: Rec, path: string, row: RowState): { columns: readonly string[]; kind: 'column' | 'field' } {
  let segments: PathSegment[] = [];
  try {
    segments = path === '' ? [] : parseRequestPath(path);
  } catch {
    return { columns: [], kind: 'column' };
  }
  const candidates: { instance: InstancePlan; from: number; srcPrefix: string }[] = [{ instance: root, from: 0, srcPrefix: '' }];
  let node: unknown = request;
  for (let i = 0; i < segments.length; i += 1) {
    if (node === null || typeof node !== 'object') break;
    node = (node as Rec)[segments[i] as string];
    if (node !== null && typeof node === 'object') {
      const owner = row.elements.find((e) => e.element === node);
      if (owner !== undefined) candidates.push({ instance: owner.instance, from: i + 1, srcPrefix: owner.srcPrefix });
    }
  }
  for (let c = candidates.length - 1; c >= 0; c -= 1) {
    const candidate = candidates[c];
    if (candidate === undefined) continue;
    const rel = formatSegments(segments.slice(candidate.from));
    const found: string[] = [];
    let kind: 'column' | 'field' = 'column';
    for (const entry of candidate.instance.trace) {
      if (entry.target === '#key') continue;
      const under = rel === '' || entry.target === rel || entry.target.startsWith(`${rel}.`) || entry.target.startsWith(`${rel}[`);
      const inside = entry.isPass && (rel.startsWith(`${entry.target}.`) || rel.startsWith(`${entry.target}[`));
      if (!under && !inside) continue;
      kind = entry.kind;
      const sources = prefixSources(entry.sources, entry.relative, candidate.srcPrefix);
      for (const source of sources) found.push(inside ? `${source}${rel.slice(entry.target.length)}` : source);
    }
    if (found.length > 0) return { columns: [...new Set(found)], kind };
  }
  return { columns: [], kind: 'column' };
}

function overlaps(path: string, other: string): boolean {
  return path === other || path.startsWith(`${other}.`) || path.startsWith(`${other}[`) || other.startsWith(`${path}.`) || other.startsWith(`${path}[`);
}

// ---------------------------------------------------------------------------------------------

function compileText(text: string, fileName: string, sha256: string, reference = false): CompiledMapping {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: true, uniqueKeys: true });
  const problems = new MappingProblems(fileName, doc, lineCounter);
  for (const error of doc.errors) {
    const pos = error.linePos?.[0] ?? { line: 1, col: 1 };
    const message = (error.message.split('\n')[0] ?? error.message).replace(/ at line \d+, column \d+:?$/, '');
    const hint = error.code === 'DUPLICATE_KEY' ? 'each request path is mapped once: remove or rename one of them' : 'check the indentation and quoting on that line';
    problems.addAt(pos.line, pos.col, `YAML: ${message}`, hint);
  }
  problems.throwIfAny();
  if (doc.contents === null) {
    throw new QuoteBatchError('E_MAPPING', `invalid mapping ${fileName}: the file is empty`, {
      hint: 'start from mappings/example-csv.yaml; see docs/mapping.md',
    });
  }
  const parsed = MappingFile.safeParse(doc.toJS({ maxAliasCount: 100 }));
  if (!parsed.success) {
    problems.addZodIssues(parsed.error.issues);
    problems.throwIfAny();
    // A zod issue the translator skipped should still stop the load.
    throw new QuoteBatchError('E_MAPPING', `invalid mapping ${fileName}: ${parsed.error.issues[0]?.message ?? 'unknown problem'}`);
  }
  const spec = parsed.data;
  const lineOf = (path: YamlPath): number => {
    // A shorthand (`tracking.click_id: click_id`) has no `column` node: use the nearest one.
    for (let depth = path.length; depth > 0; depth -= 1) {
      const node = doc.getIn(path.slice(0, depth), true) as { range?: [number, number, number] } | undefined;
      if (node?.range !== undefined) return lineCounter.linePos(node.range[0]).line;
    }
    return 0;
  };
  const compiler = new Compiler(problems, lineOf);
  const rootScope: Scope = { vars: new Map(), inEach: false, schema: undefined, label: '' };
  const root = compiler.compileInstance(spec.fields, spec.groups ?? [], undefined, { ...rootScope, schema: lookUpTargetRoot() }, []);

  // The agent e-mail and a row key given as a source are fields outside the request.
  let agentEmail: FieldPlan | undefined;
  if (spec.agent !== undefined) {
    agentEmail = compiler.compileField(spec.agent.email, rootScope, ['agent', 'email'], 'agent.email', ['agent', 'email'], 'string');
  }
  let agentIdPath = parseRequestPath(DEFAULT_AGENT_ID_PATH);
  if (spec.agent?.id_path !== undefined) {
    try {
      agentIdPath = parseRequestPath(spec.agent.id_path);
      const lookup = lookUpTarget(agentIdPath);
      if (!lookup.ok) problems.add(['agent', 'id_path'], `not a QuoteRequest path: ${lookup.message}`, `the partner expects ${DEFAULT_AGENT_ID_PATH}`);
    } catch (error) {
      problems.add(['agent', 'id_path'], (error as Error).message);
    }
  }
  let rowKeyPaths: PathSegment[][] = DEFAULT_ROW_KEY_PATHS.map((p) => parseRequestPath(p));
  let rowKeySource: FieldPlan | undefined;
  if (spec.row_key !== undefined) {
    const { paths, ...source } = spec.row_key;
    if (paths !== undefined) {
      rowKeyPaths = [];
      paths.forEach((p, i) => {
        try {
          const segments = parseRequestPath(p);
          const lookup = lookUpTarget(segments);
          if (!lookup.ok) problems.add(['row_key', i], `not a QuoteRequest path: ${lookup.message}`, 'name a request path such as tracking.click_id, or a column with `row_key: { column: lead_id }`');
          rowKeyPaths.push(segments);
        } catch (error) {
          problems.add(['row_key'], (error as Error).message);
        }
      });
    } else {
      rowKeySource = compiler.compileField(source, rootScope, ['row_key'], 'row_key', ['row_key'], 'string');
    }
  }
  problems.throwIfAny();

  const passCoversEnums = compiler.passCoversEnums;
  const sourceColumns = [...compiler.columns.keys()];
  const columnLines = compiler.columns;
  const nestedPaths = [...compiler.nestedPaths];
  const usesNested = compiler.usesEach || nestedPaths.length > 0;
  const input: CompiledMapping['input'] = {};
  if (spec.input?.format !== undefined) input.format = spec.input.format;
  if (spec.input?.delimiter !== undefined) input.delimiter = spec.input.delimiter;

  const scratch = (rowNumber: number): RowState => ({
    rowNumber, errors: [], warnings: [], elements: [], currentPath: '', currentColumns: [], currentKind: 'column', reference,
  });

  function readSide(field: FieldPlan | undefined, record: Rec, row: RowState): unknown {
    if (field === undefined) return undefined;
    row.currentPath = field.targetText;
    row.currentColumns = field.sources;
    row.currentKind = field.kind;
    const raw = field.read(record, undefined);
    const value = field.produce(raw, row);
    if (value === FAIL) {
      const issue: RowIssue = { path: field.targetText, message: failure.message, columns: field.sources, sourceKind: field.kind };
      if (typeof raw === 'string' && raw !== '') issue.received = raw;
      row.errors.push(issue);
      return undefined;
    }
    return value === OMIT ? undefined : value;
  }

  return {
    path: fileName,
    sha256,
    input,
    sourceColumns,
    checkColumns(header) {
      const have = new Set(header);
      const missing = sourceColumns.filter((column) => !have.has(column));
      const lines: string[] = [];
      let hint: string | undefined;
      for (const column of missing.slice(0, 10)) {
        const close = findClosest(column, header);
        hint ??= close === undefined ? undefined : `did you mean "${close}" for "${column}"?`;
        const line = columnLines.get(column) ?? 0;
        lines.push(`${fileName}${line > 0 ? `:${line}` : ''}: the input has no column "${column}"${close === undefined ? '' : ` (did you mean "${close}"?)`}`);
      }
      if (missing.length > 10) lines.push(`... and ${missing.length - 10} more`);
      // One header column holding another separator: the file is not comma-separated.
      const separator = header.length === 1 ? [';', '\t', '|'].find((c) => header[0]?.includes(c)) : undefined;
      if (separator !== undefined) {
        hint = `the header is one column containing ${JSON.stringify(separator)}: add \`input: { delimiter: ${JSON.stringify(separator)} }\` to the mapping (docs/mapping.md, "Input hints")`;
      }
      if (missing.length > 0) {
        throw new QuoteBatchError('E_MAPPING', `the mapping names ${missing.length} column(s) the input does not have:\n  ${lines.join('\n  ')}`, {
          hint: hint ?? `the input's columns are: ${header.slice(0, 12).join(', ')}${header.length > 12 ? ', …' : ''}`,
        });
      }
      if (usesNested) {
        throw new QuoteBatchError('E_MAPPING', `${fileName} reads nested NDJSON paths (${nestedPaths[0] ?? 'each:'}), but the input is a flat CSV file`, {
          hint: 'use a mapping written for CSV columns, or give an .ndjson input',
        });
      }
    },
    mapRow(record, rowNumber) {
      const row = scratch(rowNumber);
      const request: Rec = {};
      runInstance(root, request, record, undefined, row, '', '');
      const conversionErrors = row.errors.length;
      const agentRaw = readSide(agentEmail, record, row);
      let email: string | null = null;
      if (agentRaw !== undefined && agentRaw !== null) {
        email = String(agentRaw).trim().toLowerCase();
        if (!EMAIL.test(email)) {
          row.errors.push({ path: 'agent.email', message: 'expected an e-mail address', columns: agentEmail?.sources ?? [], sourceKind: agentEmail?.kind ?? 'column', received: agentRaw });
        }
      }
      let rowKey: string | undefined;
      if (rowKeySource !== undefined) {
        const key = readSide(rowKeySource, record, row);
        if (key !== undefined && key !== null && String(key) !== '') rowKey = String(key);
      } else {
        for (const segments of rowKeyPaths) {
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
        const { columns, kind } = traceColumns(root, request, issue.path, row);
        const rowIssue: RowIssue = { path: issue.path, message: issue.message, columns, sourceKind: kind };
        if (issue.received !== undefined) rowIssue.received = issue.received;
        row.errors.push(rowIssue);
      }
      const enumWarnings = passCoversEnums ? findUnknownEnumValues(request) : [];
      const warned = new Set(enumWarnings.length === 0 ? [] : row.warnings.map((w) => w.path));
      // Mapped words were checked field by field; only whole copied objects need a scan.
      for (const warning of enumWarnings) {
        if (warned.has(warning.path)) continue;
        const { columns, kind } = traceColumns(root, request, warning.path, row);
        row.warnings.push({ path: warning.path, message: warning.message, columns, sourceKind: kind, received: warning.value });
      }
      const result: MappedRow = {
        rowNumber,
        request,
        agentEmail: email === '' ? null : email,
        rowKey: rowKey ?? `row-${rowNumber}`,
        errors: row.errors,
        warnings: row.warnings,
      };
      return result;
    },
    setAgentId(request, agentId) {
      setPath(request, agentIdPath, agentId);
    },
  };
}

/** zod's answer for a valid request, found quicker (see _fast-validate.ts). */
const isValidRequest = buildProbe(QuoteRequest);

function lookUpTargetRoot(): z.ZodType {
  // The QuoteRequest itself: lookUpTarget's default root, named here for the top-level scope.
  const probe = lookUpTarget([]);
  return (probe.ok ? probe.schema : undefined) as z.ZodType;
}
