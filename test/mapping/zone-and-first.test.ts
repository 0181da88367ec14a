import { describe, expect, it } from 'vitest';
import { isQuoteBatchError } from '../../src/errors.js';
import { compileMapping, formatRowIssue, type CompiledMapping, type MappedRow } from '../../src/mapping/index.js';

const BASE_FIELDS = `  channel.channel_id: { literal: acme }
  application.vehicles[0]: { literal: { vin: 1FAFP34N05W123456, make: Ford, model: Focus, year: 2015 } }`;

/** Both ways of running a mapping: the generated code and the interpreted reference must agree. */
function compileBoth(yaml: string): CompiledMapping[] {
  return [compileMapping(yaml, 'test.yaml'), compileMapping(yaml, 'test.yaml', { reference: true })];
}

function mapBoth(yaml: string, record: Record<string, unknown>): MappedRow {
  const [generated, reference] = compileBoth(yaml).map((m) => m.mapRow(record, 5));
  expect(generated).toEqual(reference);
  return generated as MappedRow;
}

function compileError(yaml: string): string {
  try {
    compileMapping(yaml, 'test.yaml');
  } catch (error) {
    if (isQuoteBatchError(error)) return error.message;
    throw error;
  }
  throw new Error('the mapping loaded');
}

describe('a timestamp zone from a column', () => {
  const yaml = `version: 1
fields:
${BASE_FIELDS}
  application.drivers[0]: { literal: { name: { first_name: Ann, last_name: Example }, dob: "1980-02-03" } }
  compliance.consent_timestamp:
    column: created
    type: timestamp
    format: YYYY-MM-DD HH:mm:ss
    zone: { column: tz, default: America/New_York }
`;

  it.each([
    ['America/Los_Angeles', '2026-03-01T21:57:14Z'],
    ['America/New_York', '2026-03-01T18:57:14Z'],
    ['+02:00', '2026-03-01T11:57:14Z'],
    ['UTC', '2026-03-01T13:57:14Z'],
    ['', '2026-03-01T18:57:14Z'],
  ])('zone %j', (tz, expected) => {
    const row = mapBoth(yaml, { created: '2026-03-01 13:57:14', tz });
    expect(row.errors).toEqual([]);
    expect((row.request.compliance as Record<string, unknown>).consent_timestamp).toBe(expected);
  });

  it('daylight saving time of the zone read from the row is applied', () => {
    const summer = mapBoth(yaml, { created: '2026-07-01 13:57:14', tz: 'America/Chicago' });
    expect((summer.request.compliance as Record<string, unknown>).consent_timestamp).toBe('2026-07-01T18:57:14Z');
  });

  it('an unknown zone is an error of the row naming both columns', () => {
    const row = mapBoth(yaml, { created: '2026-03-01 13:57:14', tz: 'Mars/Base' });
    expect(row.errors.map((issue) => formatRowIssue(5, issue))).toEqual([
      'row 5: compliance.consent_timestamp: expected a time zone (UTC, -05:00, America/New_York), got "Mars/Base" (columns created, tz)',
    ]);
  });

  it('an empty zone without a default is an error; many distinct zones stay correct', () => {
    const strict = yaml.replace(', default: America/New_York', '');
    const row = mapBoth(strict, { created: '2026-03-01 13:57:14', tz: ' ' });
    expect(row.errors[0]?.message).toBe('the time zone is missing');
    const mapping = compileMapping(strict, 'test.yaml');
    // More zones than the cache holds: every row still gets its own zone.
    for (let hours = -11; hours <= 12; hours += 1) {
      for (const minutes of ['00', '30', '45']) {
        const offset = `${hours < 0 ? '-' : '+'}${String(Math.abs(hours)).padStart(2, '0')}:${minutes}`;
        const mapped = mapping.mapRow({ created: '2026-03-01 13:57:14', tz: offset }, 1);
        const utc = Date.UTC(2026, 2, 1, 13, 57, 14) - Math.sign(hours || 1) * (Math.abs(hours) * 60 + Number(minutes)) * 60_000;
        expect((mapped.request.compliance as Record<string, unknown>).consent_timestamp).toBe(new Date(utc).toISOString().replace('.000Z', 'Z'));
      }
    }
  });

  it('mistakes in the zone object are reported when the mapping loads', () => {
    expect(compileError(yaml.replace('{ column: tz, default: America/New_York }', '{ colum: tz }'))).toMatch(/unknown key "colum".*did you mean "column"/);
    expect(compileError(yaml.replace('{ column: tz, default: America/New_York }', '{ default: UTC }'))).toMatch(/names one `column:` or `path:`/);
    expect(compileError(yaml.replace('default: America/New_York', 'default: Mars/Base'))).toMatch(/unknown time zone "Mars\/Base"/);
  });
});

describe('required: first', () => {
  const yaml = `version: 1
fields:
${BASE_FIELDS}
groups:
  - target: application.drivers
    index: n
    count: 3
    key: d{n}_first
    fields:
      name.first_name: d{n}_first
      name.last_name: { literal: Example }
      dob: { literal: "1980-02-03" }
      address.state: { column: "d{n}_state", required: first }
`;
  const drivers = (record: Record<string, string>): Record<string, string> => ({
    d1_first: '', d1_state: '', d2_first: '', d2_state: '', d3_first: '', d3_state: '', ...record,
  });

  it('the first element needs the value, the others do not', () => {
    const ok = mapBoth(yaml, drivers({ d1_first: 'Ann', d1_state: 'TX', d2_first: 'Bo' }));
    expect(ok.errors).toEqual([]);
    const missing = mapBoth(yaml, drivers({ d1_first: 'Ann', d2_first: 'Bo', d2_state: 'TX' }));
    expect(missing.errors.map((issue) => formatRowIssue(5, issue))).toEqual([
      'row 5: application.drivers[0].address.state: required value is missing (column d1_state)',
    ]);
  });

  it('the first element is the first present one: groups are packed', () => {
    const row = mapBoth(yaml, drivers({ d2_first: 'Bo', d3_first: 'Cy', d3_state: 'TX' }));
    expect(row.errors.map((issue) => formatRowIssue(5, issue))).toEqual([
      'row 5: application.drivers[0].address.state: required value is missing (column d2_state)',
    ]);
  });

  it('in a nested group it applies to the first element of each list (each driver\'s first incident)', () => {
    const nested = `${yaml.replace('required: first', 'required: false')}    groups:
      - target: incident_history
        index: m
        count: 2
        key: d{n}_inc{m}_code
        fields:
          code: d{n}_inc{m}_code
          incident_date: { column: "d{n}_inc{m}_date", type: date, format: iso, required: first }
          is_at_fault: { literal: false }
`;
    const row = mapBoth(nested, drivers({
      d1_first: 'Ann', d1_inc1_code: 'ACC', d1_inc1_date: '', d1_inc2_code: 'SPD', d1_inc2_date: '2020-01-02',
      d2_first: 'Bo', d2_inc1_code: '', d2_inc1_date: '', d2_inc2_code: 'SPD', d2_inc2_date: '',
    }));
    expect(row.errors.map((issue) => `${issue.path} ${issue.message}`)).toEqual([
      'application.drivers[0].incident_history[0].incident_date required value is missing',
      'application.drivers[1].incident_history[0].incident_date required value is missing',
    ]);
  });

  it('outside a group it is a mistake of the mapping', () => {
    const message = compileError(`version: 1
fields:
${BASE_FIELDS}
  tracking.click_id: { column: click, required: first }
`);
    expect(message).toMatch(/test\.yaml:5:\d+: .*`required: first` applies to the first element of a group/);
  });
});
