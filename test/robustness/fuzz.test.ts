/**
 * Bad-input suite, the fuzzing half (issue item 5): seeded fast-check properties on the mapping
 * compiler and on the NDJSON reader, adding to test/input/property.test.ts (CSV content, chunk
 * boundaries). Random mapping text and random mapping objects either compile or raise
 * QuoteBatchError('E_MAPPING'); random records through a compiled mapping never throw.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { QuoteBatchError } from '../../src/errors.js';
import { openInput } from '../../src/input/index.js';
import { compileMapping, type CompiledMapping } from '../../src/mapping/index.js';
import { REPO_ROOT } from '../helpers/cli.js';
import { useTempDir } from '../helpers/temp-dir.js';

const EXAMPLE_CSV = readFileSync(join(REPO_ROOT, 'mappings', 'example-csv.yaml'), 'utf8');
const EXAMPLE_NDJSON = readFileSync(join(REPO_ROOT, 'mappings', 'example-ndjson.yaml'), 'utf8');

/** Compiles, accepting only success or an E_MAPPING QuoteBatchError. */
function compileOrMappingError(text: string): CompiledMapping | undefined {
  try {
    return compileMapping(text, 'fuzz.yaml');
  } catch (error) {
    if (!(error instanceof QuoteBatchError) || error.code !== 'E_MAPPING') throw error;
    expect(error.message.length).toBeGreaterThan(0);
    return undefined;
  }
}

const REQUEST_PATHS = [
  'channel.channel_id', 'tracking.click_id', 'channel.channel_lead_id', 'application.drivers[0].name.first_name',
  'application.drivers[0].dob', 'application.drivers[0].gender', 'application.vehicles[0].year', 'application.vehicles[0].vin',
  'application.effective_date', 'compliance.tcpa_consent', 'pricing.lead_price', 'no.such.path', '', 'application.drivers',
  'application.drivers[99999999999].dob', '__proto__.polluted', 'constructor.prototype.x',
];
const WORDS = ['a', 'col', 'driver{n}_dob', '{n}', '{x}', 'MM/DD/YYYY', 'YYYY-MM-DD HH:mm:ss', 'iso', 'epoch', 'UTC', '+05:30', 'Mars/Phobos', '', ' ', '__proto__', 'é', '😀', 'x'.repeat(300)];
const scalar = fc.oneof(fc.constantFrom(...WORDS), fc.string({ maxLength: 12 }), fc.integer(), fc.double(), fc.boolean(), fc.constant(null));
const fieldSpec = fc.oneof(
  fc.constantFrom(...WORDS),
  fc.record(
    {
      column: fc.constantFrom(...WORDS), literal: scalar, template: fc.constantFrom('{a} {b}', '{', '}', '{{}}', 'x{n}y'),
      path: fc.constantFrom('a.b', 'a[0]', 'a[-1]', '[', '$.x'), pass: fc.constantFrom('a', 'a.b'),
      trim: fc.boolean(), case: fc.constantFrom('upper', 'lower', 'title'),
      map: fc.dictionary(fc.constantFrom('M', 'F', '', '__proto__'), scalar, { maxKeys: 3 }),
      on_miss: fc.constantFrom('error', 'keep', 'default', 'omit', 'explode'),
      type: fc.constantFrom('string', 'digits', 'integer', 'decimal', 'boolean', 'date', 'timestamp', 'money'),
      format: fc.constantFrom(...WORDS), zone: fc.constantFrom(...WORDS),
      true: fc.array(fc.constantFrom('Y', 'yes', ''), { maxLength: 2 }), false: fc.array(fc.constantFrom('N', 'no'), { maxLength: 2 }),
      default: scalar, required: fc.boolean(), bogus: scalar,
    },
    { requiredKeys: [] },
  ),
  scalar,
);
const fields = fc.dictionary(fc.constantFrom(...REQUEST_PATHS), fieldSpec, { maxKeys: 6 });
const group = fc.letrec((tie) => ({
  group: fc.record(
    {
      target: fc.constantFrom('application.drivers', 'application.vehicles', 'incidents', 'nothing', ''),
      index: fc.constantFrom('n', 'm', 'N', '1'), start: fc.oneof(fc.integer({ min: -2, max: 3 }), scalar),
      count: fc.oneof(fc.integer({ min: -1, max: 5 }), fc.constant(100000)), each: fc.constantFrom('drivers', 'vehicles[0]'),
      key: fc.constantFrom(...WORDS), fields: fc.dictionary(fc.constantFrom('dob', 'name.first_name', 'year', 'vin', 'x'), fieldSpec, { maxKeys: 3 }),
      groups: fc.array(tie('group'), { maxLength: 1 }),
    },
    { requiredKeys: ['target'] },
  ),
})).group;
const mappingObject = fc.record(
  {
    version: fc.oneof(fc.constant(1), scalar),
    description: scalar,
    input: fc.oneof(fc.record({ format: fc.constantFrom('csv', 'tsv', 'ndjson', 'xml'), delimiter: fc.constantFrom(',', ';', '', ',,') }, { requiredKeys: [] }), scalar),
    row_key: fc.oneof(fc.constantFrom(...REQUEST_PATHS), fc.array(fc.constantFrom(...REQUEST_PATHS), { maxLength: 2 }), fieldSpec),
    agent: fc.oneof(fc.record({ email: fieldSpec, id_path: fc.constantFrom(...REQUEST_PATHS) }, { requiredKeys: [] }), scalar),
    fields: fc.oneof(fields, scalar),
    groups: fc.oneof(fc.array(group, { maxLength: 2 }), scalar),
  },
  { requiredKeys: [] },
);

/** A random value such as a CSV cell or an NDJSON member could hold. */
const cell = fc.oneof(
  fc.constantFrom('', ' ', 'M', 'F', 'X', 'Y', 'N', 'maybe', '13/45/1990', '01/02/1990', '1990-01-02', '20O8', '2015', '-1', '1e400', 'NaN', '(212) 555-0101', 'a@b.co', '__proto__', '\uFFFD', 'x'.repeat(5000)),
  fc.string({ maxLength: 20 }),
);
const ndjsonValue = fc.oneof(cell, fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.array(cell, { maxLength: 3 }), fc.dictionary(fc.string({ maxLength: 5 }), cell, { maxKeys: 3 }));

describe('mapping compiler (fuzz)', () => {
  it('random mutations of the example mappings compile or fail with E_MAPPING', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(EXAMPLE_CSV, EXAMPLE_NDJSON),
        fc.array(fc.tuple(fc.nat(), fc.nat({ max: 40 }), fc.constantFrom('', ':', ' ', '\n', '  - ', '{', '}', '[', ']', '"', "'", '#', '&a', '*a', '!!binary', '\t', 'x', '{n}', '0', '-')), { minLength: 1, maxLength: 6 }),
        (base, edits) => {
          let text = base;
          for (const [at, cut, insert] of edits) {
            const i = at % (text.length + 1);
            text = text.slice(0, i) + insert + text.slice(i + cut);
          }
          compileOrMappingError(text);
        },
      ),
      { numRuns: 1000, seed: 20250101 },
    );
  }, 120_000);

  it('random mapping objects compile or fail with E_MAPPING', () => {
    fc.assert(
      fc.property(mappingObject, (object) => {
        compileOrMappingError(stringify(object));
      }),
      { numRuns: 3000, seed: 20250102 },
    );
  }, 120_000);

  it('random text compiles or fails with E_MAPPING', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200, unit: 'binary' }), (text) => {
        compileOrMappingError(text);
      }),
      { numRuns: 2000, seed: 20250103 },
    );
  });

  it('an empty or comment-only mapping file is an E_MAPPING error, not a crash', () => {
    for (const text of ['', '# only a comment\n', '\n\n', '---\n']) {
      expect(() => compileMapping(text, 'empty.yaml')).toThrow(QuoteBatchError);
      try {
        compileMapping(text, 'empty.yaml');
      } catch (error) {
        expect((error as QuoteBatchError).code).toBe('E_MAPPING');
      }
    }
  });

  it('random records through the example mappings and through random valid mappings never throw', () => {
    const csv = compileMapping(EXAMPLE_CSV, 'example-csv.yaml');
    const ndjson = compileMapping(EXAMPLE_NDJSON, 'example-ndjson.yaml');
    const csvRecord = fc.dictionary(fc.constantFrom(...csv.sourceColumns.slice(0, 60), '__proto__', 'extra'), cell, { maxKeys: 40 });
    const ndjsonRecord = fc.dictionary(fc.constantFrom('click_id', 'lead_id', 'agent', 'drivers', 'vehicles', 'contact', 'marketing', '__proto__', 'x'), ndjsonValue, { maxKeys: 9 });
    const compiledMappings = fc.array(mappingObject, { minLength: 50, maxLength: 50 });
    let compiled: CompiledMapping[] = [];
    // Some random mappings compile: map records through those too.
    fc.assert(fc.property(compiledMappings, (objects) => {
      compiled = objects.map((o) => compileOrMappingError(stringify(o))).filter((m): m is CompiledMapping => m !== undefined);
    }), { numRuns: 1, seed: 20250104 });
    fc.assert(
      fc.property(csvRecord, ndjsonRecord, fc.integer({ min: 1, max: 1_000_000 }), (a, b, rowNumber) => {
        for (const [mapping, record] of [[csv, a], [ndjson, b], ...compiled.map((m) => [m, a] as const)] as const) {
          const mapped = mapping.mapRow(record, rowNumber);
          expect(mapped.rowNumber).toBe(rowNumber);
          expect(typeof mapped.rowKey).toBe('string');
          expect(Array.isArray(mapped.errors)).toBe(true);
          // Serialisable as it would be sent or stored.
          expect(typeof JSON.stringify(mapped.request)).toBe('string');
        }
      }),
      { numRuns: 2000, seed: 20250105 },
    );
    expect(Object.prototype).not.toHaveProperty('polluted');
  }, 120_000);
});

describe('NDJSON reader on random content (property)', () => {
  const temp = useTempDir('quote-batch-ndjson-fuzz-', { per: 'file' });

  it('never crashes or hangs: every item is a record or an error naming its line, numbered 1..n', async () => {
    const pieces = [
      '{', '}', '[', ']', '"', ':', ',', '\n', '\r\n', '\r', ' ', 'a', '1', 'null', 'true', '{"a":1}', '{"b":"x"}', '\\', '\\u00', 'é', '😀',
    ].map((t) => Buffer.from(t)).concat([Buffer.from([0xff]), Buffer.from([0xc3]), Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from([0])]);
    let counter = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom(...pieces), { maxLength: 200 }), fc.option(fc.integer({ min: 1, max: 40 }), { nil: undefined }), async (parts, maxRecordBytes) => {
        counter += 1;
        const path = temp.path(`random-${counter}.ndjson`);
        writeFileSync(path, Buffer.concat(parts));
        const reader = await openInput(path, { maxRecordBytes });
        let n = 0;
        let lastLine = 0;
        for await (const item of reader) {
          n += 1;
          expect(n).toBeLessThan(10_000);
          expect(item.rowNumber).toBe(n);
          expect(item.line).toBeGreaterThan(lastLine);
          lastLine = item.line;
          if (item.kind === 'error') expect(item.message.startsWith(`line ${item.line}: `)).toBe(true);
          else expect(typeof item.record).toBe('object');
        }
      }),
      { numRuns: 1000, seed: 20250106 },
    );
  }, 120_000);
});
