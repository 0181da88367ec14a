/**
 * `quote-batch init`: a draft mapping from a file's header and first rows. Pure: the header and
 * the sample in, YAML text out. Steps: the input's fields and groups (`sources.ts`, `groups.ts`),
 * each field matched to a request field by name (`names.ts`) and checked against its values
 * (`values.ts`), conversions and value tables chosen, the YAML written with comments (`render.ts`).
 */
import { ENTITY_LISTS, matchName, type Entity, type Semantic, type Target } from './names.js';
import { renderDraft, type DraftField, type DraftGroup, type DraftMapping } from './render.js';
import type { SourceField, SourceGroup, SourceScope } from './sources.js';
import { replaceMarks, stemEntity } from './groups.js';
import { shortName } from '../_text.js';
import { ZIP_CODE } from '../../partner/schemas.js';
import { isUsStateName } from '../_us-states.js';
import { DRAFT_PLACEHOLDER } from '../types.js';
import { booleanSpec, wordsSpec } from './specs.js';
import { guessShape, type ValueShape } from './values.js';

export interface DraftInput {
  /** The input's name, for the draft's comments. */
  fileName: string;
  format: 'csv' | 'tsv' | 'ndjson';
  /** A CSV delimiter other than the format's default, written into `input:`. */
  delimiter?: string;
  /** The CSV header; null for NDJSON. */
  columns: readonly string[] | null;
  /** The fields and groups with their sample values (`SampleCollector`, `collectSample`). */
  scope: SourceScope;
  /** The rows the sample was drawn from. */
  rows: number;
}

/** One source placed at a request path. */
export interface Placement {
  /** The column or path as the mapping writes it (`D{n}_DOB`, `drivers[].dob`). */
  source: string;
  /** The request path: `[]` in a group (`application.drivers[].dob`), `[0]` for a lead-level column put in the first element, or `agent.email`. */
  target: string;
  confidence: number;
}

export interface DraftResult {
  yaml: string;
  placed: Placement[];
  /** Columns (or NDJSON fields) the draft could not place. */
  unplaced: string[];
}

/** Placements below this confidence are left to the user (listed as unplaced, with the guess). */
const MIN_CONFIDENCE = 0.5;
const LETTERS = ['n', 'm', 'k'];

interface Assigned {
  field: SourceField;
  target: Target;
  confidence: number;
  how: string;
}

/** Drafts a mapping (see the file's header). */
export function draftMapping(input: DraftInput): DraftResult {
  return new Drafter(input).draft(input.scope);
}

class Drafter {
  readonly placed: Placement[] = [];
  readonly unplaced: string[] = [];
  /** Unplaced sources whose name matched a request field, but whose sample values did not look like it. */
  readonly misfits = new Map<string, Target>();
  /** Columns of a numbered group missing for some of its numbers (in `unplaced` too). */
  readonly partial: string[] = [];
  /** Columns whose name has `{` or `}` (in `unplaced` too). */
  readonly braced: string[] = [];

  constructor(readonly input: DraftInput) {}

  draft(sample: SourceScope): DraftResult {
    const scope = this.withoutBraced(sample);
    const byEntity = classifyGroups(scope.groups);
    const draft: DraftMapping = {
      comments: [],
      input: this.input.delimiter === undefined ? undefined : { delimiter: this.input.delimiter },
      rowKey: undefined,
      agent: undefined,
      fields: [],
      groups: [],
      footer: [],
    };
    // Groups first: a lead-level column goes into the primary driver only for what the drivers' group lacks.
    const takenByGroups = new Set<string>();
    const driver = byEntity.get('driver');
    if (driver !== undefined) {
      const built = this.buildGroup(driver, 'driver', 0, []);
      if (built !== undefined) {
        draft.groups.push(built.group);
        for (const key of built.targets) takenByGroups.add(`driver:${key}`);
      }
    }
    const vehicle = byEntity.get('vehicle');
    if (vehicle !== undefined) {
      const built = this.buildGroup(vehicle, 'vehicle', 0, []);
      if (built !== undefined) {
        draft.groups.push(built.group);
        if (built.coverage !== undefined) draft.groups.push(built.coverage);
      }
    }
    for (const group of scope.groups) {
      if (group !== driver && group !== vehicle) this.unplaced.push(...listGroupSources(group));
    }

    const entities: Entity[] = ['lead', 'driver'];
    if (vehicle === undefined) entities.push('vehicle', 'vehicle_coverage');
    const lead = assign(scope.fields, entities, (target) => !takenByGroups.has(`${target.entity}:${target.path}`));
    for (const { field, target, confidence, how } of lead.assigned) {
      const source = sourceText(field);
      if (target.path === 'agent.email') {
        draft.agent = { spec: this.buildSpec(field, target, 'agent.email').spec, note: confidenceNote(confidence, how) };
        this.placed.push({ source, target: 'agent.email', confidence });
        continue;
      }
      const path = target.entity === 'lead' ? target.path : `${ENTITY_LISTS[target.entity as Exclude<Entity, 'lead'>]}[0].${target.path}`;
      const pattern = patternOf(target, path);
      const { spec, note } = this.buildSpec(field, target, pattern);
      draft.fields.push({ target: path, spec, note: joinNotes(confidenceNote(confidence, how), note) });
      this.placed.push({ source, target: path, confidence });
    }
    this.unplaced.push(...lead.left.map((f) => sourceText(f)));
    for (const [field, target] of lead.misfits) this.misfits.set(sourceText(field), target);
    if (draft.agent === undefined) this.findAgent(lead.left, draft);
    if (!draft.fields.some((f) => f.target === 'channel.channel_id')) {
      draft.fields.unshift({ target: 'channel.channel_id', spec: { literal: DRAFT_PLACEHOLDER }, note: 'decide: your channel id, assigned by the insurer' });
    }
    this.unplaced.push(...this.braced);
    draft.rowKey = this.chooseRowKey(draft, scope.fields);
    draft.comments = this.headerComments();
    const unmatched = this.unplaced.filter((source) => !this.partial.includes(source) && !this.braced.includes(source));
    const misfits = unmatched.filter((source) => this.misfits.has(source));
    if (misfits.length > 0) {
      const listed = misfits.map((source) => `${shortName(source)} (${SHAPE_WANTED[this.misfits.get(source)?.semantic ?? 'text'] ?? 'its kind of value'})`);
      draft.footer.push(`Not placed (named like a request field, but the sample's values do not look like it): ${listed.join(', ')}`);
    }
    // Columns without a name (a spreadsheet's trailing `;;`) are counted, not listed as blanks.
    const named = unmatched.filter((source) => source !== '' && !this.misfits.has(source));
    const nameless = unmatched.filter((source) => source === '').length;
    if (named.length > 0) draft.footer.push(`Not placed (no request field matched their name): ${named.map(shortName).join(', ')}`);
    if (nameless > 0) draft.footer.push(`Not placed: ${nameless} column(s) without a name in the header (a mapping cannot read them)`);
    if (this.partial.length > 0) draft.footer.push(`Not placed (not there for every number of their group): ${this.partial.map(shortName).join(', ')}`);
    if (this.braced.length > 0) {
      draft.footer.push(`Not placed (a mapping cannot name a column with { or }: it reads {…} as a group's index or a template's column): ${this.braced.map(shortName).join(', ')}`);
    }
    if (this.unplaced.length > 0) draft.footer.push('Map them by hand, or leave them out; `check --coverage` lists the columns a mapping never reads.');
    return { yaml: renderDraft(draft), placed: this.placed, unplaced: this.unplaced };
  }

  /**
   * The scope without the fields a mapping cannot name, which go to {@link braced}: a column whose
   * name holds `{` or `}` (`column: "{first}"` reads as a group's index, a template as a column).
   */
  withoutBraced(scope: SourceScope): SourceScope {
    const fields = scope.fields.filter((field) => {
      if (!/[{}]/.test(refText(field))) return true;
      this.braced.push(sourceText(field));
      return false;
    });
    return { ...scope, fields, groups: scope.groups.map((group) => ({ ...group, scope: this.withoutBraced(group.scope) })) };
  }

  headerComments(): string[] {
    const rows = this.input.rows;
    return [
      ` Draft mapping for ${this.input.fileName}, written by \`quote-batch init\` from ${this.input.format === 'ndjson' ? `the fields of its first ${rows} record${rows === 1 ? '' : 's'}` : `its header and ${rows} row${rows === 1 ? '' : 's'}`}.`,
      ' Lines marked "check:" are guesses and "decide:" need you. Then try it on the whole file:',
      `   quote-batch check ${this.input.fileName} --mapping <this file> --coverage`,
      ' See docs/mapping.md for every construct.',
    ];
  }

  /** A group of `entity` (and, for vehicles, their per-vehicle coverage); undefined when nothing in it matched. */
  buildGroup(group: SourceGroup, entity: 'driver' | 'vehicle' | 'incident', depth: number, outerLetters: readonly string[]):
    { group: DraftGroup; coverage: DraftGroup | undefined; targets: string[] } | undefined {
    const entities: Entity[] = entity === 'vehicle' ? ['vehicle', 'vehicle_coverage'] : [entity];
    const { assigned, left, misfits } = assign(group.scope.fields, entities, () => true);
    if (assigned.length === 0) {
      this.unplaced.push(...listGroupSources(group));
      return undefined;
    }
    this.unplaced.push(...left.map((f) => sourceText(f)), ...group.scope.partial);
    for (const [field, target] of misfits) this.misfits.set(sourceText(field), target);
    this.partial.push(...group.scope.partial);
    const listPath = ENTITY_LISTS[entity];
    const key = refText(chooseKey(assigned, entity).field);
    const base = (target: string): DraftGroup => {
      const g: DraftGroup = { target, key, fields: [], groups: [] };
      if (group.kind === 'numbered') g.numbered = { index: LETTERS[depth] ?? `i${depth}`, start: group.start, count: group.end - group.start + 1 };
      else g.each = group.stem;
      return g;
    };
    const main = base(listPath);
    const coverage = base(ENTITY_LISTS.vehicle_coverage);
    const letters = [...outerLetters, main.numbered?.index ?? ''];
    for (const { field, target, confidence, how } of assigned) {
      const pattern = patternOf(target, target.path);
      const { spec, note } = this.buildSpec(field, target, pattern);
      const into = target.entity === 'vehicle_coverage' ? coverage : main;
      into.fields.push({ target: target.path, spec, note: joinNotes(confidenceNote(confidence, how), note) });
      this.placed.push({ source: sourceText(field), target: pattern, confidence });
    }
    if (entity === 'driver') {
      const incidents = group.scope.groups.find((g) => stemEntity(g.stem) !== 'vehicle');
      for (const nested of group.scope.groups) {
        if (nested !== incidents) {
          this.unplaced.push(...listGroupSources(nested));
          continue;
        }
        const built = this.buildGroup(nested, 'incident', depth + 1, letters);
        if (built !== undefined) main.groups.push(built.group);
      }
    } else {
      for (const nested of group.scope.groups) this.unplaced.push(...listGroupSources(nested));
    }
    if (group.kind === 'numbered') applyLetters([main, coverage], letters);
    return { group: main, coverage: coverage.fields.length > 0 ? coverage : undefined, targets: assigned.map((a) => a.target.path) };
  }

  /** The field's source and conversions for `target` (`pattern`: its request path with `[]`). */
  buildSpec(field: SourceField, target: Target, pattern: string): { spec: string | Record<string, unknown>; note: string | undefined } {
    const ref = refText(field);
    const source: Record<string, unknown> = 'path' in field.ref ? { path: ref } : { column: ref };
    const shape = guessShape(field.values);
    const texts = field.values.map((v) => v.trim()).filter((v) => v !== '');
    const plain = (): string | Record<string, unknown> => ('column' in source && Object.keys(source).length === 1 ? ref : source);
    const upperCased = (): { spec: string | Record<string, unknown>; note: undefined } =>
      ({ spec: texts.every((v) => v === v.toUpperCase()) ? plain() : { ...source, case: 'upper' }, note: undefined });
    switch (target.semantic) {
      case 'date': {
        // A date written with a time of day reads with the timestamp's format (epoch is timestamp-only;
        // iso reads a date with its time of day and keeps the date as written).
        const format = shape.type === 'date' ? shape.format
          : shape.type === 'timestamp' && !['epoch', 'epoch_ms'].includes(shape.format) ? shape.format : undefined;
        const note = format === undefined ? 'check: no date in the sample to read a format from'
          : shape.type === 'timestamp' && format === 'iso' ? 'check: the sample holds times of day; the date as written is kept (1985-04-12T23:00:00Z gives 1985-04-12)'
          : shape.type === 'date' && shape.ambiguous ? 'check: month or day first? the sample fits both'
            : shape.type === 'date' && shape.outliers > 0 ? `check: ${shape.outliers} of the sample's values do not read as ${format}` : undefined;
        return { spec: { ...source, type: 'date', format: format ?? 'MM/DD/YYYY' }, note };
      }
      case 'timestamp': {
        if (shape.type !== 'timestamp' && shape.type !== 'date') return { spec: { ...source, type: 'timestamp', format: 'iso' }, note: 'check: no timestamp in the sample to read a format from' };
        const withOffset = shape.type === 'timestamp' && (shape.hasOffset || shape.format.startsWith('epoch'));
        const spec = { ...source, type: 'timestamp', format: shape.format, ...(withOffset ? {} : { zone: 'UTC' }) };
        return { spec, note: withOffset ? undefined : 'decide: the time zone of these times (the file does not say; UTC is assumed)' };
      }
      case 'phone':
        return { spec: { ...source, type: 'phone' }, note: undefined };
      case 'zip':
        // Only when the sample needs it: zeros a spreadsheet dropped (2134), numbers, ZIP+4 run together.
        return { spec: texts.every((v) => ZIP_CODE.test(v)) && field.numbers !== true ? plain() : { ...source, type: 'zip' }, note: undefined };
      case 'digits':
        return { spec: { ...source, type: 'digits' }, note: undefined };
      case 'integer':
        return { spec: { ...source, type: 'integer' }, note: shape.type === 'decimal' ? 'check: the sample has decimals' : undefined };
      case 'decimal':
        return { spec: { ...source, type: 'decimal' }, note: undefined };
      case 'boolean':
        return booleanSpec(source, shape);
      case 'state':
        // Names ("Texas") where the request wants codes: type state reads both.
        return texts.some(isUsStateName) ? { spec: { ...source, type: 'state' }, note: undefined } : upperCased();
      case 'upper':
        return upperCased();
      case 'email':
        return { spec: texts.every((v) => v === v.toLowerCase()) ? plain() : { ...source, case: 'lower' }, note: undefined };
      case 'ded':
      case 'per_person': {
        const suffix = target.semantic === 'ded' ? '_ded' : '_per_person';
        if (texts.length > 0 && texts.every((v) => v.endsWith(suffix))) return { spec: plain(), note: undefined };
        return { spec: { template: `{${ref}}${suffix}` }, note: texts.every((v) => /^\d+$/.test(v)) ? undefined : `check: the partner wants <amount>${suffix}` };
      }
      case 'words':
        return wordsSpec(source, plain, texts, pattern);
      case 'text':
        // JSON numbers (a ZIP written 78701) are no text: digits makes them text again.
        if (field.numbers === true && texts.length > 0 && texts.every((v) => /^\d+$/.test(v))) {
          return { spec: { ...source, type: 'digits' }, note: 'check: the file holds these as numbers, so a leading 0 (a ZIP such as 02134) is already lost' };
        }
        return { spec: plain(), note: undefined };
    }
  }

  /** An e-mail column nobody named as the agent's: the one whose values repeat most (agents serve many leads). */
  findAgent(fields: readonly SourceField[], draft: DraftMapping): void {
    const candidates = fields
      .map((field) => {
        const texts = field.values.map((v) => v.trim()).filter((v) => v !== '');
        return { field, texts, ratio: new Set(texts.map((t) => t.toLowerCase())).size / Math.max(1, texts.length) };
      })
      .filter((c) => c.texts.length > 0 && guessShape(c.texts).type === 'email' && c.ratio <= 0.5)
      .sort((a, b) => a.ratio - b.ratio);
    const best = candidates[0];
    if (best === undefined) {
      draft.footer.push('decide: no column looks like the agent e-mail; add `agent: { email: <column> }` when the file has one');
      return;
    }
    const source = sourceText(best.field);
    draft.agent = { spec: refText(best.field), note: 'check: its values are e-mail addresses that repeat, as agents do' };
    const at = this.unplaced.indexOf(source);
    if (at >= 0) this.unplaced.splice(at, 1);
    this.placed.push({ source, target: 'agent.email', confidence: 0.6 });
  }

  chooseRowKey(draft: DraftMapping, fields: readonly SourceField[]): DraftMapping['rowKey'] {
    const from = (path: string): DraftField | undefined => draft.fields.find((f) => f.target === path);
    for (const path of ['tracking.click_id', 'tracking.channel_lead_id']) {
      const field = from(path);
      if (field === undefined) continue;
      const column = typeof field.spec === 'string' ? field.spec : String(field.spec.column ?? field.spec.path ?? '');
      const values = fields.find((f) => refText(f) === column)?.values ?? [];
      return { value: path, note: describeUniqueness(values) };
    }
    return { value: undefined, note: 'decide: no click id or lead id found; rows are known by their number (row-<n>), so a resumed job must read the same file' };
  }
}

/** Which group holds drivers, vehicles: by the stem (`D`, `vehicle`, `drivers`), else by what its fields match. */
function classifyGroups(groups: readonly SourceGroup[]): Map<'driver' | 'vehicle', SourceGroup> {
  const out = new Map<'driver' | 'vehicle', SourceGroup>();
  const scored = groups.map((group) => {
    const named = stemEntity(group.stem);
    const score = (entities: Entity[]): number => group.scope.fields.filter((f) => matchName(f.name, entities).some((m) => m.confidence >= 0.6)).length;
    const driver = score(['driver']);
    const vehicle = score(['vehicle', 'vehicle_coverage']);
    const entity: 'driver' | 'vehicle' | undefined = named === 'driver' || named === 'vehicle' ? named
      : driver === 0 && vehicle === 0 ? undefined : driver >= vehicle ? 'driver' : 'vehicle';
    return { group, entity, score: Math.max(driver, vehicle) };
  });
  for (const { group, entity } of scored.sort((a, b) => b.score - a.score)) {
    if (entity !== undefined && !out.has(entity)) out.set(entity, group);
  }
  return out;
}

/** Each source to its best request field, best matches first, each field and target used once. */
function assign(fields: readonly SourceField[], entities: Entity[], allowed: (target: Target) => boolean): { assigned: Assigned[]; left: SourceField[]; misfits: Map<SourceField, Target> } {
  const candidates: Assigned[] = [];
  // Fields whose name matched a request field well enough, but whose values did not look like it.
  const misfits = new Map<SourceField, Target>();
  for (const field of fields) {
    const shape = guessShape(field.values);
    for (const match of matchName(field.name, entities)) {
      if (!allowed(match.target)) continue;
      const confidence = match.confidence * fits(match.target.semantic, shape);
      if (confidence >= MIN_CONFIDENCE) candidates.push({ field, target: match.target, confidence, how: match.how });
      else if (match.confidence >= MIN_CONFIDENCE && !misfits.has(field)) misfits.set(field, match.target);
    }
  }
  candidates.sort((a, b) => b.confidence - a.confidence);
  const usedFields = new Set<SourceField>();
  const usedTargets = new Set<Target>();
  const assigned: Assigned[] = [];
  for (const candidate of candidates) {
    if (usedFields.has(candidate.field) || usedTargets.has(candidate.target)) continue;
    usedFields.add(candidate.field);
    usedTargets.add(candidate.target);
    assigned.push(candidate);
  }
  // The file's order, which is the order a reader expects.
  assigned.sort((a, b) => fields.indexOf(a.field) - fields.indexOf(b.field));
  for (const field of usedFields) misfits.delete(field);
  return { assigned, left: fields.filter((f) => !usedFields.has(f)), misfits };
}

/** What a field of a semantic wants, for the draft's "do not look like it" list. */
const SHAPE_WANTED: Partial<Record<Semantic, string>> = {
  date: 'a date: the values are in no one format', timestamp: 'a timestamp: the values are in no one format',
  integer: 'a number', decimal: 'a number', boolean: 'yes or no', email: 'an e-mail address', phone: 'a phone number',
};

/** How well values of `shape` suit a field of `semantic`: 1 fits, lower when they do not look right. */
function fits(semantic: Semantic, shape: ValueShape): number {
  if (shape.type === 'empty') return 0.9;
  switch (semantic) {
    case 'date':
      return shape.type === 'date' ? 1 : shape.type === 'timestamp' ? 0.8 : 0.3;
    case 'timestamp':
      return shape.type === 'timestamp' ? 1 : shape.type === 'date' ? 0.9 : 0.3;
    case 'integer':
    case 'decimal':
      return shape.type === 'integer' || shape.type === 'decimal' ? 1 : 0.3;
    case 'boolean':
      return shape.type === 'boolean' ? 1 : 0.3;
    case 'email':
      return shape.type === 'email' ? 1 : 0.3;
    case 'phone':
      return shape.type === 'phone' || shape.type === 'integer' ? 1 : 0.6;
    case 'text':
    case 'words':
    case 'state':
    case 'zip':
      return shape.type === 'date' || shape.type === 'timestamp' || shape.type === 'email' ? 0.5 : 1;
    default:
      return 1;
  }
}

function chooseKey(assigned: readonly Assigned[], entity: 'driver' | 'vehicle' | 'incident'): Assigned {
  const preferred: Record<typeof entity, string[]> = {
    driver: ['name.first_name', 'name.last_name', 'dob'],
    vehicle: ['vin', 'year', 'make'],
    incident: ['code', 'incident_date'],
  };
  for (const path of preferred[entity]) {
    const found = assigned.find((a) => a.target.path === path);
    if (found !== undefined) return found;
  }
  return assigned[0] as Assigned;
}

function describeUniqueness(values: readonly string[]): string {
  const texts = values.map((v) => v.trim()).filter((v) => v !== '');
  const repeats = texts.length - new Set(texts).size;
  const empty = values.length - texts.length;
  if (repeats === 0 && empty === 0) return 'unique in the sample';
  return `check: in the sample ${repeats > 0 ? `${repeats} value(s) repeat (the run records repeats duplicate)` : ''}${repeats > 0 && empty > 0 ? ', ' : ''}${empty > 0 ? `${empty} are empty` : ''}`;
}

function confidenceNote(confidence: number, how: string): string | undefined {
  return confidence >= 0.9 ? undefined : `check: matched by ${how} (${Math.round(confidence * 100)}%)`;
}

function joinNotes(...notes: (string | undefined)[]): string | undefined {
  const present = notes.filter((n): n is string => n !== undefined);
  return present.length === 0 ? undefined : present.join('; ');
}

/** The request path pattern (`application.drivers[].dob`) of a target placed at `path`. */
function patternOf(target: Target, path: string): string {
  if (target.entity === 'lead') return target.path;
  const list = target.entity === 'incident' ? `${ENTITY_LISTS.driver}[].${ENTITY_LISTS.incident}` : ENTITY_LISTS[target.entity];
  return `${list}[].${path.replace(/^.*\[0\]\./, '')}`;
}

/** The column or path as the mapping writes it, with group marks left for {@link applyLetters}. */
function refText(field: SourceField): string {
  return 'column' in field.ref ? field.ref.column : field.ref.path;
}

/** For messages: a numbered group's column with `{n}` letters, a path as it is. */
function sourceText(field: SourceField): string {
  return withLetters(refText(field), LETTERS);
}

function withLetters(text: string, letters: readonly string[]): string {
  return replaceMarks(text, (level) => `{${letters[level] ?? 'n'}}`);
}

/** Replaces the group marks of every column, template and key with the groups' index letters. */
function applyLetters(groups: DraftGroup[], letters: readonly string[]): void {
  const fix = (value: unknown): unknown => (typeof value === 'string' ? withLetters(value, letters) : value);
  for (const group of groups) {
    group.key = withLetters(group.key, letters);
    for (const field of group.fields) {
      field.spec = typeof field.spec === 'string' ? withLetters(field.spec, letters)
        : Object.fromEntries(Object.entries(field.spec).map(([k, v]) => [k, k === 'column' || k === 'template' || k === 'path' ? fix(v) : v]));
    }
  }
}

function listGroupSources(group: SourceGroup): string[] {
  const own = group.scope.fields.map((f) => sourceText(f));
  return [...own, ...group.scope.partial, ...group.scope.groups.flatMap((g) => listGroupSources(g))];
}
