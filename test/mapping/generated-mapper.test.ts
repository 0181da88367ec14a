import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileMapping, type CompiledMapping } from '../../src/mapping/index.js';

const ROOT = join(import.meta.dirname, '..', '..');

/** The same mapping twice: the generated code (the default) and the interpreted reference. */
function compileBoth(text: string): { generated: CompiledMapping; reference: CompiledMapping } {
  return {
    generated: compileMapping(text, 'test.yaml'),
    reference: compileMapping(text, 'test.yaml', { reference: true }),
  };
}

function expectSameRow(both: ReturnType<typeof compileBoth>, record: Record<string, unknown>, rowNumber: number): void {
  const generated = both.generated.mapRow(record, rowNumber);
  const reference = both.reference.mapRow(record, rowNumber);
  expect(generated).toEqual(reference);
}

/** Values that take every branch of a field: good, bad, empty, padded, wrong case, codes in and out of tables. */
const cellValue = fc.oneof(
  fc.constantFrom('', ' ', '  Y ', 'n', 'maybe', 'M', 'f', 'x', 'OWN', 'rent', 'zzz', 'HS', 'PHD', '02/03/1980', '13/45/1990',
    '02/29/2024', '02/29/2023', '2026-03-01 13:57:14', '2026-03-08 02:30:00', '2026-11-01 01:30:00', '12,000', '20O8', '$12.50',
    '-3', '(212) 555-0123', '21255501', '1FAFP34N05W123456', 'tx', 'TX', 'single', 'complicated', 'ACC', 'acc', '500', '5000'),
  fc.string({ maxLength: 12 }),
);

/** A record for `columns`: each column gets a value, or (sometimes) is missing altogether. */
function recordOf(columns: readonly string[]): fc.Arbitrary<Record<string, unknown>> {
  return fc.array(fc.option(cellValue, { freq: 8, nil: undefined }), { minLength: columns.length, maxLength: columns.length })
    .map((values) => {
      const record: Record<string, unknown> = {};
      columns.forEach((column, i) => {
        if (values[i] !== undefined) record[column] = values[i];
      });
      return record;
    });
}

describe('the generated mapper', () => {
  it('maps the example CSV mapping exactly as the reference does, on sample rows and random rows', () => {
    const text = readFileSync(join(ROOT, 'mappings', 'example-csv.yaml'), 'utf8');
    const both = compileBoth(text);
    const records = parse(readFileSync(join(ROOT, 'samples', 'leads.csv')), { columns: true, relax_column_count: true }) as Record<string, string>[];
    records.forEach((record, i) => expectSameRow(both, record, i + 1));
    // Sample rows with a few cells replaced: mostly valid rows that break in one place.
    const sample = fc.constantFrom(...records.slice(0, 50));
    const columns = both.generated.sourceColumns;
    fc.assert(
      fc.property(sample, fc.array(fc.tuple(fc.constantFrom(...columns), cellValue), { maxLength: 4 }), fc.nat(1000), (record, changes, n) => {
        const changed: Record<string, unknown> = { ...record };
        for (const [column, value] of changes) changed[column] = value;
        expectSameRow(both, changed, n + 1);
      }),
      { numRuns: 300 },
    );
    fc.assert(fc.property(recordOf(columns), fc.nat(1000), (record, n) => expectSameRow(both, record, n + 1)), { numRuns: 200 });
  });

  it('agrees with the reference on every construct: defaults, required, on_miss, trim, case, known words, late fields', () => {
    const both = compileBoth(`version: 1
row_key: { template: "{a}-{b}" }
agent: { email: mail }
fields:
  channel.channel_id: { column: a, default: fallback-channel }
  channel.integration_type: { column: b, case: lower }
  application.drivers[0].name.first_name: { column: a, trim: false }
  application.drivers[0].name.last_name: { column: b, required: true }
  application.drivers[0].dob: { column: c, type: date, format: MM/DD/YYYY, required: true }
  application.drivers[0].gender: { column: d, map: { M: male, F: female } }
  application.drivers[0].marital_status: { column: e, map: { S: single, M: married }, on_miss: keep }
  application.drivers[0].residence.type: { column: d, map: { OWN: own_home, RENT: rent }, on_miss: default, default: other }
  application.drivers[0].education: { column: e, map: { HS: high_school }, on_miss: omit, required: true }
  application.drivers[0].student_profile.is_good_student: { column: a, type: boolean, true: [honor roll], false: [no] }
  application.vehicles[0].vin: { column: f, case: upper }
  application.vehicles[0].make: { literal: Ford }
  application.vehicles[0].model: { template: "{a} {b}" }
  application.vehicles[0].year: { column: g, type: integer, default: 2015 }
  application.vehicles[0].usage.annual_mileage: { column: g, type: integer }
  application.vehicles[0].is_ride_sharing: { column: h, map: { R: true, N: false } }
  pricing.lead_price: { column: h, type: decimal }
  pricing.currency: { column: c, case: upper }
  compliance.consent_timestamp: { column: h, type: timestamp, format: "YYYY-MM-DD HH:mm:ss", zone: America/New_York }
  tracking.click_id: { column: b, type: digits }
groups:
  - target: application.drivers
    index: n
    count: 2
    start: 2
    key: d{n}
    fields:
      name.middle_name: d{n}
      name.suffix: { column: "e{n}", case: upper }
      prior_insurance.effective_date: { column: c, type: date, format: D.M.YY }
      relation_to_pni: { column: "e{n}", map: { S: spouse }, on_miss: keep }
    groups:
      - target: incident_history
        index: m
        count: 2
        key: "i{n}{m}"
        fields:
          code: { column: "i{n}{m}", case: upper }
          incident_date: { column: c, type: date, format: MM/DD/YYYY, required: true }
          is_at_fault: { column: h, type: boolean, default: false }
`);
    const columns = both.generated.sourceColumns;
    expect(columns.length).toBeGreaterThan(10);
    fc.assert(fc.property(recordOf(columns), fc.nat(1000), (record, n) => expectSameRow(both, record, n + 1)), { numRuns: 1000 });
  });

  it('agrees with the reference on the vendor constructs: empty words, codes that send nothing, money, limits, month names, pipes, several key columns', () => {
    const both = compileBoth(`version: 1
defaults: { empty: ["N/A"], zone: America/Chicago }
fields:
  channel.channel_id: { literal: acme }
  application.drivers[0].gender: { column: d, map: { M: male, F: female, X: null } }
  application.drivers[0].education: { column: e, map: { HS: high_school, "?": null }, required: true }
  application.drivers[0].marital_status: { column: e, map: { S: single, U: null }, default: single, empty: ["-"] }
  pricing.lead_price: { column: h, type: money }
  pricing.bid_price: { column: g, type: money, decimal_mark: "," }
  application.coverage.policy_coverage.bi: { column: b, type: limit }
  application.coverage.policy_coverage.med: { template: "{h | digits}_per_person" }
  tracking.campaign_name: { template: "{a | upper} {g | limit}" }
  application.effective_date: { column: c, type: date, format: DD-MMM-YY, pivot_year: 1940 }
  compliance.consent_timestamp: { column: c, type: timestamp, format: "MMM D, YYYY h:mm A" }
groups:
  - target: application.drivers
    index: n
    count: 2
    start: 2
    key: ["d{n}", "e{n}"]
    fields:
      name.first_name: d{n}
      name.last_name: { column: "e{n}", empty: [N/A, "?"] }
      dob: { column: c, type: date, format: DD-MMM-YYYY }
`);
    const columns = both.generated.sourceColumns;
    const vendorValue = fc.oneof(cellValue, fc.constantFrom('N/A', 'n/a', '-', '?', 'X', 'U', '$1,234.50', '1.234,50 €', '100,000/300,000', '$25,000',
      '05-Mar-88', '05-Mar-1988', 'mar 5, 2026 1:05 pm', 'Sep 30, 2026 12:00 AM'));
    const record = fc.array(fc.option(vendorValue, { freq: 8, nil: undefined }), { minLength: columns.length, maxLength: columns.length })
      .map((values) => Object.fromEntries(columns.flatMap((column, i) => (values[i] === undefined ? [] : [[column, values[i]]]))));
    fc.assert(fc.property(record, fc.nat(1000), (r, n) => expectSameRow(both, r, n + 1)), { numRuns: 1000 });
  });

  it('agrees with the reference on NDJSON records (paths, each groups, pass-through)', () => {
    const both = compileBoth(readFileSync(join(ROOT, 'mappings', 'example-ndjson.yaml'), 'utf8'));
    const lines = readFileSync(join(ROOT, 'samples', 'leads.ndjson'), 'utf8').split('\n').filter((line) => line.startsWith('{'));
    let compared = 0;
    for (const [i, line] of lines.entries()) {
      let record: Record<string, unknown>;
      try {
        record = JSON.parse(line) as Record<string, unknown>;
      } catch {
        continue; // the sample's deliberately broken line
      }
      expectSameRow(both, record, i + 1);
      // The same record with one top-level value replaced by something of another type.
      for (const [key, value] of Object.entries(record).slice(0, 8)) {
        for (const bad of [null, 7, true, '', ' x ', [], { a: 1 }]) {
          if (bad === value) continue;
          expectSameRow(both, { ...record, [key]: bad }, i + 1);
          compared += 1;
        }
      }
    }
    expect(compared).toBeGreaterThan(1000);
  });
});
