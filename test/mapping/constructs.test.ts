import { describe, expect, it } from 'vitest';
import { compileMapping, formatRowIssue, type MappedRow } from '../../src/mapping/index.js';
import { minimalRequestFields } from '../fixtures/mapping/minimal-request.js';

/** A mapping whose request is valid when the row has the base columns, plus `extra` fields. */
function mappingWith(extraFields: string, extra = ''): ReturnType<typeof compileMapping> {
  return compileMapping(mappingText(extraFields, extra), 'test.yaml');
}

function mappingText(extraFields: string, extra = ''): string {
  return `version: 1
${extra}
fields:
${minimalRequestFields('acme')}${extraFields}`;
}

const BASE = { first: 'Ann', last: 'Example', dob: '02/03/1980', vin: '1FAFP34N05W123456' };

function mapOne(extraFields: string, record: Record<string, unknown>, extra = ''): MappedRow {
  return mappingWith(extraFields, extra).mapRow({ ...BASE, ...record }, 7);
}

function at(request: unknown, path: string): unknown {
  let node = request;
  for (const key of path.split(/\.|\[(\d+)\]/).filter((k) => k !== undefined && k !== '')) {
    node = (node as Record<string, unknown> | undefined)?.[key];
  }
  return node;
}

describe('sources', () => {
  it('column, literal and template', () => {
    const row = mapOne(
      `  tracking.click_id: click
  tracking.campaign_name: { literal: Spring sale }
  tracking.campaign_id: { template: "{source}-{campaign}" }
  tracking.user_agent: { template: "{first} {middle} {last}" }`,
      { click: ' c-1 ', source: 'g', campaign: '42', middle: '' },
    );
    expect(row.errors).toEqual([]);
    expect(at(row.request, 'tracking')).toEqual({ click_id: 'c-1', campaign_name: 'Spring sale', campaign_id: 'g-42', user_agent: 'Ann Example' });
    expect(at(row.request, 'channel.channel_id')).toBe('acme');
  });

  it('a template whose columns are all empty is left out', () => {
    const row = mapOne('  application.coverage.policy_coverage.med: { template: "{med}_per_person" }', { med: ' ' });
    expect(at(row.request, 'application.coverage')).toBeUndefined();
  });

  it('NDJSON paths, $-rooted paths, pass-through of a whole object', () => {
    const mapping = compileMapping(
      `version: 1
fields:
  channel.channel_id: { literal: acme }
  tracking: { pass: marketing }
  tracking.click_id: { path: ids.click }
  application.effective_date: { path: "policy.dates[0]", type: date, format: iso }
groups:
  - target: application.drivers
    each: people
    key: name.first
    fields:
      name.first_name: { path: name.first }
      name.last_name: { path: name.last }
      dob: { column: born, type: date, format: YYYY-MM-DD }
      contact_info.email: { path: $.contact }
  - target: application.vehicles
    each: cars
    key: vin
    fields:
      vin: vin
      make: make
      model: model
      year: { column: year, type: integer }
`,
      'n.yaml',
    );
    const row = mapping.mapRow(
      {
        ids: { click: 'k-9' },
        marketing: { traffic_source: 'bing', campaign_id: 'C1' },
        policy: { dates: ['2026-05-01'] },
        contact: 'a@example.com',
        people: [{ name: { first: 'Bo', last: 'Roe' }, born: '1990-01-02' }, { name: { first: '' } }],
        cars: [{ vin: '1FAFP34N05W123456', make: 'Ford', model: 'Focus', year: 2012 }],
      },
      1,
    );
    expect(row.errors).toEqual([]);
    expect(row.request.tracking).toEqual({ traffic_source: 'bing', campaign_id: 'C1', click_id: 'k-9' });
    expect(at(row.request, 'application.drivers')).toEqual([
      { name: { first_name: 'Bo', last_name: 'Roe' }, dob: '1990-01-02', contact_info: { email: 'a@example.com' } },
    ]);
    expect(at(row.request, 'application.vehicles[0].year')).toBe(2012);
    expect(at(row.request, 'application.effective_date')).toBe('2026-05-01');
  });
});

describe('conversions', () => {
  const convert = (spec: string, value: string): MappedRow => mapOne(`  tracking.campaign_id: ${spec}`, { v: value });

  it('trim (default), trim: false, upper and lower case', () => {
    expect(at(convert('v', '  x  ').request, 'tracking.campaign_id')).toBe('x');
    expect(at(convert('{ column: v, trim: false }', ' x ').request, 'tracking.campaign_id')).toBe(' x ');
    expect(at(convert('{ column: v, case: upper }', 'ab').request, 'tracking.campaign_id')).toBe('AB');
    expect(at(convert('{ column: v, case: lower }', 'AB').request, 'tracking.campaign_id')).toBe('ab');
  });

  it('digits keeps only digits; nothing left is an error naming the column', () => {
    const ok = mapOne('  application.drivers[0].contact_info.phone: { column: phone, type: digits }', { phone: '(212) 555-0123' });
    expect(at(ok.request, 'application.drivers[0].contact_info.phone')).toBe('2125550123');
    const bad = mapOne('  application.drivers[0].contact_info.phone: { column: phone, type: digits }', { phone: 'n/a' });
    expect(bad.errors.map((e) => formatRowIssue(7, e))).toEqual([
      'row 7: application.drivers[0].contact_info.phone: expected digits, got "n/a" (column phone)',
    ]);
  });

  it('state reads a US state as its code or its name, in any case, into the 2-letter code; anything else is an error naming the column', () => {
    const state = (value: string): MappedRow => mapOne('  application.drivers[0].address.state: { column: st, type: state }', { st: value });
    for (const [value, code] of [['Texas', 'TX'], ['NEW  YORK', 'NY'], [' district of columbia ', 'DC'], ['Puerto Rico', 'PR'], ['oh', 'OH'], ['WA', 'WA']]) {
      expect(at(state(value as string).request, 'application.drivers[0].address.state'), value).toBe(code);
    }
    expect(state('Texsa').errors.map((e) => formatRowIssue(3, e))).toEqual([
      'row 3: application.drivers[0].address.state: expected a US state, as its 2-letter code or its name, got "Texsa" (column st)',
    ]);
    expect(state('XX').errors).toHaveLength(1);
    expect(state('__proto__').errors).toHaveLength(1);
  });

  it('phone keeps the digits of a US number, without the country code 1 of an 11-digit one', () => {
    const phone = (value: string): MappedRow => mapOne('  application.drivers[0].contact_info.phone: { column: p, type: phone }', { p: value });
    for (const [value, digits] of [['+1 (212) 555-0123', '2125550123'], ['1-212-555-0123', '2125550123'], ['212.555.0123', '2125550123']]) {
      expect(at(phone(value as string).request, 'application.drivers[0].contact_info.phone'), value).toBe(digits);
    }
    // Not a 10-digit number once the code is off: the request's own check names it.
    expect(phone('44 20 7946 0958').errors.map((e) => formatRowIssue(2, e))).toEqual([
      'row 2: application.drivers[0].contact_info.phone: expected 10 digits, got "442079460958" (column p, "44 20 7946 0958" in the file)',
    ]);
    expect(phone('n/a').errors.map((e) => formatRowIssue(2, e))).toEqual(['row 2: application.drivers[0].contact_info.phone: expected a phone number, got "n/a" (column p)']);
  });

  it('zip gives back the leading zeros a spreadsheet dropped, and the hyphen of a ZIP+4', () => {
    const zip = (value: string): MappedRow => mapOne('  application.drivers[0].address.zip: { column: z, type: zip }', { z: value });
    for (const [value, expected] of [['02134', '02134'], ['2134', '02134'], ['501', '00501'], ['021341234', '02134-1234'], ['2134-1234', '02134-1234'], ['43219-0001', '43219-0001']]) {
      expect(at(zip(value as string).request, 'application.drivers[0].address.zip'), value).toBe(expected);
    }
    for (const value of ['12', '123456', 'K1A 0B1', '2134.0']) expect(zip(value).errors, value).toHaveLength(1);
    expect(zip('12').errors.map((e) => formatRowIssue(5, e))).toEqual(['row 5: application.drivers[0].address.zip: expected a ZIP code (5 digits, or ZIP+4), got "12" (column z)']);
  });

  it('a date in format iso may carry its time of day (as JSON serialisers write dates): the date as written is kept', () => {
    const dob = (value: string): MappedRow => mapOne('  application.effective_date: { column: d, type: date, format: iso }', { d: value });
    for (const value of ['1985-04-12', '1985-04-12T00:00:00Z', '1985-04-12T23:30:00.000-05:00', '1985-04-12 00:00:00']) {
      expect(at(dob(value).request, 'application.effective_date'), value).toBe('1985-04-12');
    }
    expect(dob('1985-02-30T00:00:00Z').errors.map((e) => formatRowIssue(4, e))).toEqual([
      'row 4: application.effective_date: expected a date as YYYY-MM-DD (a time of day may follow), got "1985-02-30T00:00:00Z" (column d)',
    ]);
    expect(dob('1985-04-12Tnoon').errors).toHaveLength(1);
  });

  it('integer and decimal', () => {
    const spec = `  application.vehicles[0].usage.annual_mileage: { column: miles, type: integer }
  pricing.lead_price: { column: price, type: decimal }`;
    const ok = mapOne(spec, { miles: '12,000', price: '$12.50' });
    expect(at(ok.request, 'application.vehicles[0].usage.annual_mileage')).toBe(12000);
    expect(at(ok.request, 'pricing.lead_price')).toBe(12.5);
    const bad = mapOne(spec, { miles: '12.5', price: 'twelve' });
    expect(bad.errors.map((e) => formatRowIssue(7, e)).sort()).toEqual([
      'row 7: application.vehicles[0].usage.annual_mileage: expected an integer, got "12.5" (column miles)',
      'row 7: pricing.lead_price: expected a decimal number, got "twelve" (column price)',
    ]);
  });

  it('boolean reads Y/N, yes/no, 1/0, true/false (any case), and custom words', () => {
    for (const [text, value] of [['Y', true], ['n', false], ['Yes', true], ['NO', false], ['1', true], ['0', false], ['true', true], ['False', false]] as const) {
      expect(at(mapOne('  compliance.tcpa_consent: { column: v, type: boolean }', { v: text }).request, 'compliance.tcpa_consent')).toBe(value);
    }
    const custom = '{ column: v, type: boolean, true: [agreed], false: [declined] }';
    expect(at(mapOne(`  compliance.tcpa_consent: ${custom}`, { v: 'Agreed' }).request, 'compliance.tcpa_consent')).toBe(true);
    expect(mapOne(`  compliance.tcpa_consent: ${custom}`, { v: 'Y' }).errors[0]?.message).toMatch(/expected one of agreed, declined/);
  });

  it('date from a stated format into YYYY-MM-DD; impossible dates are errors', () => {
    const spec = (format: string): string => `  application.effective_date: { column: d, type: date, format: "${format}" }`;
    expect(at(mapOne(spec('MM/DD/YYYY'), { d: '02/29/2024' }).request, 'application.effective_date')).toBe('2024-02-29');
    expect(at(mapOne(spec('D.M.YY'), { d: '5.7.26' }).request, 'application.effective_date')).toBe('2026-07-05');
    expect(at(mapOne(spec('YYYYMMDD'), { d: '20260131' }).request, 'application.effective_date')).toBe('2026-01-31');
    const bad = mapOne(spec('MM/DD/YYYY'), { d: '02/29/2023' });
    expect(formatRowIssue(7, bad.errors[0] ?? { path: '', message: '', columns: [] })).toBe(
      'row 7: application.effective_date: expected a date as MM/DD/YYYY, got "02/29/2023" (column d)',
    );
    expect(bad.errors).toHaveLength(1);
  });

  it('a date that has happened (a date of birth, an incident) reads a two-digit year in the past, and may not be in the future', () => {
    const twoDigitDob = compileMapping(mappingText('').replace('format: MM/DD/YYYY', 'format: MM/DD/YY'), 'test.yaml');
    const dobOf = (text: string): unknown => at(twoDigitDob.mapRow({ ...BASE, dob: text }, 7).request, 'application.drivers[0].dob');
    // 45 is 1945 in a date of birth (2045 has not happened), and 2045 in an effective date (1950–2049).
    expect(dobOf('02/03/45')).toBe('1945-02-03');
    expect(dobOf('02/03/10')).toBe('2010-02-03');
    expect(at(mapOne(`  application.effective_date: { column: d, type: date, format: MM/DD/YY }`, { d: '02/03/45' }).request, 'application.effective_date')).toBe('2045-02-03');
    const incident = `  application.drivers[0].incident_history[0].code: { literal: ACC }
  application.drivers[0].incident_history[0].is_at_fault: { literal: true }
  application.drivers[0].incident_history[0].incident_date: { column: d, type: date, format: D.M.YY }`;
    expect(at(mapOne(incident, { d: '5.7.48' }).request, 'application.drivers[0].incident_history[0].incident_date')).toBe('1948-07-05');
    // Written with four digits, a date of birth in the future is the row's error, not a request.
    const future = mapOne('', { dob: '02/03/2099' });
    expect(formatRowIssue(7, future.errors[0] ?? { path: '', message: '', columns: [] })).toBe(
      'row 7: application.drivers[0].dob: expected a date not in the future, got "2099-02-03" (column dob, "02/03/2099" in the file)',
    );
    expect(mapOne(incident, { d: '5.7.2099' }, '').errors).toHaveLength(1);
  });

  it('timestamp into ISO 8601 UTC, from a zone, an offset in the text, or epoch', () => {
    const spec = (rest: string): string => `  compliance.consent_timestamp: { column: t, type: timestamp, ${rest} }`;
    const ts = (rest: string, t: string): unknown => at(mapOne(spec(rest), { t }).request, 'compliance.consent_timestamp');
    expect(ts('format: "YYYY-MM-DD HH:mm:ss", zone: America/New_York', '2026-01-15 09:30:00')).toBe('2026-01-15T14:30:00Z');
    expect(ts('format: "YYYY-MM-DD HH:mm:ss", zone: America/New_York', '2026-07-15 09:30:00')).toBe('2026-07-15T13:30:00Z');
    expect(ts('format: "MM/DD/YYYY h:mm A", zone: "+02:00"', '07/15/2026 1:05 PM')).toBe('2026-07-15T11:05:00Z');
    expect(ts('format: iso', '2026-07-15T09:30:00.250-04:00')).toBe('2026-07-15T13:30:00.250Z');
    expect(ts('format: iso', '2026-07-15T09:30:00')).toBe('2026-07-15T09:30:00Z');
    expect(ts('format: epoch', '1784107800')).toBe('2026-07-15T09:30:00Z');
    expect(mapOne(spec('format: iso'), { t: '2026-13-01T00:00:00Z' }).errors[0]?.message).toMatch(/expected a timestamp as ISO 8601/);
  });
});

describe('value tables, defaults, required', () => {
  const gender = (extra: string): string => `  application.drivers[0].gender: { column: g, map: { M: male, F: female }${extra} }`;

  it('maps codes case-insensitively', () => {
    expect(at(mapOne(gender(''), { g: 'f' }).request, 'application.drivers[0].gender')).toBe('female');
  });

  it('on_miss: error (default) makes the row invalid, naming the column and the known codes', () => {
    const row = mapOne(gender(''), { g: 'X' });
    expect(row.errors.map((e) => formatRowIssue(7, e))).toEqual([
      'row 7: application.drivers[0].gender: expected a code of the value table (M, F), got "X" (column g)',
    ]);
  });

  it('on_miss: keep / default / omit fall back with a warning', () => {
    const keep = mapOne(gender(', on_miss: keep'), { g: 'x' });
    expect(keep.errors).toEqual([]);
    expect(at(keep.request, 'application.drivers[0].gender')).toBe('x');
    expect(keep.warnings).toHaveLength(1);
    expect(keep.warnings[0]?.message).toMatch(/"x" is not in the value table .*sent as is/);
    const fallback = mapOne(gender(', on_miss: default, default: unknown'), { g: 'x' });
    expect(at(fallback.request, 'application.drivers[0].gender')).toBe('unknown');
    expect(fallback.warnings[0]?.columns).toEqual(['g']);
    const omit = mapOne(gender(', on_miss: omit'), { g: 'x' });
    expect(at(omit.request, 'application.drivers[0].gender')).toBeUndefined();
    expect(omit.warnings[0]?.message).toMatch(/left out/);
    const omitRequired = mapOne(gender(', on_miss: omit, required: true'), { g: 'x' });
    expect(omitRequired.errors[0]?.message).toBe('required value is missing');
  });

  it('default fills an empty source; required makes an empty one an error', () => {
    const row = mapOne(
      `  pricing.currency: { column: cur, default: USD }
  tracking.click_id: { column: click, required: true }`,
      { cur: '', click: '  ' },
    );
    expect(at(row.request, 'pricing.currency')).toBe('USD');
    expect(row.errors.map((e) => formatRowIssue(3, e))).toEqual(['row 3: tracking.click_id: required value is missing (column click)']);
  });

  it('an unknown enumerated word is a warning naming its column', () => {
    const row = mapOne('  application.drivers[0].marital_status: { column: m, case: lower }', { m: 'Complicated' });
    expect(row.errors).toEqual([]);
    expect(row.warnings.map((w) => formatRowIssue(2, w))).toEqual([
      expect.stringMatching(/^row 2: application\.drivers\[0\]\.marital_status: unknown value "complicated" \(known: single, .*\), got "complicated" \(column m\)$/),
    ]);
  });
});

describe('repeated groups', () => {
  const mapping = compileMapping(
    `version: 1
fields:
  channel.channel_id: { literal: acme }
  application.drivers[0].address.state: { column: state, case: upper }
groups:
  - target: application.drivers
    index: n
    count: 3
    key: driver{n}_first
    fields:
      name.first_name: driver{n}_first
      name.last_name: driver{n}_last
      dob: { column: "driver{n}_dob", type: date, format: MM/DD/YYYY }
    groups:
      - target: incident_history
        index: m
        count: 2
        key: driver{n}_inc{m}_code
        fields:
          code: driver{n}_inc{m}_code
          incident_date: { column: "driver{n}_inc{m}_date", type: date, format: MM/DD/YYYY }
          is_at_fault: { column: "driver{n}_inc{m}_fault", type: boolean, default: false }
  - target: application.vehicles
    index: v
    count: 2
    key: vehicle{v}_vin
    fields:
      vin: vehicle{v}_vin
      make: vehicle{v}_make
      model: vehicle{v}_model
      year: { column: "vehicle{v}_year", type: integer }
  - target: application.coverage.vehicle_coverage
    index: v
    count: 2
    key: vehicle{v}_vin
    fields:
      coll: { template: "{vehicle{v}_coll}_ded" }
`,
    'groups.yaml',
  );
  const row = {
    state: 'tx',
    driver1_first: 'Ann', driver1_last: 'Example', driver1_dob: '01/02/1980',
    driver1_inc1_code: 'SPD', driver1_inc1_date: '03/04/2022', driver1_inc1_fault: 'Y',
    driver1_inc2_code: '', driver1_inc2_date: '', driver1_inc2_fault: '',
    driver2_first: '', driver2_last: '', driver2_dob: '',
    driver3_first: 'Cy', driver3_last: 'Example', driver3_dob: '13/45/1990',
    driver3_inc1_code: 'ACC', driver3_inc1_date: '05/06/2023', driver3_inc1_fault: '',
    vehicle1_vin: '1FAFP34N05W123456', vehicle1_make: 'Ford', vehicle1_model: 'Focus', vehicle1_year: '2015', vehicle1_coll: '500',
    vehicle2_vin: '', vehicle2_make: 'Kia', vehicle2_model: '', vehicle2_year: '',
  };

  it('lists every column it can read', () => {
    expect(mapping.sourceColumns).toContain('driver3_inc2_fault');
    expect(mapping.sourceColumns).toContain('vehicle2_coll');
    expect(mapping.sourceColumns).toHaveLength(1 + 3 * 3 + 3 * 2 * 3 + 2 * 4 + 2);
  });

  it('a group exists only when its key column has a value; nested groups per element', () => {
    const out = mapping.mapRow(row, 17);
    const drivers = at(out.request, 'application.drivers') as unknown[];
    expect(drivers).toHaveLength(2);
    expect(drivers[0]).toEqual({
      name: { first_name: 'Ann', last_name: 'Example' },
      dob: '1980-01-02',
      incident_history: [{ code: 'SPD', incident_date: '2022-03-04', is_at_fault: true }],
      address: { state: 'TX' },
    });
    expect(at(out.request, 'application.drivers[1].incident_history')).toEqual([{ code: 'ACC', incident_date: '2023-05-06', is_at_fault: false }]);
    expect(at(out.request, 'application.vehicles')).toHaveLength(1);
    expect(at(out.request, 'application.coverage.vehicle_coverage')).toEqual([{ coll: '500_ded' }]);
  });

  it('traces an issue of the second element to the columns of the group it came from (driver3)', () => {
    const out = mapping.mapRow(row, 17);
    expect(out.errors.map((e) => formatRowIssue(17, e))).toEqual([
      'row 17: application.drivers[1].dob: expected a date as MM/DD/YYYY, got "13/45/1990" (column driver3_dob)',
    ]);
  });

  it('traces schema errors (not only conversion errors) to their columns', () => {
    const out = mapping.mapRow({ ...row, driver3_dob: '01/01/1991', driver3_inc1_code: 'ac', vehicle1_vin: 'SHORT' }, 4);
    expect(out.errors.map((e) => formatRowIssue(4, e))).toEqual([
      'row 4: application.drivers[1].incident_history[0].code: expected a 3-letter code, got "ac" (column driver3_inc1_code)',
      'row 4: application.vehicles[0].vin: expected a 17-character VIN, got "SHORT" (column vehicle1_vin)',
    ]);
  });

  it('a missing required array names the group key columns', () => {
    const out = mapping.mapRow({ ...row, vehicle1_vin: '' }, 5);
    const vehicles = out.errors.find((e) => e.path === 'application.vehicles');
    expect(vehicles?.columns).toEqual(['vehicle1_vin', 'vehicle2_vin']);
  });

  it('NDJSON each-groups trace to source paths', () => {
    const nested = compileMapping(
      `version: 1
fields:
  channel.channel_id: { literal: acme }
groups:
  - target: application.drivers
    each: drivers
    key: first
    fields:
      name.first_name: first
      name.last_name: last
      dob: { column: dob, type: date, format: MM/DD/YYYY }
      incident_history: { pass: incidents }
  - target: application.vehicles
    each: cars
    key: vin
    fields: { vin: vin, make: make, model: model, year: { column: year, type: integer } }
`,
      'n.yaml',
    );
    const out = nested.mapRow({
      drivers: [
        { first: 'A', last: 'B', dob: '01/02/1980' },
        { first: 'C', last: 'D', dob: '01/02/1981', incidents: [{ code: 'SPD', incident_date: '2022-13-01', is_at_fault: true }] },
      ],
      cars: [{ vin: '1FAFP34N05W123456', make: 'Ford', model: 'Focus', year: '2015' }],
    }, 9);
    expect(out.errors.map((e) => formatRowIssue(9, e))).toEqual([
      'row 9: application.drivers[1].incident_history[0].incident_date: expected YYYY-MM-DD, got "2022-13-01" (field drivers[1].incidents[0].incident_date)',
    ]);
  });
});

describe('row key, agent e-mail, agent id', () => {
  it('row key: tracking.click_id, else channel.channel_lead_id, else row-<n>', () => {
    const mapping = mappingWith('  tracking.click_id: click\n  channel.channel_lead_id: lead');
    expect(mapping.mapRow({ ...BASE, click: 'c1', lead: '1b4e28ba-2fa1-11d2-883f-0016d3cca427' }, 1).rowKey).toBe('c1');
    expect(mapping.mapRow({ ...BASE, click: '', lead: '1b4e28ba-2fa1-11d2-883f-0016d3cca427' }, 1).rowKey).toBe('1b4e28ba-2fa1-11d2-883f-0016d3cca427');
    expect(mapping.mapRow({ ...BASE, click: '', lead: '' }, 12).rowKey).toBe('row-12');
  });

  it('row key from a column or from other request paths', () => {
    expect(mapOne('', { lead_id: ' L-1 ' }, 'row_key: { column: lead_id }').rowKey).toBe('L-1');
    expect(mapOne('  tracking.campaign_id: c', { c: 'K' }, 'row_key: [tracking.source_id, tracking.campaign_id]').rowKey).toBe('K');
  });

  it('agent e-mail is trimmed and lower-cased; a malformed one is an error; the id goes to channel.agent_id', () => {
    const mapping = mappingWith('', 'agent:\n  email: agent');
    const row = mapping.mapRow({ ...BASE, agent: ' Dana.W@Example.COM ' }, 1);
    expect(row.agentEmail).toBe('dana.w@example.com');
    expect(row.errors).toEqual([]);
    mapping.setAgentId(row.request, 'acm-100001');
    expect(at(row.request, 'channel')).toEqual({ channel_id: 'acme', agent_id: 'acm-100001' });
    expect(mapping.mapRow({ ...BASE, agent: '' }, 1).agentEmail).toBeNull();
    const bad = mapping.mapRow({ ...BASE, agent: 'dana.example.com' }, 2);
    expect(bad.errors.map((e) => formatRowIssue(2, e))).toEqual(['row 2: agent.email: expected an e-mail address, got "dana.example.com" (column agent)']);
  });

  it('agent id to another request path', () => {
    const mapping = mappingWith('', 'agent:\n  email: agent\n  id_path: tracking.source_id');
    const row = mapping.mapRow({ ...BASE, agent: 'a@example.com' }, 1);
    mapping.setAgentId(row.request, 'acm-1');
    expect(at(row.request, 'tracking.source_id')).toBe('acm-1');
  });

  it('input hints and the SHA-256 of the text', () => {
    const mapping = mappingWith('', 'input:\n  format: tsv\n  delimiter: "|"');
    expect(mapping.input).toEqual({ format: 'tsv', delimiter: '|' });
    expect(mapping.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(mappingWith('  tracking.source_id: s').sha256).not.toBe(mapping.sha256);
  });
});

describe('formatRowIssue', () => {
  it('names the row, path, value and columns', () => {
    expect(formatRowIssue(17, { path: 'application.drivers[1].dob', message: 'expected YYYY-MM-DD', columns: ['driver2_dob'], received: '13/45/1990' }))
      .toBe('row 17: application.drivers[1].dob: expected YYYY-MM-DD, got "13/45/1990" (column driver2_dob)');
    expect(formatRowIssue(3, { path: 'x', message: 'bad', columns: ['a', 'b'], sourceKind: 'field' })).toBe('row 3: x: bad (fields a, b)');
    expect(formatRowIssue(3, { path: 'x', message: 'required string, got nothing', columns: [] })).toBe('row 3: x: required string, got nothing');
  });
});
