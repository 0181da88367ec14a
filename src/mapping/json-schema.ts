/**
 * The mapping file's JSON Schema, for editors (the YAML language server underlines a typo while the
 * mapping is written): generated from the zod schema the loader checks files with (`_schema.ts`),
 * and shipped as `schema/mapping.schema.json`, which `npm run schema` rewrites and a test keeps
 * equal to this. `init` points its drafts at it with a `# yaml-language-server: $schema=` line.
 *
 * What only the loader can tell (a request path that does not exist, a column the file lacks, a
 * format token twice, `on_miss: default` without a default) is not in the schema: `check` says it.
 */
import { dirname, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { listRequestLeaves } from './_request-paths.js';
import { FieldSpec, MappingFile, RowKeySpec } from './_schema.js';

/** Where the package keeps the schema, from this module (src/mapping, dist/mapping or dist/bundle: two levels below the package). */
export const MAPPING_SCHEMA_FILE = fileURLToPath(new URL('../../schema/mapping.schema.json', import.meta.url));

/** The JSON Schema (draft 2020-12) of a mapping file. */
export function mappingJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(MappingFile, {
    io: 'input',
    target: 'draft-2020-12',
    unrepresentable: 'any',
    override: (ctx) => {
      // The shorthands the loader reads before zod sees them (a column name, a list of request paths).
      const json = ctx.jsonSchema as Record<string, unknown>;
      if (ctx.zodSchema === FieldSpec) replaceWith(json, { $ref: '#/$defs/source' });
      else if (ctx.zodSchema === RowKeySpec) {
        replaceWith(json, {
          anyOf: [
            { type: 'string', minLength: 1, description: 'A request path, e.g. tracking.click_id.' },
            { type: 'array', items: { type: 'string', minLength: 1 }, minItems: 1, description: 'Request paths tried in order.' },
            { ...json },
          ],
        });
      }
    },
  }) as Record<string, unknown>;
  const defs = schema.$defs as Record<string, unknown>;
  defs.source = { anyOf: [COLUMN_NAME, { $ref: '#/$defs/field' }], description: 'A column name, or a field with one source and its conversions.' };
  // The top level's fields are request paths: the known ones are offered, and a typo is underlined.
  const fields = (schema.properties as Record<string, Record<string, unknown>>).fields as Record<string, unknown>;
  fields.propertyNames = {
    pattern: requestPathPattern(),
    patternErrorMessage: 'not a QuoteRequest path (docs/mapping.md, "QuoteRequest paths"; a list element is written [0])',
  };
  fields.properties = Object.fromEntries(listRequestLeaves().map((leaf) => [leaf.path.replaceAll('[]', '[0]'), { $ref: '#/$defs/source' }]));
  return {
    $schema: schema.$schema,
    title: 'quote-batch mapping',
    description: 'How each row of a lead file becomes the partner\'s QuoteRequest (docs/mapping.md).',
    ...Object.fromEntries(Object.entries(schema).filter(([key]) => key !== '$schema')),
  };
}

interface PathNode {
  array: boolean;
  /** An open object (`application.ubi`): any member below it. */
  open: boolean;
  children: Map<string, PathNode>;
}

/**
 * Every path a top-level field may name, as one regex: a leaf of the QuoteRequest or an object above
 * one (filled whole by `pass:` or a `literal:`), lists written with an index (`drivers[0]`).
 */
export function requestPathPattern(): string {
  const root = new Map<string, PathNode>();
  for (const leaf of listRequestLeaves()) {
    let level = root;
    const segments = leaf.path.split('.');
    segments.forEach((segment, i) => {
      const array = segment.endsWith('[]');
      const name = array ? segment.slice(0, -2) : segment;
      let node = level.get(name);
      if (node === undefined) {
        node = { array, open: false, children: new Map() };
        level.set(name, node);
      }
      if (i === segments.length - 1 && leaf.kind === 'object') node.open = true;
      level = node.children;
    });
  }
  const alternatives = (level: Map<string, PathNode>): string => [...level].map(([name, node]) => {
    const below = node.open ? '(?:\\..+)?' : node.children.size > 0 ? `(?:\\.(?:${alternatives(node.children)}))?` : '';
    return node.array ? `${name}(?:\\[\\d+\\]${below})?` : `${name}${below}`;
  }).join('|');
  return `^(?:${alternatives(root)})$`;
}

const COLUMN_NAME = { type: 'string', minLength: 1, description: 'A column name (or, in NDJSON, a top-level key): the field\'s source, as it is.' };

function replaceWith(target: Record<string, unknown>, value: Record<string, unknown>): void {
  for (const key of Object.keys(target)) Reflect.deleteProperty(target, key);
  Object.assign(target, value);
}

/** The schema file's text as written to `schema/mapping.schema.json`. */
export function mappingJsonSchemaText(): string {
  return `${JSON.stringify(mappingJsonSchema(), null, 2)}\n`;
}

/**
 * The `$schema=` reference a mapping written at `mappingPath` gives its editor: the shipped schema,
 * relative to the mapping's directory (POSIX separators, as the YAML language server reads them).
 */
export function schemaReferenceFrom(mappingPath: string): string {
  const path = relative(dirname(mappingPath), MAPPING_SCHEMA_FILE).split(sep).join('/');
  return path.startsWith('.') ? path : `./${path}`;
}
