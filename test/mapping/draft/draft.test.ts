import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { compileMapping } from '../../../src/mapping/index.js';
import { draftMapping, type DraftResult } from '../../../src/mapping/draft/index.js';
import { collectSample } from '../../../src/mapping/draft/sources.js';

/** Drafts from a CSV header and rows given as arrays; asserts the draft loads and reads only the file's columns. */
function draftCsv(header: string[], rows: string[][]): DraftResult & { content: Record<string, unknown> } {
  const records = rows.map((row) => Object.fromEntries(header.map((column, i) => [column, row[i] ?? ''])));
  const result = draftMapping({ fileName: 'leads.csv', format: 'csv', columns: header, ...collectSample(header, records) });
  const mapping = compileMapping(result.yaml, 'draft.yaml');
  mapping.checkColumns(header);
  return { ...result, content: parse(result.yaml) as Record<string, unknown> };
}

function fieldsOf(content: Record<string, unknown>): Record<string, unknown> {
  return content.fields as Record<string, unknown>;
}

describe('value tables from the partner\'s known words', () => {
  it.each([
    ['codes become words', 'Sex', ['M', 'F', 'm'], { column: 'Sex', map: { F: 'female', M: 'male' } }],
    ['known words in capitals only need lower case', 'Marital', ['SINGLE', 'MARRIED'], { column: 'Marital', case: 'lower' }],
    ['known words as they are stay as they are', 'Gender', ['male', 'female'], 'Gender'],
    ['a code no known word matches is kept (in lower case) and flagged', 'Sex', ['M', 'F', 'Q'], { column: 'Sex', case: 'lower', map: { F: 'female', M: 'male' }, on_miss: 'keep' }],
  ] as const)('%s', (_, column, values, spec) => {
    const { content, yaml } = draftCsv(['FirstName', 'DOB', column], values.map((v, i) => [`Name${i}`, '01/02/1980', v]));
    expect(fieldsOf(content)['application.drivers[0].gender'] ?? fieldsOf(content)['application.drivers[0].marital_status']).toEqual(spec);
    if (values.includes('Q' as never)) expect(yaml).toMatch(/# decide: "Q" matched no known word \(known: male, female, non_binary, unknown\); sent in lower case until mapped/);
  });

  it('a row with a code no known word matches is valid as drafted: sent with a warning, as the draft says, not refused', () => {
    const header = ['FirstName', 'DOB', 'Sex'];
    const { yaml } = draftCsv(header, [['Ann', '01/02/1980', 'F'], ['Bo', '03/04/1979', 'M'], ['Cy', '05/06/1990', 'Q']]);
    const mapping = compileMapping(yaml, 'draft.yaml');
    const row = mapping.mapRow({ FirstName: 'Cy', DOB: '05/06/1990', Sex: 'Q' }, 3);
    expect(row.errors.filter((e) => e.path.includes('gender'))).toEqual([]);
    expect(JSON.stringify(row.request)).toContain('"gender":"q"');
    expect(row.warnings.map((w) => w.message).join('\n')).toMatch(/"q" is not in the value table/);
  });

  it('a column of many different words gets no table', () => {
    const { content } = draftCsv(['Education'], Array.from({ length: 40 }, (_, i) => [`Degree${i}`]));
    expect(fieldsOf(content)['application.drivers[0].education']).toEqual({ column: 'Education', case: 'lower' });
  });
});

describe('the draft\'s conversions, agent and row key', () => {
  const header = ['Lead_No', 'ClickRef', 'Rep', 'Phone', 'DOB', 'Created', 'TCPA', 'Year', 'Coll', 'Notes'];
  const rows = [
    ['L-1', 'ck-1', 'ann.agent@example.com', '(212) 555-0101', '02/03/1980', '2026-03-01 13:57:14', 'Y', '2015', '500', 'x'],
    ['L-2', 'ck-2', 'ann.agent@example.com', '212.555.0102', '12/31/1975', '2026-03-02 08:00:00', 'N', '2019', '250', ''],
    ['L-3', 'ck-3', 'ann.agent@example.com', '212-555-0103', '07/04/1990', '2026-03-03 09:30:00', 'Y', '2021', '1000', ''],
  ];

  it('picks conversions from the values', () => {
    const { content, yaml } = draftCsv(header, rows);
    const fields = fieldsOf(content);
    expect(fields['application.drivers[0].contact_info.phone']).toEqual({ column: 'Phone', type: 'phone' });
    expect(fields['application.drivers[0].dob']).toEqual({ column: 'DOB', type: 'date', format: 'MM/DD/YYYY' });
    expect(fields['compliance.consent_timestamp']).toEqual({ column: 'Created', type: 'timestamp', format: 'YYYY-MM-DD HH:mm:ss', zone: 'UTC' });
    expect(yaml).toMatch(/zone: UTC \} # decide: the time zone/);
    expect(fields['compliance.tcpa_consent']).toEqual({ column: 'TCPA', type: 'boolean' });
    expect(fields['application.vehicles[0].year']).toEqual({ column: 'Year', type: 'integer' });
    expect(fields['application.coverage.vehicle_coverage[0].coll']).toEqual({ template: '{Coll}_ded' });
  });

  it('a date of birth written as an ISO timestamp (a JSON serialiser\'s midnight) is drafted as an iso date, and maps to the date as written', () => {
    const { content, yaml } = draftCsv(['FirstName', 'DOB'], [['Ann', '1985-04-12T00:00:00Z'], ['Bo', '1979-11-30T00:00:00.000Z']]);
    expect(fieldsOf(content)['application.drivers[0].dob']).toEqual({ column: 'DOB', type: 'date', format: 'iso' });
    expect(yaml).toMatch(/check: the sample holds times of day; the date as written is kept/);
  });

  it.each([
    ['state names are read by type state', ['Texas', 'NEW YORK', 'ohio'], { column: 'State', type: 'state' }],
    ['codes and names mixed, the same', ['TX', 'Florida'], { column: 'State', type: 'state' }],
    ['codes in capitals stay as they are', ['TX', 'OH'], 'State'],
    ['codes in lower case are upper-cased', ['tx', 'oh'], { column: 'State', case: 'upper' }],
  ] as const)('a state column: %s', (_, values, spec) => {
    const { content } = draftCsv(['FirstName', 'DOB', 'State'], values.map((v, i) => [`Name${i}`, '01/02/1980', v]));
    expect(fieldsOf(content)['application.drivers[0].address.state']).toEqual(spec);
  });

  it('finds the agent by its repeating e-mail addresses, the row key by name, and lists what it could not place', () => {
    const result = draftCsv(header, rows);
    expect(result.content.agent).toEqual({ email: 'Rep' });
    expect(result.yaml).toMatch(/email: Rep # check: its values are e-mail addresses that repeat/);
    expect(result.content.row_key).toBe('tracking.click_id');
    expect(result.yaml).toMatch(/row_key: tracking.click_id # unique in the sample/);
    expect(result.unplaced).toEqual(['Notes']);
    expect(result.yaml).toMatch(/# Not placed \(no request field matched their name\): Notes/);
    expect(fieldsOf(result.content)['channel.channel_id']).toEqual({ literal: 'CHANGE-ME' });
  });

  it('columns without a name (a spreadsheet\'s trailing ;;) are counted, not listed as blanks', () => {
    const result = draftCsv([...header, '', ''], rows.map((row) => [...row, '', '']));
    expect(result.yaml).toMatch(/# Not placed \(no request field matched their name\): Notes\n# Not placed: 2 column\(s\) without a name in the header \(a mapping cannot read them\)\n/);
  });

  it('a column named like a request field whose values do not look like it is listed as such; a date format most values share notes the rest', () => {
    const mixed = draftCsv(['click_id', 'effective_date'], [['c1', '01.07.2026'], ['c2', '07/20/2026'], ['c3', '2026-07-21']]);
    expect(mixed.yaml).toMatch(/# Not placed \(named like a request field, but the sample's values do not fit it\): effective_date \(application\.effective_date: a date: no one date format reads 9 in 10 of the values\)\n/);
    expect(mixed.yaml).not.toMatch(/no request field matched their name/);
    const mostly = draftCsv(['click_id', 'effective_date'], Array.from({ length: 20 }, (_, i) => [`c${i}`, i === 7 ? '2026-07-21' : `07/${String(i + 1).padStart(2, '0')}/2026`]));
    expect(fieldsOf(mostly.content)['application.effective_date']).toEqual({ column: 'effective_date', type: 'date', format: 'MM/DD/YYYY' });
    expect(mostly.yaml).toMatch(/# check: 1 of the sample's values do not read as MM\/DD\/YYYY/);
  });

  it('the mis-guesses of the last trial: an occupation in words, a free-text consent method, a currency code, a licence\'s state', () => {
    const { content, yaml } = draftCsv(['FirstName', 'DOB', 'Occupation', 'TCPA', 'Consent Method', 'Lead Cost', 'Lead Cost Currency', 'License State', 'Home State'], [
      ['Ann', '02/03/1980', 'Registered Nurse', 'Y', 'Web form checkbox', '$12.50', 'USD', 'NV', 'TX'],
      ['Bo', '03/04/1979', 'Teacher', 'N', 'Verbal, recorded call', '$9.75', 'USD', 'TX', 'TX'],
      ['Cy', '05/06/1990', 'Retired', 'Y', 'Paper form, scanned', '$14.00', 'USD', 'CA', 'CA'],
    ]);
    const fields = fieldsOf(content);
    expect(fields['application.drivers[0].occupation.description']).toBe('Occupation');
    expect(fields['application.drivers[0].occupation.code']).toBeUndefined();
    expect(fields['compliance.tcpa_consent']).toEqual({ column: 'TCPA', type: 'boolean' });
    expect(fields['compliance.consent_source']).toBe('Consent Method');
    expect(fields['pricing.lead_price']).toEqual({ column: 'Lead Cost', type: 'money' });
    expect(Object.values(fields)).not.toContainEqual(expect.objectContaining({ column: 'Lead Cost Currency', type: 'money' }));
    expect(fields['application.drivers[0].driver_license.state']).toBe('License State');
    expect(fields['application.drivers[0].address.state']).toBe('Home State');
    expect(yaml).not.toMatch(/address\.state: License State/);
  });

  it('a column whose values the field would refuse is not placed there, and the draft says why in check\'s words', () => {
    const { content, yaml } = draftCsv(['FirstName', 'DOB', 'Currency', 'Occupation Code', 'VIN'], [
      ['Ann', '02/03/1980', '840', 'Nurse', '1FAFP34N05W123456'], ['Bo', '03/04/1979', '840', 'Teacher', '1FAFP34N05W12345'], ['Cy', '05/06/1990', '978', 'Chef', '1FAFP34N05W123457'],
    ]);
    expect(fieldsOf(content)['pricing.currency']).toBeUndefined();
    expect(yaml).toMatch(/Not placed \(named like a request field, but the sample's values do not fit it\): Currency \(pricing\.currency: 2 of the sample's 2 distinct values would be refused here \(expected a 3-letter currency code\)\)/);
    // Words in a column named like the code: the description, said to be a guess.
    expect(fieldsOf(content)['application.drivers[0].occupation.code']).toBeUndefined();
    expect(yaml).toMatch(/occupation\.description: Occupation Code # check: matched by "occupation" in the name/);
    expect(yaml).toMatch(/application\.vehicles\[0\]\.vin: VIN # check: 1 of the sample's 3 distinct values would be refused here \(expected a 17-character VIN\)/);
  });

  it('N/A and the like are read as no value, and the rest of the values still decide the conversion', () => {
    const { content } = draftCsv(['FirstName', 'Birth Date', 'Marital'], [
      ['Ann', '05-Mar-1988', 'S'], ['Bo', 'N/A', 'M'], ['Cy', '30-Sep-1990', 'n/a'], ['Di', '17-Nov-1979', 'S'],
    ]);
    expect(fieldsOf(content)['application.drivers[0].dob']).toEqual({ column: 'Birth Date', empty: ['N/A'], type: 'date', format: 'DD-MMM-YYYY' });
    expect(fieldsOf(content)['application.drivers[0].marital_status']).toEqual({ column: 'Marital', empty: ['n/a'], map: { M: 'married', S: 'single' } });
  });

  it('without a click id, the lead id is the row key; without either, the draft says so', () => {
    expect(draftCsv(['Lead_No', 'DOB'], [['L-1', '02/03/1980']]).content.row_key).toBe('tracking.channel_lead_id');
    const none = draftCsv(['DOB'], [['02/03/1980']]);
    expect(none.content.row_key).toBeUndefined();
    expect(none.yaml).toMatch(/# decide: no click id or lead id found/);
  });

  it('a group field missing for one number is not placed in the group (the draft still loads)', () => {
    const result = draftCsv(['D1_FName', 'D1_DOB', 'D1_Sex', 'D2_FName', 'D2_DOB'], [['Ann', '02/03/1980', 'F', 'Bo', '03/04/1981']]);
    expect(result.unplaced).toContain('D1_Sex');
    const group = (result.content.groups as { fields: Record<string, unknown>; count: number }[])[0];
    expect(group?.count).toBe(2);
    expect(group?.fields).toEqual({ 'name.first_name': 'D{n}_FName', dob: { column: 'D{n}_DOB', type: 'date', format: 'MM/DD/YYYY' } });
  });

  it('a file with nothing to place still gives a mapping that loads', () => {
    const result = draftCsv(['alpha', 'beta'], [['1', '2']]);
    expect(result.placed).toEqual([]);
    expect(result.unplaced).toEqual(['alpha', 'beta']);
  });
});

describe('NDJSON', () => {
  it('lists of objects become `each` groups, nested objects paths', () => {
    const records = [
      { id: 'L-1', contact: { zip: '43219' }, drivers: [{ first_name: 'Ann', dob: '1980-02-03', tickets: [{ code: 'SPD', date: '2024-01-02' }] }] },
      { id: 'L-2', contact: { zip: '33655' }, drivers: [{ first_name: 'Bo', dob: '1975-12-31', tickets: [] }], vehicles: [{ vin: '1FAFP34N05W123456', year: 2015 }] },
    ];
    const result = draftMapping({ fileName: 'leads.ndjson', format: 'ndjson', columns: null, ...collectSample(null, records) });
    compileMapping(result.yaml, 'draft.yaml');
    const content = parse(result.yaml) as { fields: Record<string, unknown>; groups: Record<string, unknown>[] };
    expect(content.fields['application.drivers[0].address.zip']).toEqual({ path: 'contact.zip' });
    expect(content.groups[0]).toMatchObject({
      target: 'application.drivers', each: 'drivers', key: 'first_name',
      fields: { 'name.first_name': 'first_name', dob: { column: 'dob', type: 'date', format: 'YYYY-MM-DD' } },
      groups: [{ target: 'incident_history', each: 'tickets', key: 'code' }],
    });
    expect(content.groups[1]).toMatchObject({ target: 'application.vehicles', each: 'vehicles', key: 'vin', fields: { year: { column: 'year', type: 'integer' } } });
  });

  it('nested fields named by their object (person.birth, consent.at) are placed as their CSV columns (Birth Date, Consent Time) are', () => {
    const records = [
      { lead: { ref: 'PX-1' }, person: { first: 'Avery', birth: '02.02.1951' }, consent: { tcpa: 'yes', at: '2026-03-02 11:01:00' } },
      { lead: { ref: 'PX-2' }, person: { first: 'Blake', birth: '13.03.1952' }, consent: { tcpa: 'no', at: '2026-03-03 09:30:00' } },
    ];
    const result = draftMapping({ fileName: 'leads.ndjson', format: 'ndjson', columns: null, ...collectSample(null, records) });
    const content = parse(result.yaml) as { fields: Record<string, unknown> };
    expect(content.fields['application.drivers[0].dob']).toEqual({ path: 'person.birth', type: 'date', format: 'DD.MM.YYYY' });
    expect(content.fields['compliance.consent_timestamp']).toMatchObject({ path: 'consent.at', type: 'timestamp', format: 'YYYY-MM-DD HH:mm:ss' });
    expect(content.fields['compliance.tcpa_consent']).toMatchObject({ path: 'consent.tcpa', type: 'boolean' });
    const mapped = compileMapping(result.yaml, 'draft.yaml').mapRow(records[1] as Record<string, unknown>, 2);
    expect(JSON.stringify(mapped.request)).toContain('"dob":"1952-03-13"');
  });

  it('a text field the file holds as JSON numbers is drafted with type: digits; a ZIP with type: zip, which gives back its lost leading 0', () => {
    const records = [{ id: 'L-1', contact: { zip: 2134 }, license_number: 12345678 }, { id: 'L-2', contact: { zip: 33655 }, license_number: 87654321 }];
    const result = draftMapping({ fileName: 'leads.ndjson', format: 'ndjson', columns: null, ...collectSample(null, records) });
    const content = parse(result.yaml) as { fields: Record<string, unknown> };
    expect(content.fields['application.drivers[0].address.zip']).toEqual({ path: 'contact.zip', type: 'zip' });
    expect(content.fields['application.drivers[0].driver_license.id']).toEqual({ column: 'license_number', type: 'digits' });
    expect(result.yaml).toMatch(/# check: the file holds these as numbers, so a leading 0 \(a ZIP such as 02134\) is already lost/);
    const mapped = compileMapping(result.yaml, 'draft.yaml').mapRow(records[0] as Record<string, unknown>, 1);
    expect(mapped.errors.filter((e) => e.path.includes('zip'))).toEqual([]);
    expect(JSON.stringify(mapped.request)).toContain('"zip":"02134"');
  });
});
