/**
 * The mapping file as a zod schema: what a user may write in `mappings/*.yaml`.
 * Shape checks live here; the checks that need context (request paths, column names, date
 * formats, index variables) are done by the compiler, which reports them with YAML lines too.
 */
import { z } from 'zod';

/** A YAML scalar a mapping may put into the request as is. */
const scalar = z.union([z.string(), z.number(), z.boolean(), z.null()]);

/** Conversions a field can apply to its source value (see docs/mapping.md, "Conversions"). */
export const CONVERSION_TYPES = ['string', 'digits', 'integer', 'decimal', 'boolean', 'date', 'timestamp', 'state', 'phone', 'zip'] as const;
export type ConversionType = (typeof CONVERSION_TYPES)[number];

export const ON_MISS = ['error', 'keep', 'default', 'omit'] as const;

const fieldObject = z.strictObject({
  /** Source: a CSV column (or a top-level NDJSON key); `{n}` index variables expand inside groups. */
  column: z.string().min(1).optional(),
  /** Source: a constant put into the request as written. */
  literal: z.unknown().optional(),
  /** Source: text with `{column}` references, e.g. `"{first_name} {last_name}"`. */
  template: z.string().min(1).optional(),
  /** Source (NDJSON): a path into the record, e.g. `contact.address.zip` or `phones[0]`. */
  path: z.string().min(1).optional(),
  /** Source (NDJSON): a whole sub-object or array copied as is. */
  pass: z.string().min(1).optional(),
  /** Trim surrounding white space (default true). */
  trim: z.boolean().optional(),
  /** Change the letter case of text. */
  case: z.enum(['upper', 'lower']).optional(),
  /** Value table applied to the text (keys match case-insensitively). */
  map: z.record(z.string(), scalar).optional(),
  /** What a value missing from `map` does (default `error`). */
  on_miss: z.enum(ON_MISS).optional(),
  /** The conversion of the (mapped) text into the request's type. */
  type: z.enum(CONVERSION_TYPES).optional(),
  /** Source format of a `date` or `timestamp`, e.g. `MM/DD/YYYY`, `YYYY-MM-DD HH:mm:ss`, `iso`, `epoch`. */
  format: z.string().min(1).optional(),
  /**
   * Time zone of a `timestamp` without an offset: `UTC` (default), an IANA name or `+05:30`; or
   * read from the data: `{ column: tz }` (or `path:`), with a `default:` zone for empty values.
   */
  zone: z.union([
    z.string().min(1),
    z.strictObject({
      column: z.string().min(1).optional(),
      path: z.string().min(1).optional(),
      default: z.string().min(1).optional(),
    }),
  ]).optional(),
  /** Words read as `true` by `type: boolean` (replace the default list). */
  true: z.array(z.string()).min(1).optional(),
  /** Words read as `false` by `type: boolean` (replace the default list). */
  false: z.array(z.string()).min(1).optional(),
  /** Used when the source is empty (put into the request as written, no conversion). */
  default: scalar.optional(),
  /**
   * An empty source (and no default) makes the row invalid. `first`, in a group: only in the
   * group's first element (the primary driver, the first vehicle).
   */
  required: z.union([z.boolean(), z.literal('first')]).optional(),
});

/** A field: a column name (shorthand) or an object with one source and its conversions. */
export const FieldSpec = z.preprocess((value) => (typeof value === 'string' ? { column: value } : value), fieldObject);
export type FieldSpec = z.infer<typeof fieldObject>;

export interface GroupSpec {
  target: string;
  index?: string | undefined;
  start?: number | undefined;
  count?: number | undefined;
  each?: string | undefined;
  key: string;
  fields: Record<string, FieldSpec>;
  groups?: GroupSpec[] | undefined;
}

export const GroupSpec: z.ZodType<GroupSpec> = z.lazy(() =>
  z.strictObject({
    /** The request array the group fills, e.g. `application.drivers` (relative inside a group). */
    target: z.string().min(1),
    /** Index variable for numbered columns (`n` in `driver{n}_dob`). */
    index: z.string().regex(/^[a-z]\w*$/, { error: 'expected a short lower-case name such as n' }).optional(),
    /** First value of the index (default 1). */
    start: z.number().int().nonnegative().optional(),
    /** How many numbered groups the file has (driver1…driverN: count N). */
    count: z.number().int().positive().max(1000).optional(),
    /** (NDJSON) a source array: one request element per source element. */
    each: z.string().min(1).optional(),
    /** The column (or, with `each`, the path in the element) that must have a value for the group to exist. */
    key: z.string().min(1),
    /** Request paths relative to one element, and their sources. */
    fields: z.record(z.string(), FieldSpec),
    /** Nested groups, e.g. a driver's incidents. */
    groups: z.array(GroupSpec).optional(),
  }),
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
  row_key: z
    .preprocess(
      (value) => (typeof value === 'string' ? { paths: [value] } : Array.isArray(value) ? { paths: value } : value),
      fieldObject.extend({ paths: z.array(z.string().min(1)).min(1).optional() }),
    )
    .optional(),
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
});
export type MappingFile = z.infer<typeof MappingFile>;

/** Keys allowed in each kind of object, for did-you-mean hints on unknown keys. */
export const ALLOWED_KEYS = {
  field: Object.keys(fieldObject.shape),
  group: ['target', 'index', 'start', 'count', 'each', 'key', 'fields', 'groups'],
  top: Object.keys(MappingFile.shape),
  input: ['format', 'delimiter'],
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
  mapping: 'request paths go under `fields:`',
};
