/**
 * The mapping file as a zod schema: what a user may write in `mappings/*.yaml`.
 * Shape checks live here; the checks that need context (request paths, column names, date
 * formats, index variables) are done by the compiler, which reports them with YAML lines too.
 */
import { z } from 'zod';
import { FORMAT_PATTERN, FORMAT_TOKENS } from './_dates.js';

/** A YAML scalar a mapping may put into the request as is. */
const scalar = z.union([z.string(), z.number(), z.boolean(), z.null()]);

/** Conversions a field can apply to its source value (see docs/mapping.md, "Conversions"). */
export const CONVERSION_TYPES = ['string', 'digits', 'integer', 'decimal', 'money', 'limit', 'boolean', 'date', 'timestamp', 'state', 'phone', 'zip'] as const;
export type ConversionType = (typeof CONVERSION_TYPES)[number];

export const ON_MISS = ['error', 'keep', 'default', 'omit'] as const;

/** `pivot_year`: two-digit years (YY) read as this year to this year + 99. */
const pivotYear = z.number().int().min(1000).max(9900)
  .describe('Two-digit years (YY) read as this year to this year + 99: 1940 reads 45 as 1945 and 39 as 2039.');
/** `decimal_mark`: the character before the cents of money and limits. */
const decimalMark = z.enum(['.', ','])
  .describe('The character before the cents of `money` and `limit` values: "." ($1,234.50, the default) or "," (1.234,50 €).');
/** `empty`: what a file writes for "no value" (`N/A`), read as an empty source. */
const emptyWords = z.array(z.string().min(1)).min(1)
  .describe('Texts the file writes for "no value" (N/A, NULL, -), any case: read as an empty source (left out, or the default).');
/** A time zone: `UTC`, an offset, a US abbreviation, an IANA name. */
const zoneName = z.string().min(1).describe('A time zone: UTC, an offset such as -05:00, EST, or an IANA name such as America/New_York.');

const fieldObject = z.strictObject({
  column: z.string().min(1).optional()
    .describe('Source: a CSV column (or a top-level NDJSON key); {n} index letters of the enclosing groups are replaced.'),
  literal: z.unknown().optional().describe('Source: a constant put into the request as written.'),
  template: z.string().min(1).optional()
    .describe('Source: text with {column} references, e.g. "{first_name} {last_name}"; a reference may convert: "{med_pay | digits}_per_person".'),
  path: z.string().min(1).optional().describe('Source (NDJSON): a path into the record, e.g. contact.address.zip or phones[0].'),
  pass: z.string().min(1).optional().describe('Source (NDJSON): a whole sub-object or list copied as is.'),
  trim: z.boolean().optional().describe('Trim surrounding white space (default true).'),
  empty: emptyWords.optional(),
  case: z.enum(['upper', 'lower']).optional().describe('Change the letter case of the text.'),
  map: z.record(z.string(), scalar).optional()
    .describe('Value table: code → request value (codes match whatever their case); a code mapped to null sends nothing.'),
  on_miss: z.enum(ON_MISS).optional().describe('What a code missing from `map` does: error (default), keep, default, omit.'),
  type: z.enum(CONVERSION_TYPES).optional().meta({ errorMessage: `unknown type: expected one of ${CONVERSION_TYPES.join(', ')}` })
    .describe('The conversion of the (mapped) text into the request\'s type.'),
  format: z.string().min(1).optional()
    .meta({ pattern: FORMAT_PATTERN, patternErrorMessage: `unknown token in the date format: tokens are ${FORMAT_TOKENS}; other letters go in brackets, e.g. [T]` })
    .describe('Source format of a date or timestamp, e.g. MM/DD/YYYY, DD-MMM-YYYY, YYYY-MM-DD HH:mm:ss; or iso, epoch, epoch_ms.'),
  zone: z.union([
    zoneName,
    z.strictObject({
      column: z.string().min(1).optional(),
      path: z.string().min(1).optional(),
      default: zoneName.optional(),
    }),
  ]).optional()
    .describe('Time zone of a timestamp without an offset (default: the mapping\'s defaults.zone, else UTC); or read per row: { column: tz, default: UTC }.'),
  pivot_year: pivotYear.optional(),
  decimal_mark: decimalMark.optional(),
  true: z.array(z.string()).min(1).optional().describe('Words read as true by type: boolean (replace the default list).'),
  false: z.array(z.string()).min(1).optional().describe('Words read as false by type: boolean (replace the default list).'),
  default: scalar.optional().describe('Used when the source is empty (put into the request as written, no conversion).'),
  required: z.union([z.boolean(), z.literal('first')]).optional()
    .describe('An empty source (and no default) makes the row invalid; first: in a group\'s first element only.'),
}).meta({ id: 'field' });

/** A field: a column name (shorthand) or an object with one source and its conversions. */
export const FieldSpec = z.preprocess((value) => (typeof value === 'string' ? { column: value } : value), fieldObject);
export type FieldSpec = z.infer<typeof fieldObject>;

export interface GroupSpec {
  target: string;
  index?: string | undefined;
  start?: number | undefined;
  count?: number | undefined;
  first_without?: string | undefined;
  each?: string | undefined;
  key: string | string[];
  fields: Record<string, FieldSpec>;
  groups?: GroupSpec[] | undefined;
}

export const GroupSpec: z.ZodType<GroupSpec> = z.lazy(() =>
  z.strictObject({
    target: z.string().min(1).describe('The request list the group fills, e.g. application.drivers (relative inside a group).'),
    index: z.string().regex(/^[a-z]\w*$/, { error: 'expected a short lower-case name such as n' }).optional()
      .describe('Index letter of numbered columns (n in driver{n}_dob).'),
    start: z.number().int().nonnegative().optional().describe('First number of the index (default 1).'),
    count: z.number().int().positive().max(1000).optional().describe('How many numbered groups the file has (driver1…driver4: count 4).'),
    first_without: z.string().min(1).optional()
      .describe('The first member\'s columns are named without this text, which holds {n}: with "Driver {n} ", member 1 reads First Name where member 2 reads Driver 2 First Name.'),
    each: z.string().min(1).optional().describe('(NDJSON) a list in the record: one request element per item.'),
    key: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)])
      .describe('The column (with each: the path in the item) that must have a value for the element to exist; a list: any of them.'),
    fields: z.record(z.string(), FieldSpec).describe('Request paths relative to one element, and their sources.'),
    groups: z.array(GroupSpec).optional().describe('Nested groups, e.g. a driver\'s incidents.'),
  }),
).meta({ id: 'group' });

/** `row_key:` a request path, a list of them tried in order, or a source written like a field. */
export const RowKeySpec = z.preprocess(
  (value) => (typeof value === 'string' ? { paths: [value] } : Array.isArray(value) ? { paths: value } : value),
  fieldObject.extend({ paths: z.array(z.string().min(1)).min(1).optional() }),
);

export const INPUT_FORMATS = ['csv', 'tsv', 'ndjson'] as const;

export const MappingFile = z.strictObject({
  /** Version of the mapping language: 1. */
  version: z.literal(1, { error: 'expected version: 1' }),
  /** Free text for people. */
  description: z.string().optional(),
  /** Hints for reading the input (overridden by nothing: the file extension decides when absent). */
  input: z
    .strictObject({
      format: z.enum(INPUT_FORMATS).optional(),
      delimiter: z.string().length(1, { error: 'expected a single character' }).optional(),
    })
    .optional(),
  /** The lead's stable identity: request path(s) tried in order, or a source like a field. */
  row_key: RowKeySpec.optional(),
  /** Where the agent e-mail comes from, and where the validated agent id goes. */
  agent: z
    .strictObject({
      email: FieldSpec,
      id_path: z.string().min(1).optional(),
    })
    .optional(),
  /** Request paths (dotted, `[0]` for an array element) and their sources. */
  fields: z.record(z.string(), FieldSpec),
  /** Repeated groups: numbered columns or source arrays into request arrays. */
  groups: z.array(GroupSpec).optional(),
  /** What fields take when they do not say: the zone of timestamps, the pivot of 2-digit years, the decimal mark. */
  defaults: z
    .strictObject({
      zone: zoneName.optional(),
      pivot_year: pivotYear.optional(),
      decimal_mark: decimalMark.optional(),
      empty: emptyWords.optional(),
    })
    .optional()
    .describe('What fields take when they do not say: zone (of timestamps without an offset), pivot_year (of YY), decimal_mark (of money and limits), empty (texts that mean no value).'),
});
export type MappingFile = z.infer<typeof MappingFile>;

/** Keys allowed in each kind of object, for did-you-mean hints on unknown keys. */
export const ALLOWED_KEYS = {
  field: Object.keys(fieldObject.shape),
  group: ['target', 'index', 'start', 'count', 'first_without', 'each', 'key', 'fields', 'groups'],
  top: Object.keys(MappingFile.shape),
  input: ['format', 'delimiter'],
  defaults: ['zone', 'pivot_year', 'decimal_mark', 'empty'],
  agent: ['email', 'id_path'],
  zone: ['column', 'path', 'default'],
  row_key: [...Object.keys(fieldObject.shape), 'paths'],
};

/** Words users reach for that are spelled differently here. */
export const KEY_HINTS: Readonly<Record<string, string>> = {
  upper: 'write `case: upper`',
  lower: 'write `case: lower`',
  uppercase: 'write `case: upper`',
  lowercase: 'write `case: lower`',
  digits: 'write `type: digits`',
  integer: 'write `type: integer`',
  int: 'write `type: integer`',
  decimal: 'write `type: decimal`',
  number: 'write `type: integer` or `type: decimal`',
  boolean: 'write `type: boolean`',
  bool: 'write `type: boolean`',
  date: 'write `type: date` and `format: MM/DD/YYYY` (the source format)',
  currency: 'write `type: money` (reads $1,234.50; `decimal_mark: ","` for 1.234,50 €)',
  amount: 'write `type: money` (reads $1,234.50)',
  thousands: 'write `type: limit` (reads $100,000/300,000 as 100/300)',
  pivot: 'write `pivot_year: 1940` (two-digit years read as 1940–2039)',
  timezone: 'write `zone: America/New_York`',
  time_zone: 'write `zone: America/New_York`',
  tz: 'write `zone: America/New_York`',
  decimal_separator: 'write `decimal_mark: ","`',
  null: 'texts that mean no value are listed in `empty: ["N/A"]`; a code of a value table that sends nothing maps to null',
  nulls: 'texts that mean no value are listed in `empty: ["N/A"]`',
  na: 'texts that mean no value are listed in `empty: ["N/A"]`',
  timestamp: 'write `type: timestamp` and `format: ...` (and `zone:` when the source has no offset)',
  from: 'write the source format as `format: ...` next to `type: date`',
  values: 'a value table is written `map: { M: male, F: female }`',
  lookup: 'a value table is written `map: { M: male, F: female }`',
  table: 'a value table is written `map: { M: male, F: female }`',
  value: 'a constant is written `literal: ...`',
  const: 'a constant is written `literal: ...`',
  constant: 'a constant is written `literal: ...`',
  optional: 'fields are optional unless marked `required: true`',
  transform: 'conversions are keys of the field: `type:`, `case:`, `map:`, `trim:`',
  transforms: 'conversions are keys of the field: `type:`, `case:`, `map:`, `trim:`',
  source: 'name the source with `column:`, `literal:`, `template:`, `path:` or `pass:`',
  columns: 'several columns are combined with `template: "{a} {b}"`',
  repeat: 'a numbered group is written `index: n`, `count: 4`',
  range: 'a numbered group is written `index: n`, `count: 4`',
  unnumbered: 'a first member whose columns have no number is written `first_without: "Driver {n} "`',
  first_unnumbered: 'a first member whose columns have no number is written `first_without: "Driver {n} "`',
  mapping: 'request paths go under `fields:`',
};
