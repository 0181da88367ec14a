/**
 * `quote-batch init`: a draft mapping from a file's header and first rows. Pure: the header and
 * the sample in, YAML text out. Steps: the input's fields and groups (`sources.ts`, `groups.ts`),
 * each field matched to a request field by name (`names.ts`) and checked against its values
 * (`values.ts`), conversions and value tables chosen, the YAML written with comments (`render.ts`).
 */
import { assign, chooseKey, targetPattern, type Misfit } from './assign.js';
import { buildFieldSpec, findZoneField, SHAPE_WANTED, type SpecContext } from './field-spec.js';
import { foldUnnumberedFirst, type FoldedGroup } from './first-member.js';
import { replaceMarks, stemEntity } from './groups.js';
import { ENTITY_LISTS, matchName, type Entity, type Target } from './names.js';
import { renderDraft, type DraftField, type DraftGroup, type DraftMapping } from './render.js';
import { refText, type SourceField, type SourceGroup, type SourceScope } from './sources.js';
import { guessShape } from './values.js';
import { shortName } from '../_text.js';
import { DRAFT_PLACEHOLDER } from '../types.js';

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
  /** Where the draft's editor finds the mapping JSON Schema (`# yaml-language-server: $schema=…`); none when undefined. */
  schemaRef?: string;
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

/** Index letters of numbered groups by depth; a vehicle group takes `v`. */
const LETTERS = ['n', 'm', 'k'];

/** Drafts a mapping (see the file's header). */
export function draftMapping(input: DraftInput): DraftResult {
  return new Drafter(input).draft(input.scope);
}

class Drafter {
  readonly placed: Placement[] = [];
  readonly unplaced: string[] = [];
  /** Unplaced sources whose name matched a request field, but whose sample values did not look like it. */
  readonly misfits = new Map<string, Misfit>();
  /** What every drafted field may need beside its own source (a time zone column). */
  context: SpecContext = { zoneField: undefined };
  /** A timestamp reads its zone from the zone column. */
  zoneUsed = false;
  /** Columns of a numbered group missing for some of its numbers (in `unplaced` too). */
  readonly partial: string[] = [];
  /** Columns whose name has `{` or `}` (in `unplaced` too). */
  readonly braced: string[] = [];

  constructor(readonly input: DraftInput) {}

  draft(sample: SourceScope): DraftResult {
    let scope = this.withoutBraced(sample);
    // A column of time zones is not a request field: it gives the zone of timestamps written without one.
    const zoneField = findZoneField(scope.fields);
    if (zoneField !== undefined) {
      this.context = { zoneField };
      scope = { ...scope, fields: scope.fields.filter((f) => f !== zoneField) };
    }
    const byEntity = classifyGroups(scope.groups);
    // `First Name` beside `Driver 2 First Name`: the unnumbered columns are the group's member 1.
    const folded = new Map<SourceGroup, FoldedGroup>();
    for (const group of byEntity.values()) {
      const fold = foldUnnumberedFirst(group, scope.fields);
      if (fold === undefined) continue;
      folded.set(group, fold);
      scope = { ...scope, fields: fold.plain };
    }
    const draft: DraftMapping = {
      schemaRef: this.input.schemaRef,
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
      const built = this.buildGroup(driver, 'driver', 0, [], folded.get(driver));
      if (built !== undefined) {
        draft.groups.push(built.group);
        for (const key of built.targets) takenByGroups.add(`driver:${key}`);
      }
    }
    const vehicle = byEntity.get('vehicle');
    if (vehicle !== undefined) {
      const built = this.buildGroup(vehicle, 'vehicle', 0, [], folded.get(vehicle));
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
    const lead = assign(scope.fields, entities, (target) => !takenByGroups.has(`${target.entity}:${target.path}`), this.context);
    for (const { field, target, confidence, how, refusal } of lead.assigned) {
      const source = sourceText(field);
      if (target.path === 'agent.email') {
        draft.agent = { spec: this.buildSpec(field, target, 'agent.email').spec, note: confidenceNote(confidence, how) };
        this.placed.push({ source, target: 'agent.email', confidence });
        continue;
      }
      const path = target.entity === 'lead' ? target.path : `${ENTITY_LISTS[target.entity as Exclude<Entity, 'lead'>]}[0].${target.path}`;
      const { spec, note } = this.buildSpec(field, target, targetPattern(target));
      draft.fields.push({ target: path, spec, note: joinNotes(confidenceNote(confidence, how), note, refusal) });
      this.placed.push({ source, target: path, confidence });
    }
    this.unplaced.push(...lead.left.map((f) => sourceText(f)));
    for (const [field, misfit] of lead.misfits) this.misfits.set(sourceText(field), misfit);
    if (zoneField !== undefined) {
      if (this.zoneUsed) this.placed.push({ source: sourceText(zoneField), target: 'zone', confidence: 0.9 });
      else this.unplaced.push(sourceText(zoneField));
    }
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
      const listed = misfits.map((source) => {
        const misfit = this.misfits.get(source);
        const why = misfit?.reason ?? SHAPE_WANTED[misfit?.target.semantic ?? 'text'] ?? 'its kind of value';
        return `${shortName(source)} (${misfit === undefined ? '' : `${misfit.target.path}: `}${why})`;
      });
      draft.footer.push(`Not placed (named like a request field, but the sample's values do not fit it): ${listed.join(', ')}`);
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
  buildGroup(source: SourceGroup, entity: 'driver' | 'vehicle' | 'incident', depth: number, outerLetters: readonly string[], fold?: FoldedGroup):
    { group: DraftGroup; coverage: DraftGroup | undefined; targets: string[] } | undefined {
    const group = fold?.group ?? source;
    const entities: Entity[] = entity === 'vehicle' ? ['vehicle', 'vehicle_coverage'] : [entity];
    const { assigned, left, misfits } = assign(group.scope.fields, entities, () => true, this.context);
    if (assigned.length === 0) {
      this.unplaced.push(...listGroupSources(group));
      return undefined;
    }
    this.unplaced.push(...left.map((f) => sourceText(f)), ...group.scope.partial);
    for (const [field, misfit] of misfits) this.misfits.set(sourceText(field), misfit);
    this.partial.push(...group.scope.partial);
    const listPath = ENTITY_LISTS[entity];
    const keys = chooseKey(assigned, entity).map((a) => refText(a.field));
    const key = keys.length === 1 ? keys[0] as string : keys;
    const letter = entity === 'vehicle' && depth === 0 ? 'v' : LETTERS[depth] ?? `i${depth}`;
    const base = (target: string, groupKey: string | string[]): DraftGroup => {
      const g: DraftGroup = { target, key: groupKey, fields: [], groups: [] };
      if (group.kind === 'numbered') g.numbered = { index: letter, start: group.start, count: group.end - group.start + 1 };
      else g.each = group.stem;
      if (g.numbered !== undefined && fold !== undefined) {
        g.numbered.firstWithout = fold.drop;
        g.firstNote = `check: ${fold.firstColumns.map(shortName).join(', ')} (no number) are read as ${entity} 1`;
      }
      return g;
    };
    const main = base(listPath, key);
    // The coverage of a vehicle exists exactly when the vehicle does.
    const coverage = base(ENTITY_LISTS.vehicle_coverage, key);
    const letters = [...outerLetters, main.numbered?.index ?? ''];
    for (const { field, target, confidence, how, refusal } of assigned) {
      const pattern = targetPattern(target);
      const { spec, note } = this.buildSpec(field, target, pattern);
      const into = target.entity === 'vehicle_coverage' ? coverage : main;
      into.fields.push({ target: target.path, spec, note: joinNotes(confidenceNote(confidence, how), note, refusal) });
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
    const built = buildFieldSpec(field, target, pattern, this.context);
    if (this.context.zoneField !== undefined && typeof built.spec === 'object' && typeof built.spec.zone === 'object') this.zoneUsed = true;
    return built;
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
    if (group.numbered?.firstWithout !== undefined) group.numbered.firstWithout = withLetters(group.numbered.firstWithout, letters);
    group.key = typeof group.key === 'string' ? withLetters(group.key, letters) : group.key.map((key) => withLetters(key, letters));
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
