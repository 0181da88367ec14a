/**
 * The mapping file's JSON Schema (schema/mapping.schema.json, for editors): it is the one generated
 * from the loader's zod schema, it accepts every mapping the project ships and every example of
 * docs/mapping.md, and it rejects the docs' examples of mistakes, as the loader does.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { compileMapping } from '../../src/mapping/index.js';
import { MAPPING_SCHEMA_FILE, mappingJsonSchemaText } from '../../src/mapping/json-schema.js';

const ROOT = join(import.meta.dirname, '..', '..');

const ajv = new Ajv2020({ allErrors: true });
// The YAML language server's own keywords: messages in the words `check` uses.
ajv.addVocabulary(['errorMessage', 'patternErrorMessage']);
const schema = JSON.parse(readFileSync(MAPPING_SCHEMA_FILE, 'utf8')) as Record<string, unknown>;
const validate = ajv.compile(schema);

function schemaErrors(content: unknown): string[] {
  return validate(content) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ''}`);
}

/** The YAML blocks of a Markdown file, each with the line it starts at. */
function yamlBlocks(file: string): { line: number; text: string }[] {
  const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
  const blocks: { line: number; text: string }[] = [];
  for (let i = 0; i < lines.length; i += 1) {
    if (lines[i]?.trim() !== '```yaml') continue;
    const start = i + 1;
    const indent = /^\s*/.exec(lines[i] ?? '')?.[0].length ?? 0;
    let j = start;
    while (j < lines.length && lines[j]?.trim() !== '```') j += 1;
    blocks.push({ line: start + 1, text: lines.slice(start, j).map((l) => l.slice(indent)).join('\n') });
    i = j;
  }
  return blocks;
}

/** A docs example as a whole mapping file: examples show a part (`fields:`, `groups:`), the rest is the least a file needs. */
function asMappingFile(text: string): Record<string, unknown> {
  const content = parse(text) as Record<string, unknown>;
  return { version: 1, fields: {}, ...content };
}

const MISTAKE = /^# a mistake: /;
const docsBlocks = yamlBlocks('docs/mapping.md');

describe('the mapping JSON Schema', () => {
  it('is the one generated from the loader\'s schema (run `npm run schema` after changing src/mapping/_schema.ts)', () => {
    expect(readFileSync(MAPPING_SCHEMA_FILE, 'utf8')).toBe(mappingJsonSchemaText());
  });

  const shipped = [
    ...readdirSync(join(ROOT, 'mappings')).filter((f) => f.endsWith('.yaml')).map((f) => `mappings/${f}`),
    ...readdirSync(join(ROOT, 'test/fixtures/mapping')).filter((f) => f.endsWith('.yaml') && !f.startsWith('bad-')).map((f) => `test/fixtures/mapping/${f}`),
    ...readdirSync(join(ROOT, 'test/fixtures/mapping/layouts')).filter((f) => f.endsWith('.yaml')).map((f) => `test/fixtures/mapping/layouts/${f}`),
    'bench/mappings/leads-100.yaml',
  ];
  it.each(shipped)('accepts %s', (file) => {
    expect(schemaErrors(parse(readFileSync(join(ROOT, file), 'utf8')))).toEqual([]);
  });

  const examples = docsBlocks.filter((b) => !MISTAKE.test(b.text));
  it('docs/mapping.md has examples and examples of mistakes', () => {
    expect(examples.length).toBeGreaterThan(25);
    expect(docsBlocks.filter((b) => MISTAKE.test(b.text)).length).toBeGreaterThanOrEqual(6);
  });

  it.each(examples.map((b) => [b.line, b.text] as const))('accepts the docs example at line %i, which the loader loads too', (_line, text) => {
    const content = asMappingFile(text);
    expect(schemaErrors(content)).toEqual([]);
    expect(() => compileMapping(JSON.stringify(content), 'docs-example.yaml')).not.toThrow();
  });

  it.each(docsBlocks.filter((b) => MISTAKE.test(b.text)).map((b) => [b.line, b.text] as const))('rejects the docs example of a mistake at line %i, as the loader does', (_line, text) => {
    const content = asMappingFile(text);
    expect(schemaErrors(content)).not.toEqual([]);
    expect(() => compileMapping(JSON.stringify(content), 'docs-example.yaml')).toThrow(/invalid mapping/);
  });

  it.each([
    ['bad-unknown-key', /must NOT have additional properties/],
    ['bad-unknown-transform', /must NOT have additional properties/],
    ['bad-unknown-type', /must be equal to one of the allowed values/],
    ['bad-bad-date-format', /must match pattern/],
    ['bad-unknown-target-path', /property name must be valid/],
    ['bad-missing-version', /must have required property 'version'/],
    ['bad-group-without-key', /must have required property 'key'/],
    ['bad-two-sources', /^$/],
  ])('the loader\'s fixture %s: %s', (name, message) => {
    const errors = schemaErrors(parse(readFileSync(join(ROOT, `test/fixtures/mapping/${name}.yaml`), 'utf8')));
    // Two sources in one field is a mistake only the loader can tell.
    if (message.source === '^$') expect(errors).toEqual([]);
    else expect(errors.join('\n')).toMatch(message);
  });

  it('carries check\'s words where a schema can: the types, the format tokens, request paths', () => {
    const field = (schema.$defs as Record<string, { properties: Record<string, Record<string, unknown>> }>).field?.properties ?? {};
    expect(field.type?.errorMessage).toMatch(/^unknown type: expected one of string, digits, integer, decimal, money, limit/);
    expect(field.format?.patternErrorMessage).toMatch(/tokens are YYYY, YY, MMMM, MMM/);
    const fields = (schema.properties as Record<string, Record<string, Record<string, unknown>>>).fields;
    expect(fields?.propertyNames?.patternErrorMessage).toMatch(/^not a QuoteRequest path/);
    const pattern = new RegExp(String(fields?.propertyNames?.pattern));
    for (const path of ['tracking.click_id', 'application.drivers[2].dob', 'application.drivers[0].incident_history[1].is_at_fault', 'application.ubi.score', 'tracking']) {
      expect(path).toMatch(pattern);
    }
    for (const path of ['tracking.clik_id', 'application.drivers.dob', 'application.driver[0].dob']) expect(path).not.toMatch(pattern);
  });
});
