/**
 * The field `init` drafts for a source placed at a request field: its source and the conversions its
 * sample values need (a date's format, money, limits in dollars, a value table…), with a note for
 * what the sample cannot back. Pure: the source's values in, a field spec out.
 */
import { buildLimit } from '../_amounts.js';
import { compileZone, FAIL } from '../_convert.js';
import { isUsStateName } from '../_us-states.js';
import { ZIP_CODE } from '../../partner/schemas.js';
import type { Semantic, Target } from './names.js';
import { refText, type SourceField } from './sources.js';
import { booleanSpec, wordsSpec } from './specs.js';
import { guessShape, meaningful, nullMarkersIn, type ValueShape } from './values.js';

export type Spec = string | Record<string, unknown>;

/** What a drafted field needs to know beyond its own source. */
export interface SpecContext {
  /** A column (or field) whose values are time zones (`America/Chicago`): the zone of timestamps without an offset. */
  zoneField: SourceField | undefined;
}

/** The field's source and conversions for `target` (`pattern`: its request path with `[]`). */
export function buildFieldSpec(field: SourceField, target: Target, pattern: string, context: SpecContext): { spec: Spec; note: string | undefined } {
  const ref = refText(field);
  // `N/A` and the like in the sample: read as no value, not as a value to convert.
  const markers = nullMarkersIn(field.values);
  const empty = markers.length === 0 ? {} : { empty: markers };
  const source: Record<string, unknown> = 'path' in field.ref ? { path: ref, ...empty } : { column: ref, ...empty };
  const shape = guessShape(field.values);
  const texts = meaningful(field.values);
  const plain = (): Spec => ('column' in source && Object.keys(source).length === 1 ? ref : source);
  const upperCased = (): { spec: Spec; note: undefined } =>
    ({ spec: texts.every((v) => v === v.toUpperCase()) ? plain() : { ...source, case: 'upper' }, note: undefined });
  const mark = shape.type === 'money' && shape.decimalMark === ',' ? { decimal_mark: ',' } : {};
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
    case 'timestamp':
      return timestampSpec(source, shape, context.zoneField);
    case 'phone':
      return { spec: { ...source, type: 'phone' }, note: undefined };
    case 'zip':
      // Only when the sample needs it: zeros a spreadsheet dropped (2134), numbers, ZIP+4 run together.
      return { spec: texts.every((v) => ZIP_CODE.test(v)) && field.numbers !== true ? plain() : { ...source, type: 'zip' }, note: undefined };
    case 'digits':
      return { spec: { ...source, type: 'digits' }, note: undefined };
    case 'code':
      // Numeric text (`010`): JSON numbers have lost their leading zeros.
      return field.numbers === true ? { spec: { ...source, type: 'digits' }, note: 'check: the file holds these as numbers, so a leading 0 is already lost' } : { spec: plain(), note: undefined };
    case 'integer':
      return { spec: { ...source, type: 'integer' }, note: shape.type === 'decimal' ? 'check: the sample has decimals' : undefined };
    case 'decimal':
    case 'money':
      return { spec: { ...source, type: shape.type === 'money' ? 'money' : 'decimal', ...mark }, note: undefined };
    case 'limit':
    case 'limit_pair':
      return limitSpec(source, plain, texts, field.numbers === true, target.semantic === 'limit_pair');
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
      if (texts.every((v) => /^\d+$/.test(v))) return { spec: { template: `{${ref}}${suffix}`, ...empty }, note: undefined };
      // `$5,000`: the amount as digits, written into the partner's text.
      if (shape.type === 'money' || shape.type === 'integer') return { spec: { template: `{${ref} | money}${suffix}`, ...mark, ...empty }, note: undefined };
      return { spec: { template: `{${ref}}${suffix}`, ...empty }, note: `check: the partner wants <amount>${suffix}` };
    }
    case 'words':
      return wordsSpec(source, plain, texts, pattern);
    case 'text':
    case 'description':
      // JSON numbers (a ZIP written 78701) are no text: digits makes them text again.
      if (field.numbers === true && texts.length > 0 && texts.every((v) => /^\d+$/.test(v))) {
        return { spec: { ...source, type: 'digits' }, note: 'check: the file holds these as numbers, so a leading 0 (a ZIP such as 02134) is already lost' };
      }
      return { spec: plain(), note: undefined };
  }
}

/** A timestamp: its format, and its zone (the text's own, a zone column's, or UTC to decide). */
function timestampSpec(source: Record<string, unknown>, shape: ValueShape, zoneField: SourceField | undefined): { spec: Spec; note: string | undefined } {
  if (shape.type !== 'timestamp' && shape.type !== 'date') return { spec: { ...source, type: 'timestamp', format: 'iso' }, note: 'check: no timestamp in the sample to read a format from' };
  const withOffset = shape.type === 'timestamp' && (shape.hasOffset || shape.format.startsWith('epoch'));
  if (withOffset) return { spec: { ...source, type: 'timestamp', format: shape.format }, note: undefined };
  if (zoneField !== undefined) {
    const zoneRef = refText(zoneField);
    const empty = zoneField.values.some((v) => v.trim() === '');
    const zone = { ...('path' in zoneField.ref ? { path: zoneRef } : { column: zoneRef }), ...(empty ? { default: 'UTC' } : {}) };
    return {
      spec: { ...source, type: 'timestamp', format: shape.format, zone },
      note: `check: each row's time zone is read from ${zoneRef}${empty ? '; decide: the zone of rows where it is empty (UTC is assumed)' : ''}`,
    };
  }
  return { spec: { ...source, type: 'timestamp', format: shape.format, zone: 'UTC' }, note: 'decide: the time zone of these times (the file does not say; UTC is assumed)' };
}

/**
 * A limit (`pd`) or a pair of limits (`bi`): as it is when the sample writes the partner's thousands
 * (`50`, `100/300`); `type: limit` when it writes dollars (`$50,000`, `100,000/300,000`).
 */
function limitSpec(source: Record<string, unknown>, plain: () => Spec, texts: readonly string[], numbers: boolean, pair: boolean): { spec: Spec; note: string | undefined } {
  const thousands = pair ? /^\d{1,3}\/\d{1,3}$/ : /^\d{1,3}$/;
  // JSON numbers and digits are made text (`type: digits`): the partner takes the limit as text.
  if (texts.every((v) => thousands.test(v))) return { spec: pair && !numbers ? plain() : { ...source, type: 'digits' }, note: undefined };
  for (const mark of ['.', ','] as const) {
    const read = buildLimit(mark);
    if (texts.every((v) => read(v) !== FAIL)) {
      const inDollars = texts.some((v) => !thousands.test(v));
      return {
        spec: { ...source, type: 'limit', ...(mark === ',' ? { decimal_mark: ',' } : {}) },
        note: inDollars && texts.some((v) => thousands.test(v)) ? 'check: some values are in thousands already and some in dollars; type limit reads amounts under 1,000 as thousands' : undefined,
      };
    }
  }
  return { spec: plain(), note: `check: the partner wants ${pair ? 'a pair of limits in thousands (100/300)' : 'a limit in thousands (50)'}` };
}

/**
 * A field holding each row's time zone (`America/Chicago`, `EST`, `-05:00`): named like one, and
 * nearly all its values are zones. It gives the zone of timestamps written without one.
 */
export function findZoneField(fields: readonly SourceField[]): SourceField | undefined {
  return fields.find((field) => {
    if (!/(?:^|[^a-z])(?:time_?zone|timezone|tz|zone)(?:$|[^a-z])/i.test(field.name.replace(/\s+/g, '_'))) return false;
    const texts = field.values.map((v) => v.trim()).filter((v) => v !== '');
    if (texts.length === 0) return false;
    const zones = texts.filter((text) => {
      try {
        compileZone(text);
        return true;
      } catch {
        return false;
      }
    });
    return zones.length >= texts.length * 0.9;
  });
}

/** How well values of `shape` suit a field of `semantic`: 1 fits, lower when they do not look right. */
export function fits(semantic: Semantic, shape: ValueShape): number {
  if (shape.type === 'empty') return 0.9;
  switch (semantic) {
    case 'date':
      return shape.type === 'date' ? 1 : shape.type === 'timestamp' ? 0.8 : 0.3;
    case 'timestamp':
      return shape.type === 'timestamp' ? 1 : shape.type === 'date' ? 0.9 : 0.3;
    case 'integer':
    case 'decimal':
      return shape.type === 'integer' || shape.type === 'decimal' ? 1 : 0.3;
    case 'money':
      return shape.type === 'integer' || shape.type === 'decimal' || shape.type === 'money' ? 1 : 0.3;
    case 'code':
      return shape.type === 'integer' ? 1 : 0.3;
    case 'description':
      return shape.type === 'integer' || shape.type === 'decimal' ? 0.6 : shape.type === 'text' || shape.type === 'boolean' ? 1 : 0.5;
    case 'limit':
    case 'limit_pair':
      return shape.type === 'date' || shape.type === 'timestamp' || shape.type === 'email' || shape.type === 'boolean' ? 0.3 : 1;
    case 'boolean':
      return shape.type === 'boolean' ? 1 : 0.3;
    case 'email':
      return shape.type === 'email' ? 1 : 0.3;
    case 'phone':
      // Ten digits (2125550100) also read as epoch seconds.
      return shape.type === 'phone' || shape.type === 'integer' || (shape.type === 'timestamp' && shape.format === 'epoch') ? 1 : 0.6;
    case 'text':
    case 'words':
    case 'state':
    case 'zip':
      return shape.type === 'date' || shape.type === 'timestamp' || shape.type === 'email' ? 0.5 : 1;
    default:
      return 1;
  }
}

/** What a field of a semantic wants, for the draft's "do not look like it" list. */
export const SHAPE_WANTED: Partial<Record<Semantic, string>> = {
  date: 'a date: no one date format reads 9 in 10 of the values', timestamp: 'a timestamp: no one format reads 9 in 10 of the values',
  integer: 'a number', decimal: 'a number', money: 'an amount', boolean: 'yes or no', email: 'an e-mail address', phone: 'a phone number',
  code: 'a code of digits', limit: 'a limit', limit_pair: 'a pair of limits',
};
