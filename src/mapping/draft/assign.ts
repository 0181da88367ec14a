/**
 * Which request field each source of the input fills: candidates by name (`names.ts`), weighed by
 * how their values look (`field-spec.ts` `fits`), then tried on the sample (`probe.ts`), best first,
 * each source and each request field used once.
 */
import { buildFieldSpec, fits, type SpecContext } from './field-spec.js';
import { ENTITY_LISTS, matchName, type Entity, type Target } from './names.js';
import { probeField } from './probe.js';
import type { SourceField } from './sources.js';
import { guessShape } from './values.js';

/** Placements below this confidence are left to the user (listed as unplaced, with the guess). */
export const MIN_CONFIDENCE = 0.5;
/** A candidate whose drafted field would refuse more than this share of the sample's values is not taken. */
const MAX_REFUSED = 0.5;

export interface Assigned {
  field: SourceField;
  target: Target;
  confidence: number;
  how: string;
  /** What trying the drafted field on the sample found, when some values would be refused. */
  refusal?: string;
}

/** A source whose name matched a request field that its values do not suit, and why. */
export interface Misfit {
  target: Target;
  /** What trying the values found (`3 of 40 … would be refused: expected digits only`); else the shape wanted says it. */
  reason: string | undefined;
}

/**
 * Each source to its best request field, best matches first, each field and target used once. A
 * match whose drafted field the sample's values would mostly fail (tried through the mapping and the
 * QuoteRequest's check) is not taken: the next candidate may fit.
 */
export function assign(fields: readonly SourceField[], entities: Entity[], allowed: (target: Target) => boolean, context: SpecContext):
  { assigned: Assigned[]; left: SourceField[]; misfits: Map<SourceField, Misfit> } {
  const candidates: Assigned[] = [];
  // Fields whose name matched a request field well enough, but whose values did not look like it.
  const misfits = new Map<SourceField, Misfit>();
  for (const field of fields) {
    const shape = guessShape(field.values);
    for (const match of matchName(field.name, entities)) {
      if (!allowed(match.target)) continue;
      const confidence = match.confidence * fits(match.target.semantic, shape);
      if (confidence < MIN_CONFIDENCE) {
        if (match.confidence >= MIN_CONFIDENCE && !misfits.has(field)) misfits.set(field, { target: match.target, reason: undefined });
        continue;
      }
      const tried = tryOnSample(field, match.target, context);
      if (tried.share > MAX_REFUSED) {
        if (!misfits.has(field)) misfits.set(field, { target: match.target, reason: tried.note });
        continue;
      }
      candidates.push({ field, target: match.target, confidence, how: match.how, ...(tried.note === undefined ? {} : { refusal: `check: ${tried.note}` }) });
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

/** The request path a target is tried at: a list's first element (`application.drivers[0].dob`). */
function probePath(target: Target): string {
  if (target.entity === 'lead') return target.path;
  if (target.entity === 'incident') return `${ENTITY_LISTS.driver}[0].${ENTITY_LISTS.incident}[0].${target.path}`;
  return `${ENTITY_LISTS[target.entity]}[0].${target.path}`;
}

/** The target's request path as a pattern (`application.drivers[].dob`), for known words. */
export function targetPattern(target: Target): string {
  return probePath(target).replace(/\[0\]/g, '[]');
}

/** The share of the sample's distinct values the field drafted for `target` would refuse, and a note saying why. */
function tryOnSample(field: SourceField, target: Target, context: SpecContext): { share: number; note: string | undefined } {
  if (target.path === 'agent.email') return { share: 0, note: undefined };
  const { spec } = buildFieldSpec(field, target, targetPattern(target), context);
  const result = probeField(spec, probePath(target), field.values, field.numbers === true);
  if (result.refused === 0 || result.tried === 0) return { share: 0, note: undefined };
  return {
    share: result.refused / result.tried,
    note: `${result.refused} of the sample's ${result.tried} distinct values would be refused here (${result.message ?? 'invalid'})`,
  };
}

/** The group's key: the columns whose value says an element exists (a driver: a first or a last name). */
export function chooseKey(assigned: readonly Assigned[], entity: 'driver' | 'vehicle' | 'incident'): Assigned[] {
  const find = (path: string): Assigned | undefined => assigned.find((a) => a.target.path === path);
  if (entity === 'driver') {
    const names = [find('name.first_name'), find('name.last_name')].filter((a): a is Assigned => a !== undefined);
    if (names.length > 0) return names;
  }
  const preferred: Record<typeof entity, string[]> = {
    driver: ['dob'],
    vehicle: ['vin', 'year', 'make'],
    incident: ['code', 'incident_date'],
  };
  for (const path of preferred[entity]) {
    const found = find(path);
    if (found !== undefined) return [found];
  }
  return [assigned[0] as Assigned];
}
