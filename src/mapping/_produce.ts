/**
 * One field's value steps, built once: empty check → case → value table → conversion (see
 * docs/mapping.md, "Conversions"). Also the checks of a field's keys that need its source and the
 * request's type, reported as mistakes of the mapping file rather than as the same error per row.
 */
import { buildLimit, buildMoney } from './_amounts.js';
import {
  buildBoolean, buildDate, buildTimestamp, compileZone, convertDecimal, convertDigits, convertInteger, convertPhone, convertUsState, convertZip, FAIL, failure,
  FormatError, FORMAT_TOKENS, type Converter,
} from './_convert.js';
import type { z } from 'zod';
import { latestToday, pastDate } from '../partner/schemas.js';
import type { FastText } from './_generate.js';
import { OMIT, type FieldPlan, type Reader, type RowState } from './_plan.js';
import type { MappingProblems, YamlPath } from './_problems.js';
import type { ConversionType, FieldSpec, MappingFile } from './_schema.js';
import { quoteValue } from './_text.js';

/** What the compiler knows of the field whose steps are built. */
export interface ProduceContext {
  problems: MappingProblems;
  at: YamlPath;
  /** The request type at the target (`string`, `number`, `boolean`, `object`, `array`, `any`). */
  targetKind: string;
  /** The target's own schema, when the request's schema says (not below an open object). */
  targetSchema?: z.ZodType;
  /** The target as written in the field's key, e.g. `dob`. */
  targetText: string;
  /** The target as the user reads it, e.g. `application.drivers[].dob`. */
  targetLabel: string;
  /** The field is inside a group (`required: first` needs one). */
  inGroup: boolean;
  /** A time zone read from a column (`zone: { column: tz }`), compiled by the caller. */
  zoneSource: Reader | undefined;
  /** The mapping's `defaults:` (zone, pivot year, decimal mark). */
  defaults: MappingDefaults;
}

/** The mapping's `defaults:` block: what a field takes when it does not say. */
export type MappingDefaults = NonNullable<MappingFile['defaults']>;

/** The source as far as the value steps care. */
export interface ProducedSource {
  isPass: boolean;
  isLiteral: boolean;
  kind: 'column' | 'field';
}

/** Zones compiled from a column's values, kept per field; cleared when a file holds more than this many. */
const MAX_CACHED_ZONES = 64;

/** Builds the field's `produce` (and its `fast` twin); undefined after reporting a mistake. */
export function compileProduce(spec: FieldSpec, source: ProducedSource, ctx: ProduceContext): Pick<FieldPlan, 'produce' | 'fast'> | undefined {
  const { problems, at } = ctx;
  const conversions = (['trim', 'empty', 'case', 'map', 'on_miss', 'type', 'format', 'zone', 'pivot_year', 'decimal_mark', 'true', 'false'] as const).filter((k) => spec[k] !== undefined);
  if ((source.isPass || source.isLiteral) && conversions.length > 0) {
    problems.add([...at, conversions[0] ?? 'type'], `${source.isPass ? 'pass' : 'literal'} takes no conversion (${conversions.join(', ')})`,
      source.isPass ? 'use path: to convert a single value' : 'write the literal exactly as it should be sent');
    return undefined;
  }
  const type: ConversionType | undefined = spec.type;
  const fixedZone = typeof spec.zone === 'string' ? spec.zone : ctx.defaults.zone;
  let convert: Converter | undefined;
  try {
    convert = buildConverter(spec, fixedZone, ctx.targetSchema === pastDate, ctx.defaults);
  } catch (error) {
    if (error instanceof FormatError) {
      problems.add([...at, 'format'], error.message, error.hint);
      return undefined;
    }
    const isZone = /zone/.test((error as Error).message);
    problems.add([...at, isZone ? 'zone' : 'format'], (error as Error).message,
      isZone ? 'use UTC, an offset such as -05:00, or an IANA name such as America/New_York' : `tokens: ${FORMAT_TOKENS}; or iso, epoch, epoch_ms for timestamps`);
    return undefined;
  }
  const dated = type === 'date' || type === 'timestamp';
  const misplaced = (['format', 'zone', 'pivot_year'] as const).find((key) => spec[key] !== undefined && !dated);
  if (misplaced !== undefined) {
    problems.add([...at, misplaced], `\`${misplaced}\` only applies to \`type: date\` or \`type: timestamp\``, 'add `type: date` (or timestamp)', true);
    return undefined;
  }
  if (spec.decimal_mark !== undefined && type !== 'money' && type !== 'limit' && spec.template === undefined) {
    problems.add([...at, 'decimal_mark'], '`decimal_mark` only applies to `type: money`, `type: limit` or a template\'s `| money` and `| limit`', 'add `type: money`', true);
    return undefined;
  }
  if (type === 'date' && spec.format === undefined) {
    problems.add([...at, 'type'], 'a date needs its source format', 'add e.g. `format: MM/DD/YYYY` (or `format: iso` for YYYY-MM-DD)');
    return undefined;
  }
  if (spec.zone !== undefined && type !== 'timestamp') {
    problems.add([...at, 'zone'], '`zone` only applies to `type: timestamp`', undefined, true);
    return undefined;
  }
  if ((spec.true !== undefined || spec.false !== undefined) && type !== 'boolean') {
    problems.add([...at, spec.true !== undefined ? 'true' : 'false'], '`true`/`false` word lists only apply to `type: boolean`', 'add `type: boolean`', true);
    return undefined;
  }
  if (spec.on_miss !== undefined && spec.map === undefined) {
    problems.add([...at, 'on_miss'], '`on_miss` only applies with a value table (`map:`)', undefined, true);
    return undefined;
  }
  if (spec.on_miss === 'default' && spec.default === undefined) {
    problems.add([...at, 'on_miss'], '`on_miss: default` needs a `default:` value', 'add e.g. `default: other`');
    return undefined;
  }
  if (spec.required === 'first' && !ctx.inGroup) {
    problems.add([...at, 'required'], '`required: first` applies to the first element of a group: this field is not in a group',
      'write `required: true`');
    return undefined;
  }
  if (!checkTargetType(spec, source, ctx)) return undefined;
  if (source.isPass || source.isLiteral) {
    const pass = source.isPass;
    const produce: FieldPlan['produce'] = (raw) => {
      if (raw === undefined || raw === null || raw === '') return OMIT;
      if (pass && typeof raw === 'object') return Array.isArray(raw) ? [...(raw as unknown[])] : { ...(raw as Record<string, unknown>) };
      return raw;
    };
    return { produce, fast: undefined };
  }
  const zoneOf = ctx.zoneSource === undefined || typeof spec.zone !== 'object' ? undefined
    : buildZoneOf(ctx.zoneSource, spec.zone.default ?? ctx.defaults.zone, spec.format ?? 'iso', spec.pivot_year ?? ctx.defaults.pivot_year);
  return buildTextSteps(spec, type, convert, zoneOf, spec.empty ?? ctx.defaults.empty);
}

/**
 * The request type decides what the text must become: catch the missing conversion here, not as
 * the same schema error on every row.
 */
function checkTargetType(spec: FieldSpec, source: ProducedSource, ctx: ProduceContext): boolean {
  if (source.isPass || source.isLiteral || source.kind !== 'column') return true;
  const { problems, at, targetKind, targetText, targetLabel } = ctx;
  const type = spec.type;
  const mapValues = spec.map === undefined ? [] : Object.values(spec.map).filter((v) => v !== null);
  const mapGives = (t: string): boolean => mapValues.length > 0 && mapValues.every((v) => typeof v === t);
  if ((targetKind === 'number' || targetKind === 'boolean') && type === 'limit') {
    problems.add([...at, 'type'], `${targetLabel} is ${targetKind === 'number' ? 'a number' : 'true/false'} in the QuoteRequest: type limit gives text such as 100/300`,
      targetKind === 'number' ? 'use `type: money` for an amount' : 'use `type: boolean`');
    return false;
  }
  if (targetKind === 'number' && type !== 'integer' && type !== 'decimal' && type !== 'money' && !mapGives('number')) {
    problems.add(at, `${targetLabel} is a number in the QuoteRequest`, 'add `type: integer`, `type: decimal` or `type: money`', true);
    return false;
  }
  if (targetKind === 'boolean' && type !== 'boolean' && !mapGives('boolean')) {
    problems.add(at, `${targetLabel} is true/false in the QuoteRequest`, 'add `type: boolean` (reads Y/N, yes/no, 1/0, true/false)', true);
    return false;
  }
  if (targetKind === 'string' && (type === 'integer' || type === 'decimal' || type === 'money' || type === 'boolean')) {
    problems.add([...at, 'type'], `${targetLabel} is text in the QuoteRequest: type ${type} would send a ${type === 'boolean' ? 'boolean' : 'number'}`,
      type === 'boolean' ? 'remove `type:` or use a value table'
        : type === 'money' ? 'use `type: limit` for a limit in dollars, or a template such as "{column | money}"' : 'use `type: digits` for numeric text, or remove `type:`');
    return false;
  }
  if (targetKind === 'object' || targetKind === 'array') {
    problems.add(at, `${targetText} is ${targetKind === 'array' ? 'a list' : 'an object'} in the QuoteRequest`,
      targetKind === 'array' ? 'fill it with a group (groups:)' : `map its members (e.g. ${targetText}.<member>) or copy a whole object with pass:`, true);
    return false;
  }
  return true;
}

/** A timestamp converter per row, from the zone named in a column (compiled zones are cached). */
function buildZoneOf(read: Reader, fallback: string | undefined, format: string, pivot: number | undefined): (record: Record<string, unknown>, item: unknown) => Converter | typeof FAIL {
  const cache = new Map<string, Converter | typeof FAIL>();
  return (record, item) => {
    const raw = read(record, item);
    let zone = typeof raw === 'string' ? raw.trim() : raw === undefined || raw === null ? '' : String(raw);
    if (zone === '') {
      if (fallback === undefined) {
        failure.message = 'the time zone is missing';
        return FAIL;
      }
      zone = fallback;
    }
    let convert = cache.get(zone);
    if (convert === undefined) {
      try {
        convert = buildTimestamp(format, zone, { pivot });
      } catch {
        convert = FAIL;
      }
      if (cache.size >= MAX_CACHED_ZONES) cache.clear();
      cache.set(zone, convert);
    }
    if (convert === FAIL) failure.message = `expected a time zone (UTC, -05:00, America/New_York), got ${quoteValue(zone)}`;
    return convert;
  };
}

function buildTextSteps(
  spec: FieldSpec,
  type: ConversionType | undefined,
  fixedConvert: Converter | undefined,
  zoneOf: ReturnType<typeof buildZoneOf> | undefined,
  emptyWords: readonly string[] | undefined,
): Pick<FieldPlan, 'produce' | 'fast'> {
  const trim = spec.trim !== false;
  // Texts the file writes for "no value" (N/A): an empty source, whatever their case.
  const empties = emptyWords === undefined ? undefined : new Set(emptyWords.map((word) => word.trim().toLowerCase()));
  const upper = spec.case === 'upper';
  const lower = spec.case === 'lower';
  const hasDefault = spec.default !== undefined;
  const fallback = spec.default;
  const required = spec.required === true;
  const requiredFirst = spec.required === 'first';
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

  const whenEmpty = (row: RowState, why = 'required value is missing'): unknown => {
    if (hasDefault) return fallback;
    if (required || (requiredFirst && row.first)) {
      failure.message = why;
      return FAIL;
    }
    return OMIT;
  };

  const fromText = (input: string, row: RowState, record: Record<string, unknown>, item: unknown): unknown => {
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
          return whenEmpty(row);
        }
      } else if (mapped === null) {
        // A code the table maps to null means "no value": as if the source were empty.
        return whenEmpty(row, 'required, but the value table sends nothing for this code');
      } else {
        if (typeof mapped !== 'string') return mapped;
        text = mapped;
      }
    }
    if (zoneOf !== undefined) {
      const convert = zoneOf(record, item);
      return convert === FAIL ? FAIL : convert(text);
    }
    return fixedConvert === undefined ? text : fixedConvert(text);
  };

  // The same steps as `produce` below, for the generated code (which calls `produce` for the rest).
  // A zone read per row is not one of its steps: such a field always runs `produce`.
  const fast: FastText | undefined = zoneOf !== undefined ? undefined : {
    trim, empties, upper, lower, table, convert: fixedConvert,
    empty: hasDefault ? 'default' : required || requiredFirst ? 'reference' : 'omit',
    fallback,
  };
  const produce: FieldPlan['produce'] = (raw, row, record, item) => {
    // A template whose reference failed its pipe (`{x | digits}`): the reason is in `failure`.
    if (raw === FAIL) return FAIL;
    if (typeof raw === 'string') {
      const text = trim ? raw.trim() : raw;
      if (text === '' || empties?.has(text.toLowerCase()) === true) return whenEmpty(row);
      return fromText(text, row, record, item);
    }
    if (raw === undefined || raw === null) return whenEmpty(row);
    if (typeof raw === 'number' || typeof raw === 'boolean') {
      // NDJSON values that already have a JSON type: keep them unless a conversion is asked for.
      if (table !== undefined) return fromText(toText(raw), row, record, item);
      if (type === undefined) return raw;
      if (typeof raw === 'number' && (type === 'decimal' || (type === 'integer' && Number.isInteger(raw)))) return raw;
      if (typeof raw === 'boolean' && type === 'boolean') return raw;
      if (type === 'string') return toText(raw);
      return fromText(toText(raw), row, record, item);
    }
    failure.message = `expected a single value, got ${Array.isArray(raw) ? 'a list' : 'an object'}`;
    return FAIL;
  };
  return { produce, fast };
}

/** `pastDate`: the target holds a date that has happened (its schema is `pastDate`). */
function buildConverter(spec: FieldSpec, zone: string | undefined, pastDate: boolean, defaults: MappingDefaults): Converter | undefined {
  const pivot = spec.pivot_year ?? defaults.pivot_year;
  const mark = spec.decimal_mark ?? defaults.decimal_mark ?? '.';
  switch (spec.type) {
    case undefined:
    case 'string':
      return undefined;
    case 'digits':
      return convertDigits;
    case 'state':
      return convertUsState;
    case 'phone':
      return convertPhone;
    case 'zip':
      return convertZip;
    case 'integer':
      return convertInteger;
    case 'decimal':
      return convertDecimal;
    case 'money':
      return buildMoney(mark);
    case 'limit':
      return buildLimit(mark);
    case 'boolean':
      return buildBoolean(spec.true, spec.false);
    case 'date':
      return buildDate(spec.format ?? 'iso', { past: pastDate ? latestToday : undefined, pivot });
    case 'timestamp':
      if (typeof spec.zone === 'object') compileZone(spec.zone.default ?? defaults.zone);
      else compileZone(zone);
      return buildTimestamp(spec.format ?? 'iso', zone, { pivot });
  }
}
