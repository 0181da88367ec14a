/**
 * From a validated mapping file to a plan (`_plan.ts`): request paths checked against the
 * QuoteRequest, sources turned into readers, numbered groups expanded (`{n}` → 1…N), each field's
 * value steps built (`_produce.ts`). Mistakes are collected with their YAML line, not thrown one
 * by one, so that a user sees them all at once.
 */
import type { z } from 'zod';
import { KNOWN_VALUES } from '../partner/known-words.js';
import { buildFilledSources, isEmptyValue, probeOf } from './_left-out.js';
import { compileZone } from './_zones.js';
import { compileProduce, type MappingDefaults } from './_produce.js';
import type { MappingProblems, YamlPath } from './_problems.js';
import type { FieldPlan, GroupPlan, InstancePlan, MappingPlan, Reader, Rec, TraceEntry } from './_plan.js';
import { buildPathReader, buildTemplateReader, parseReference, type TemplateRef } from './_readers.js';
import {
  elementOf, formatSegments, lookUpTarget, parseRequestPath, type PathSegment,
} from './_request-paths.js';
import { buildFieldRunner } from './_run.js';
import type { FieldSpec, GroupSpec, MappingFile } from './_schema.js';
import { findClosest } from './_text.js';

const DEFAULT_ROW_KEY_PATHS = ['tracking.click_id', 'channel.channel_lead_id'];
const DEFAULT_AGENT_ID_PATH = 'channel.agent_id';

interface Scope {
  /** Index variables of the enclosing numbered groups and their values. */
  vars: ReadonlyMap<string, number>;
  /** In a group's first member with `first_without:`: index variable → the text its columns lack. */
  drops: ReadonlyMap<string, string>;
  /** Inside an `each` group: sources read the element. */
  inEach: boolean;
  /** Inside any group (`required: first` applies). */
  inGroup: boolean;
  /** Schema of the instance's object (the QuoteRequest at the top). */
  schema: z.ZodType | undefined;
  /** Request path of the instance, for messages (`application.drivers[]`). */
  label: string;
  /** Source path of an `each` element as a pattern (`drivers[]`), for coverage. */
  sourceBase: string;
}

type CompiledSource = Pick<FieldPlan, 'read' | 'sources' | 'relative' | 'kind'> & { isPass: boolean; isLiteral: boolean; column?: string };

/** What the compiler learnt beside the plan: the columns and paths the mapping reads and fills. */
export interface PlanFacts {
  /** CSV columns read (numbered groups expanded), with the YAML line that names each. */
  columns: ReadonlyMap<string, number>;
  /** NDJSON paths read below the top level (a CSV file cannot have them). */
  nestedPaths: readonly string[];
  usesEach: boolean;
  /** Source patterns read (`drivers[].dob`); true when the whole subtree is read (`pass:`). */
  sourcePatterns: ReadonlyMap<string, boolean>;
  /** Request paths the mapping fills, indexes written `[]` (`application.drivers[].dob`). */
  targetPatterns: ReadonlySet<string>;
}

/** Compiles the file's content into a plan; mistakes go to `problems` (the caller throws them). */
export function compilePlan(spec: MappingFile, problems: MappingProblems, lineOf: (path: YamlPath) => number): { plan: MappingPlan; facts: PlanFacts } {
  const defaults = { ...spec.defaults };
  if (defaults.zone !== undefined) {
    try {
      compileZone(defaults.zone);
    } catch (error) {
      // Said once, here, rather than at every timestamp that takes it.
      problems.add(['defaults', 'zone'], (error as Error).message, 'use UTC, an offset such as -05:00, or an IANA name such as America/New_York');
      delete defaults.zone;
    }
  }
  const compiler = new Compiler(problems, lineOf, defaults);
  const rootScope: Scope = { vars: new Map(), drops: new Map(), inEach: false, inGroup: false, schema: undefined, label: '', sourceBase: '' };
  const root = compiler.compileInstance(spec.fields, spec.groups ?? [], undefined, { ...rootScope, schema: rootSchema() }, []);

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
  return {
    plan: { root, agentEmail, agentIdPath, rowKeyPaths, rowKeySource, passCoversEnums: compiler.passCoversEnums },
    facts: {
      columns: compiler.columns,
      nestedPaths: [...compiler.nestedPaths],
      usesEach: compiler.usesEach,
      sourcePatterns: compiler.sourcePatterns,
      targetPatterns: compiler.targetPatterns,
    },
  };
}

/** The QuoteRequest itself: lookUpTarget's default root, named here for the top-level scope. */
function rootSchema(): z.ZodType {
  const probe = lookUpTarget([]);
  return (probe.ok ? probe.schema : undefined) as z.ZodType;
}

class Compiler {
  readonly columns = new Map<string, number>();
  readonly nestedPaths = new Set<string>();
  readonly sourcePatterns = new Map<string, boolean>();
  readonly targetPatterns = new Set<string>();
  usesEach = false;
  /** A pass-through object may hold enumerated words: scan the whole request for them. */
  passCoversEnums = false;

  constructor(readonly problems: MappingProblems, readonly lineOf: (path: YamlPath) => number, readonly defaults: MappingDefaults) {}

  compileInstance(
    fields: Record<string, FieldSpec>,
    groups: readonly GroupSpec[],
    key: string | readonly string[] | undefined,
    scope: Scope,
    at: YamlPath,
  ): InstancePlan {
    const plans: FieldPlan[] = [];
    const fieldAts = new Map<FieldPlan, YamlPath>();
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
      const plan = this.compileField(spec, scope, fieldAt, normalized, target, lookup?.ok === true ? lookup.kind : 'any', lookup?.ok === true ? lookup.schema : undefined);
      if (plan !== undefined) {
        plans.push(plan);
        fieldAts.set(plan, fieldAt);
      }
    }
    // Whole objects first, so a pass-through object receives the fields mapped inside it;
    // otherwise the file's order, which is the order a user reads in `preview`.
    plans.sort((a, b) => (a.isPass === b.isPass ? 0 : a.isPass ? -1 : 1));
    const groupPlans: GroupPlan[] = [];
    groups.forEach((group, i) => {
      const plan = this.compileGroup(group, scope, [...at, 'groups', i]);
      if (plan !== undefined) groupPlans.push(plan);
    });
    for (const plan of plans) this.checkElementField(plan, groupPlans, fieldAts.get(plan) ?? at);
    const trace: TraceEntry[] = plans.map((p) => ({
      target: p.targetText, sources: p.sources, relative: p.relative, kind: p.kind, isPass: p.isPass,
    }));
    for (const group of groupPlans) {
      const sources = [...new Set(group.instances.flatMap((inst) => inst.trace.filter((t) => t.target === '#key').flatMap((t) => t.sources)))];
      trace.push({ target: group.targetText, sources, relative: scope.inEach, kind: this.usesEach ? 'field' : 'column', isPass: false });
    }
    let readKey: Reader = () => 'present';
    let keySources: readonly string[] = [];
    if (key !== undefined) {
      const keys = typeof key === 'string' ? [key] : key;
      const readers: Reader[] = [];
      const sources: string[] = [];
      keys.forEach((one, i) => {
        const keySpec: FieldSpec = scope.inEach ? { path: one } : { column: one };
        const keyPlan = this.compileSource(keySpec, scope, typeof key === 'string' ? [...at, 'key'] : [...at, 'key', i]);
        if (keyPlan === undefined) return;
        readers.push(keyPlan.read);
        sources.push(...keyPlan.sources);
        trace.push({ target: '#key', sources: keyPlan.sources, relative: keyPlan.relative, kind: keyPlan.kind, isPass: false });
      });
      // Several key columns: the element exists when any of them has a value.
      readKey = readers.length === 1 ? readers[0] as Reader : (record, item) => {
        for (const read of readers) {
          const value = read(record, item);
          if (!isEmptyValue(value)) return value;
        }
        return undefined;
      };
      keySources = sources;
    }
    const probe = probeOf(plans, groupPlans);
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
      keyText: key === undefined ? '' : typeof key === 'string' ? key : key.join(', '),
      keySources,
      probe,
      filledSources: key === undefined ? undefined : buildFilledSources(probe),
      runFields: buildFieldRunner(fieldsNow),
      runLateFields: buildFieldRunner(lateFields),
    };
  }

  /**
   * A field written into one element of a list a group fills (`application.drivers[0].name.first_name`
   * beside a group over `application.drivers`) must not fill what the group fills too: it is applied
   * after the group and would overwrite whoever the group put at that position (the list is packed),
   * one person's name with another's contact data. Members the group leaves empty may be filled so.
   */
  checkElementField(plan: FieldPlan, groups: readonly GroupPlan[], at: YamlPath): void {
    const index = plan.target.findIndex((segment) => typeof segment === 'number');
    if (index < 0) return;
    const listText = formatSegments(plan.target.slice(0, index));
    const restText = formatSegments(plan.target.slice(index + 1));
    for (const group of groups) {
      if (group.targetText !== listText) continue;
      const first = group.instances[0];
      if (first === undefined) continue;
      const clashes = first.trace.filter((entry) => entry.target !== '#key' && pathsOverlap(entry.target, restText));
      if (clashes.length === 0) continue;
      const theirs = clashes.map((entry) => `${entry.target}${entry.sources.length === 0 ? '' : ` from ${entry.sources.join(', ')}`}`).join('; ');
      const mine = plan.sources.length === 0 ? 'a constant' : plan.sources.join(', ');
      this.problems.add(at,
        `filled twice: here (from ${mine}) and by the group over ${listText} (${theirs}); applied after the group, this field would overwrite whichever element the group put at [${String(plan.target[index])}], mixing two people`,
        `if ${mine} is the list's first member, read it in the group with \`first_without:\` (docs/mapping.md, "An unnumbered first member")`,
        true);
    }
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
    if (group.first_without !== undefined && !numbered) {
      this.problems.add([...at, 'first_without'], '`first_without:` belongs to a numbered group (index/count)', 'e.g. `index: n`, `count: 4`, `first_without: "Driver {n} "`');
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
      const keys = typeof group.key === 'string' ? [group.key] : group.key;
      const fixed = keys.findIndex((key) => !key.includes(`{${group.index}}`));
      if (fixed >= 0) {
        this.problems.add(typeof group.key === 'string' ? [...at, 'key'] : [...at, 'key', fixed],
          `the key "${keys[fixed] ?? ''}" does not contain {${group.index}}: every group would read the same column`,
          `e.g. key: driver{${group.index}}_first_name`);
        return undefined;
      }
      const drop = group.first_without;
      if (drop !== undefined && !drop.includes(`{${group.index}}`)) {
        this.problems.add([...at, 'first_without'], `"${drop}" does not contain {${group.index}}`,
          `it is the text member 1's columns lack, number included: e.g. first_without: "Driver {${group.index}} " for First Name, Driver 2 First Name…`);
        return undefined;
      }
      const instances: InstancePlan[] = [];
      const start = group.start ?? 1;
      for (let n = start; n < start + group.count; n += 1) {
        const vars = new Map(scope.vars).set(group.index, n);
        // The first member's columns are written without the number (First Name, then Driver 2 First Name…).
        const drops = new Map(scope.drops);
        if (drop !== undefined && n === start) drops.set(group.index, drop);
        const problemsBefore = this.problems.count;
        instances.push(this.compileInstance(group.fields, groups, group.key, { ...scope, vars, drops, inGroup: true, schema: elementSchema, label }, at));
        // One mistake in the group's fields would otherwise be reported once per number.
        if (this.problems.count > problemsBefore) break;
      }
      return { target, targetText, instances, each: undefined };
    }
    const eachText = group.each ?? '';
    const eachReader = this.compileReader(eachText, scope, [...at, 'each']);
    if (eachReader === undefined) return undefined;
    this.usesEach = true;
    const sourceBase = `${this.sourcePattern(eachReader.text, scope, eachReader.relative)}[]`;
    const instance = this.compileInstance(group.fields, groups, group.key,
      { vars: scope.vars, drops: scope.drops, inEach: true, inGroup: true, schema: elementSchema, label, sourceBase }, at);
    return { target, targetText, instances: [instance], each: { read: eachReader.read, text: eachReader.text, relative: eachReader.relative } };
  }

  /** Replaces `{n}` of the enclosing groups; reports any `{x}` left over in a name. */
  expand(text: string, scope: Scope, at: YamlPath, isTemplate = false): string | undefined {
    let out = text;
    for (const [name, drop] of scope.drops) {
      out = out.split(drop).join('');
      if (out.includes(`{${name}}`)) {
        this.problems.add(at, `"${text}" does not contain "${drop}" (first_without): the group's first member cannot read it`,
          `every column, template and key of the group holds that text, e.g. "${drop}Phone" is read as ${JSON.stringify(`${drop}Phone`.split(drop).join(''))} for member 1`);
        return undefined;
      }
    }
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

  /** A source as a coverage pattern: below the `each` element when relative, indexes as `[]`. */
  sourcePattern(text: string, scope: Scope, relative: boolean): string {
    const path = text.replace(/\[\d+\]/g, '[]');
    return relative && scope.sourceBase !== '' ? `${scope.sourceBase}.${path}` : path;
  }

  noteSource(text: string, scope: Scope, relative: boolean, whole = false): void {
    const pattern = this.sourcePattern(text, scope, relative);
    this.sourcePatterns.set(pattern, whole || this.sourcePatterns.get(pattern) === true);
  }

  compileSource(spec: FieldSpec, scope: Scope, at: YamlPath): CompiledSource | undefined {
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
      this.noteSource(column, scope, scope.inEach);
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
      const mark = spec.decimal_mark ?? this.defaults.decimal_mark ?? '.';
      const refs = parts.filter((_, i) => i % 2 === 1).map((ref) => parseReference(ref, mark, this.problems, [...at, 'template']));
      if (refs.length === 0) {
        this.problems.add([...at, 'template'], `template "${spec.template}" names no column`, 'write columns in braces: "{first_name} {last_name}"; for a constant use literal:');
        return undefined;
      }
      if (refs.some((ref) => ref === undefined)) return undefined;
      const names = refs.map((ref) => (ref as TemplateRef).name);
      for (const name of names) {
        this.noteSource(name, scope, scope.inEach);
        if (!scope.inEach) this.noteColumn(name, [...at, 'template']);
      }
      const emptyWords = spec.empty ?? this.defaults.empty;
      const empties = emptyWords === undefined ? undefined : new Set(emptyWords.map((word) => word.trim().toLowerCase()));
      const read = buildTemplateReader(parts, refs as TemplateRef[], scope.inEach, empties, spec.trim !== false);
      return { read, sources: names, relative: scope.inEach, kind: scope.inEach ? 'field' : 'column', isPass: false, isLiteral: false };
    }
    const pathText = spec.path ?? spec.pass ?? '';
    const reader = this.compileReader(pathText, scope, [...at, spec.path !== undefined ? 'path' : 'pass']);
    if (reader === undefined) return undefined;
    this.noteSource(reader.text, scope, reader.relative, spec.pass !== undefined);
    return { read: reader.read, sources: [reader.text], relative: reader.relative, kind: 'field', isPass: spec.pass !== undefined, isLiteral: false };
  }

  noteColumn(column: string, at: YamlPath): void {
    if (!this.columns.has(column)) this.columns.set(column, this.lineOf(at));
  }

  compileField(spec: FieldSpec, scope: Scope, at: YamlPath, targetText: string, target: PathSegment[], kind: string, targetSchema?: z.ZodType): FieldPlan | undefined {
    const source = this.compileSource(spec, scope, at);
    if (source === undefined) return undefined;
    // A time zone read from a column is a second source of the field: its problems name both.
    let zoneSource: CompiledSource | undefined;
    if (typeof spec.zone === 'object') {
      const { column, path } = spec.zone;
      if ((column === undefined) === (path === undefined)) {
        this.problems.add([...at, 'zone'], 'a zone from the data names one `column:` or `path:`', 'e.g. `zone: { column: lead_time_zone, default: America/New_York }`');
        return undefined;
      }
      zoneSource = this.compileSource(column === undefined ? { path } : { column }, scope, [...at, 'zone']);
      if (zoneSource === undefined) return undefined;
    }
    const labelled = `${scope.label === '' ? '' : `${scope.label}.`}${targetText}`;
    const produced = compileProduce(spec, source, {
      problems: this.problems, at, targetKind: kind, targetSchema, targetText, targetLabel: labelled, inGroup: scope.inGroup, zoneSource: zoneSource?.read,
      defaults: this.defaults,
    });
    if (produced === undefined) return undefined;
    const { produce, fast } = produced;
    const warns = spec.map !== undefined && spec.on_miss !== undefined && spec.on_miss !== 'error';
    const pattern = labelled.replace(/\[\d+\]/g, '[]');
    if (target[0] !== 'agent' && target[0] !== 'row_key') this.targetPatterns.add(pattern);
    const knownList = KNOWN_VALUES[pattern];
    if (source.isPass && Object.keys(KNOWN_VALUES).some((p) => p.startsWith(`${pattern}.`) || p.startsWith(`${pattern}[`))) {
      this.passCoversEnums = true;
    }
    const sources = zoneSource === undefined ? source.sources : [...source.sources, ...zoneSource.sources];
    return {
      ...source, sources, column: source.column, target, targetText, produce, fast, warns, parent: 0, parentPath: target.slice(0, -1), leaf: String(target[target.length - 1]),
      known: knownList === undefined ? undefined : new Set(knownList),
      knownText: knownList === undefined ? '' : knownList.join(', '),
    };
  }
}

/** Two request paths relative to one element where one is the other or lies inside it (`name` and `name.first_name`). */
function pathsOverlap(a: string, b: string): boolean {
  if (a === '' || b === '' || a === b) return true;
  const inside = (outer: string, inner: string): boolean => inner.startsWith(`${outer}.`) || inner.startsWith(`${outer}[`);
  return inside(a, b) || inside(b, a);
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
