/**
 * The constructs a vendor's export needs beyond the basics (docs/mapping.md): conversions inside
 * templates, value tables that send nothing, group keys of several columns and the warning for a
 * group element left out, the mapping's `defaults:`, and what the loader refuses about them. Each
 * mapping is run both by the generated code and by the interpreted reference.
 */
import { describe, expect, it } from 'vitest';
import { compileError } from './_compile-error.js';
import { compileMapping, formatRowIssue, type MappedRow } from '../../src/mapping/index.js';
import { minimalRequestFields } from '../fixtures/mapping/minimal-request.js';

const BASE = { first: 'Ann', last: 'Example', dob: '02/03/1980', vin: '1FAFP34N05W123456' };

/** Maps one record with the generated mapper, and checks the reference gives the same. */
function mapOne(text: string, record: Record<string, unknown>): MappedRow {
  const generated = compileMapping(text, 'test.yaml').mapRow(record, 7);
  const reference = compileMapping(text, 'test.yaml', { reference: true }).mapRow(record, 7);
  expect(generated).toEqual(reference);
  return generated;
}

function withFields(extra: string, top = ''): string {
  return `version: 1\n${top}\nfields:\n${minimalRequestFields('acme')}${extra}`;
}

const loadError = compileError;

function at(request: unknown, path: string): unknown {
  let node = request;
  for (const key of path.split(/\.|\[(\d+)\]/).filter((k) => k !== undefined && k !== '')) node = (node as Record<string, unknown> | undefined)?.[key];
  return node;
}

describe('conversions inside templates', () => {
  const text = withFields(`  application.coverage.policy_coverage.med: { template: "{Medical Payments | digits}_per_person" }
  application.coverage.policy_coverage.bi: { template: "{BI Limits | limit}" }
  tracking.campaign_name: { template: "{Campaign | upper} / {Budget | money}" }
`);

  it('each reference converts before it is written in', () => {
    const row = mapOne(text, { ...BASE, 'Medical Payments': '$5,000', 'BI Limits': '$100,000/$300,000', Campaign: 'spring', Budget: '$1,250.50' });
    expect(row.errors).toEqual([]);
    expect(at(row.request, 'application.coverage.policy_coverage')).toEqual({ med: '5000_per_person', bi: '100/300' });
    expect(at(row.request, 'tracking.campaign_name')).toBe('SPRING / 1250.5');
  });

  it('a value its conversion refuses is an error of the row naming the column and the value', () => {
    const row = mapOne(text, { ...BASE, 'Medical Payments': 'N/A', 'BI Limits': '', Campaign: '', Budget: '' });
    expect(row.errors.map((issue) => formatRowIssue(7, issue))).toEqual([
      'row 7: application.coverage.policy_coverage.med: expected digits, got "N/A" (column Medical Payments)',
    ]);
  });

  it('an unknown conversion is a mistake of the mapping, with a did-you-mean', () => {
    expect(loadError(withFields('  application.coverage.policy_coverage.med: { template: "{med | digit}_per_person" }\n')))
      .toMatch(/unknown conversion "digit" in the template reference "\{med \| digit\}"[\s\S]*did you mean "digits"\?/);
  });

  it('the decimal comma of the mapping applies to a template\'s money', () => {
    const row = mapOne(withFields('  tracking.campaign_name: { template: "{Budget | money}" }\n', 'defaults: { decimal_mark: "," }'), { ...BASE, Budget: '1.250,50 €' });
    expect(at(row.request, 'tracking.campaign_name')).toBe('1250.5');
  });
});

describe('money and limits as field types', () => {
  it('money into a number, limits into the partner\'s thousands', () => {
    const row = mapOne(withFields(`  pricing.lead_price: { column: price, type: money }
  application.coverage.policy_coverage.bi: { column: bi, type: limit }
  application.coverage.policy_coverage.pd: { column: pd, type: limit }
`), { ...BASE, price: '$1,234.50', bi: '100,000/300,000', pd: '$25,000' });
    expect(row.errors).toEqual([]);
    expect(at(row.request, 'pricing.lead_price')).toBe(1234.5);
    expect(at(row.request, 'application.coverage.policy_coverage')).toEqual({ bi: '100/300', pd: '25' });
  });

  it('a field\'s decimal_mark', () => {
    const row = mapOne(withFields('  pricing.lead_price: { column: price, type: money, decimal_mark: "," }\n'), { ...BASE, price: '1.234,50 €' });
    expect(at(row.request, 'pricing.lead_price')).toBe(1234.5);
  });

  it.each([
    ['  application.coverage.policy_coverage.pd: { column: pd, type: money }\n', /policy_coverage\.pd is text in the QuoteRequest: type money would send a number[\s\S]*type: limit/],
    ['  pricing.lead_price: { column: price, type: limit }\n', /pricing\.lead_price is a number in the QuoteRequest: type limit gives text[\s\S]*type: money/],
    ['  tracking.click_id: { column: c, decimal_mark: "," }\n', /`decimal_mark` only applies to `type: money`/],
    ['  tracking.click_id: { column: c, pivot_year: 1940 }\n', /`pivot_year` only applies to `type: date` or `type: timestamp`/],
    ['  application.effective_date: { column: e, type: date, format: DD-MMM-YYY }\n', /unknown token "YYY" in format "DD-MMM-YYY"[\s\S]*hint: the year is YYYY/],
  ])('refused when the mapping loads: %s', (fields, message) => {
    expect(loadError(withFields(fields))).toMatch(message);
  });
});

describe('value tables that send nothing', () => {
  const text = withFields(`  application.drivers[0].gender: { column: sex, map: { M: male, F: female, X: null, "N/A": ~ } }
  application.drivers[0].marital_status: { column: marital, map: { S: single, U: null }, default: single }
  application.drivers[0].education: { column: edu, map: { HS: high_school, "?": null }, required: true }
`);

  it('a code mapped to null leaves the field out, without a warning; a default fills it', () => {
    const row = mapOne(text, { ...BASE, sex: 'x', marital: 'U', edu: 'HS' });
    expect(row.errors).toEqual([]);
    expect(row.warnings).toEqual([]);
    expect(at(row.request, 'application.drivers[0].gender')).toBeUndefined();
    expect(at(row.request, 'application.drivers[0].marital_status')).toBe('single');
    expect(at(row.request, 'application.drivers[0].education')).toBe('high_school');
    expect(at(mapOne(text, { ...BASE, sex: 'N/A', marital: 'S', edu: 'HS' }).request, 'application.drivers[0].gender')).toBeUndefined();
  });

  it('a required field whose code sends nothing is an error naming the code', () => {
    const row = mapOne(text, { ...BASE, sex: 'F', marital: 'S', edu: '?' });
    expect(row.errors.map((issue) => formatRowIssue(7, issue))).toEqual([
      'row 7: application.drivers[0].education: required, but the value table sends nothing for this code, got "?" (column edu)',
    ]);
  });
});

describe('texts that mean no value', () => {
  const text = withFields(`  application.drivers[0].marital_status: { column: marital, empty: ["N/A", "-"], map: { S: single, M: married } }
  application.drivers[0].education: { column: edu, empty: [N/A], default: other }
  application.coverage.policy_coverage.med: { template: "{med | money}_per_person", empty: [N/A] }
  application.effective_date: { column: eff, type: date, format: DD-MMM-YYYY }
`, 'defaults: { empty: ["NULL"] }');

  it('a field\'s empty: words (any case) are an empty source: left out, or the default; in a template, an empty reference', () => {
    const row = mapOne(text, { ...BASE, marital: 'n/a', edu: 'N/A', med: 'N/A', eff: 'null' });
    expect(row.errors).toEqual([]);
    expect(row.warnings).toEqual([]);
    expect(at(row.request, 'application.drivers[0].marital_status')).toBeUndefined();
    expect(at(row.request, 'application.drivers[0].education')).toBe('other');
    expect(at(row.request, 'application.coverage')).toBeUndefined();
    // defaults.empty applies to a field that does not list its own.
    expect(at(row.request, 'application.effective_date')).toBeUndefined();
    const other = mapOne(text, { ...BASE, marital: '-', edu: 'HS', med: '$5,000', eff: '05-Mar-2026' });
    expect(at(other.request, 'application.drivers[0].marital_status')).toBeUndefined();
    expect(at(other.request, 'application.coverage.policy_coverage.med')).toBe('5000_per_person');
    expect(at(other.request, 'application.effective_date')).toBe('2026-03-05');
  });

  it('NULL unquoted is YAML\'s null: the loader says to quote it', () => {
    expect(loadError(withFields('', 'defaults: { empty: [NULL] }'))).toMatch(/defaults > empty\[0\]: expected a string, got nothing[\s\S]*hint: YAML reads null, NULL, ~ and a missing value as nothing: quote the text, e\.g\. "NULL"/);
  });

  it('a group element whose other columns only say N/A is left out without a warning', () => {
    const group = `version: 1
fields:
  channel.channel_id: { literal: acme }
  application.vehicles[0].vin: vin
  application.vehicles[0].make: { literal: Ford }
  application.vehicles[0].model: { literal: Focus }
  application.vehicles[0].year: { literal: 2015 }
groups:
  - target: application.drivers
    index: n
    count: 2
    key: D{n} First
    fields:
      name.first_name: D{n} First
      name.last_name: { column: "D{n} Last", empty: [N/A] }
      dob: { column: "D{n} DOB", type: date, format: DD-MMM-YYYY, empty: [N/A] }
`;
    const mapped = mapOne(group, { vin: BASE.vin, 'D1 First': 'Ann', 'D1 Last': 'Example', 'D1 DOB': '05-Mar-1988', 'D2 First': '', 'D2 Last': 'N/A', 'D2 DOB': 'n/a' });
    expect(mapped.warnings).toEqual([]);
    expect(at(mapped.request, 'application.drivers')).toHaveLength(1);
  });
});

describe('group keys of several columns, and elements left out', () => {
  const text = `version: 1
fields:
  channel.channel_id: { literal: acme }
  application.vehicles[0].vin: vin
  application.vehicles[0].make: { literal: Ford }
  application.vehicles[0].model: { literal: Focus }
  application.vehicles[0].year: { literal: 2015 }
groups:
  - target: application.drivers
    index: n
    count: 3
    key: ["D{n} First", "D{n} Last"]
    fields:
      name.first_name: D{n} First
      name.last_name: D{n} Last
      dob: { column: "D{n} DOB", type: date, format: DD-MMM-YYYY }
      relation_to_pni: { literal: self }
`;
  const row = (values: Record<string, string>): MappedRow => mapOne(text, {
    vin: BASE.vin, 'D1 First': 'Ann', 'D1 Last': 'Example', 'D1 DOB': '05-Mar-1988',
    'D2 First': '', 'D2 Last': '', 'D2 DOB': '', 'D3 First': '', 'D3 Last': '', 'D3 DOB': '', ...values,
  });

  it('an element exists when any key column has a value', () => {
    const mapped = row({ 'D2 Last': 'Sample', 'D2 DOB': '01-Jan-1990' });
    expect(at(mapped.request, 'application.drivers[1]')).toEqual({ name: { last_name: 'Sample' }, dob: '1990-01-01', relation_to_pni: 'self' });
    // The QuoteRequest still wants the first name: the row says so, naming the column.
    expect(mapped.errors.map((issue) => formatRowIssue(7, issue))).toEqual([
      'row 7: application.drivers[1].name.first_name: required string, got nothing (column D2 First)',
    ]);
  });

  it('an element whose key columns are empty is left out, and the row warns when other columns of it had values', () => {
    const mapped = row({ 'D3 DOB': '01-Jan-1990' });
    expect(at(mapped.request, 'application.drivers')).toHaveLength(1);
    expect(mapped.errors).toEqual([]);
    expect(mapped.warnings.map((issue) => formatRowIssue(7, issue))).toEqual([
      'row 7: application.drivers: left out: its key D{n} First, D{n} Last is empty while other columns of it have values (columns D3 First, D3 Last, D3 DOB)',
    ]);
    // Empty elements (driver 2) and constants (relation_to_pni) do not warn.
    expect(row({}).warnings).toEqual([]);
  });

  it('NDJSON: an item whose key is empty but which has other fields', () => {
    const ndjson = `version: 1
fields:
  channel.channel_id: { literal: acme }
groups:
  - target: application.drivers
    each: people
    key: [name.given, name.family]
    fields:
      name.first_name: { path: name.given }
      name.last_name: { path: name.family }
      dob: { path: born, type: date, format: iso }
`;
    const mapped = mapOne(ndjson, { people: [{ name: { given: 'Ann', family: 'Example' }, born: '1980-02-03' }, { name: {}, born: '1990-01-01' }] });
    expect(at(mapped.request, 'application.drivers')).toHaveLength(1);
    expect(mapped.warnings.map((issue) => formatRowIssue(7, issue))).toEqual([
      'row 7: application.drivers: left out: its key name.given, name.family is empty while other fields of it have values (fields people[1].name.given, people[1].name.family, people[1].born)',
    ]);
  });

  it('each key of a numbered group must name its index', () => {
    expect(loadError(text.replace('key: ["D{n} First", "D{n} Last"]', 'key: ["D{n} First", "Last"]'))).toMatch(/the key "Last" does not contain \{n\}/);
  });
});

describe('the mapping\'s defaults', () => {
  it('zone, pivot_year and decimal_mark apply to every field that does not say', () => {
    const text = withFields(`  compliance.consent_timestamp: { column: at, type: timestamp, format: DD-MMM-YY HH:mm }
  application.effective_date: { column: eff, type: date, format: DD-MMM-YY }
  pricing.lead_price: { column: price, type: money }
  pricing.bid_price: { column: bid, type: money, decimal_mark: "." }
`, 'defaults: { zone: America/Chicago, pivot_year: 1930, decimal_mark: "," }');
    const row = mapOne(text, { ...BASE, at: '15-Jul-26 13:05', eff: '01-Aug-29', price: '12,50', bid: '1,234.50' });
    expect(row.errors).toEqual([]);
    expect(at(row.request, 'compliance.consent_timestamp')).toBe('2026-07-15T18:05:00Z');
    expect(at(row.request, 'application.effective_date')).toBe('2029-08-01');
    expect(at(row.request, 'pricing')).toEqual({ lead_price: 12.5, bid_price: 1234.5 });
  });

  it('an unknown zone or key in defaults is a mistake of the mapping', () => {
    expect(loadError(withFields('  compliance.consent_timestamp: { column: at, type: timestamp, format: iso }\n', 'defaults: { zone: Mars/Base }')))
      .toMatch(/^invalid mapping: test\.yaml:2:\d+: defaults > zone: unknown time zone "Mars\/Base"/);
    expect(loadError(withFields('', 'defaults: { zone: Mars/Base }'))).toMatch(/defaults > zone: unknown time zone "Mars\/Base"/);
    expect(loadError(withFields('', 'defaults: { timezone: UTC }'))).toMatch(/unknown key "timezone"[\s\S]*zone: America\/New_York/);
  });
});

describe('a missing object names what it needs', () => {
  const text = `version: 1
fields:
  channel.channel_id: { literal: acme }
  application.vehicles[0].vin: vin
  application.vehicles[0].make: { literal: Ford }
  application.vehicles[0].model: { literal: Focus }
  application.vehicles[0].year: { literal: 2015 }
groups:
  - target: application.drivers
    each: people
    key: born
    fields:
      name.middle_name: { path: name.middle }
      name.suffix: { path: name.suffix }
      dob: { path: born, type: date, format: iso }
      incident_history[0].code: { path: incident }
`;

  it('the required members of the missing object, not the optional ones mapped below it', () => {
    const row = mapOne(text, { vin: BASE.vin, people: [{ name: { given: 'Ann', family: 'Example' }, born: '1980-02-03', incident: 'ACC' }] });
    expect(row.errors.map((issue) => formatRowIssue(7, issue))).toEqual([
      'row 7: application.drivers[0].name: required object (it needs first_name, last_name; the mapping fills none of them), got nothing',
      'row 7: application.drivers[0].incident_history[0].incident_date: required string (the mapping does not fill it), got nothing',
      'row 7: application.drivers[0].incident_history[0].is_at_fault: required boolean (the mapping does not fill it), got nothing',
    ]);
  });
});

