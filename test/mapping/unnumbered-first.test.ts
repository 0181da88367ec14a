/**
 * A numbered group whose first member's columns carry no number (`first_without:`, docs/mapping.md
 * "An unnumbered first member"), and the refusal of a top-level field that fills what a group fills
 * in the same element (it would overwrite whoever the group put there: two people in one driver).
 * Each mapping is run both by the generated code and by the interpreted reference.
 */
import { describe, expect, it } from 'vitest';
import { compileError } from './_compile-error.js';
import { compileMapping, type MappedRow } from '../../src/mapping/index.js';

const VEHICLE = `  channel.channel_id: { literal: acme }
  application.vehicles[0].vin: { literal: 1FAFP34N05W123456 }
  application.vehicles[0].make: { literal: Ford }
  application.vehicles[0].model: { literal: Focus }
  application.vehicles[0].year: { literal: 2015 }
`;

function mapOne(text: string, record: Record<string, unknown>): MappedRow {
  const generated = compileMapping(text, 'test.yaml').mapRow(record, 3);
  const reference = compileMapping(text, 'test.yaml', { reference: true }).mapRow(record, 3);
  expect(generated).toEqual(reference);
  return generated;
}

const loadError = compileError;

interface Driver { name: { first_name: string; last_name: string }; dob: string; contact_info?: { email: string }; incident_history?: { code: string }[] }

function drivers(row: MappedRow): Driver[] {
  return ((row.request.application as { drivers?: Driver[] } | undefined)?.drivers ?? []);
}

describe('first_without: a first member named without its number', () => {
  it.each([
    {
      layout: 'Title Case with spaces: First Name, Driver 2 First Name',
      group: `    index: n
    count: 3
    first_without: "Driver {n} "
    key: Driver {n} First Name
    fields:
      name.first_name: Driver {n} First Name
      name.last_name: Driver {n} Last Name
      dob: { column: "Driver {n} DOB", type: date, format: MM/DD/YYYY }`,
      record: {
        'First Name': 'Ann', 'Last Name': 'Example', DOB: '02/03/1980',
        'Driver 2 First Name': 'Bo', 'Driver 2 Last Name': 'Sample', 'Driver 2 DOB': '04/05/1982',
        'Driver 3 First Name': 'Cy', 'Driver 3 Last Name': 'Madeup', 'Driver 3 DOB': '06/07/2001',
      },
      want: [['Ann', 'Example', '1980-02-03'], ['Bo', 'Sample', '1982-04-05'], ['Cy', 'Madeup', '2001-06-07']],
    },
    {
      layout: 'a number at the end after a separator: first_name, first_name_2',
      group: `    index: n
    count: 2
    first_without: "_{n}"
    key: ["first_name_{n}", "last_name_{n}"]
    fields:
      name.first_name: first_name_{n}
      name.last_name: last_name_{n}
      dob: { column: "dob_{n}", type: date, format: MM/DD/YYYY }`,
      record: { first_name: 'Ann', last_name: 'Example', dob: '02/03/1980', first_name_2: 'Bo', last_name_2: 'Sample', dob_2: '04/05/1982' },
      want: [['Ann', 'Example', '1980-02-03'], ['Bo', 'Sample', '1982-04-05']],
    },
    {
      layout: 'a bare number at the end, and a template: FirstName, FirstName2',
      group: `    index: n
    count: 2
    first_without: "{n}"
    key: FirstName{n}
    fields:
      name.first_name: FirstName{n}
      name.last_name: { template: "{LastName{n}}" }
      dob: { column: "Birth{n}", type: date, format: MM/DD/YYYY }`,
      record: { FirstName: 'Ann', LastName: 'Example', Birth: '02/03/1980', FirstName2: 'Bo', LastName2: 'Sample', Birth2: '04/05/1982' },
      want: [['Ann', 'Example', '1980-02-03'], ['Bo', 'Sample', '1982-04-05']],
    },
    {
      layout: 'the primary driver missing: driver 2 alone, in drivers[0]',
      group: `    index: n
    count: 2
    first_without: "Driver {n} "
    key: Driver {n} First Name
    fields:
      name.first_name: Driver {n} First Name
      name.last_name: Driver {n} Last Name
      dob: { column: "Driver {n} DOB", type: date, format: MM/DD/YYYY }`,
      record: { 'First Name': '', 'Last Name': '', DOB: '', 'Driver 2 First Name': 'Bo', 'Driver 2 Last Name': 'Sample', 'Driver 2 DOB': '04/05/1982' },
      want: [['Bo', 'Sample', '1982-04-05']],
    },
  ])('$layout', ({ group, record, want }) => {
    const row = mapOne(`version: 1\nfields:\n${VEHICLE}groups:\n  - target: application.drivers\n${group}\n`, record);
    expect(row.errors).toEqual([]);
    expect(drivers(row).map((d) => [d.name.first_name, d.name.last_name, d.dob])).toEqual(want);
  });

  it('applies to the first member\'s nested groups too (Incident 1 Code, Driver 2 Incident 1 Code)', () => {
    const row = mapOne(`version: 1
fields:
${VEHICLE}groups:
  - target: application.drivers
    index: n
    count: 2
    first_without: "Driver {n} "
    key: Driver {n} First
    fields:
      name.first_name: Driver {n} First
      name.last_name: Driver {n} Last
      dob: { column: "Driver {n} DOB", type: date, format: MM/DD/YYYY }
    groups:
      - target: incident_history
        index: m
        count: 1
        key: Driver {n} Incident {m} Code
        fields:
          code: Driver {n} Incident {m} Code
          incident_date: { column: "Driver {n} Incident {m} Date", type: date, format: MM/DD/YYYY }
          is_at_fault: { literal: false }
`, {
      First: 'Ann', Last: 'Example', DOB: '02/03/1980', 'Incident 1 Code': 'ACC', 'Incident 1 Date': '01/02/2020',
      'Driver 2 First': 'Bo', 'Driver 2 Last': 'Sample', 'Driver 2 DOB': '04/05/1982', 'Driver 2 Incident 1 Code': 'SPD', 'Driver 2 Incident 1 Date': '03/04/2021',
    });
    expect(row.errors).toEqual([]);
    expect(drivers(row).map((d) => [d.name.first_name, d.incident_history?.map((i) => i.code)])).toEqual([['Ann', ['ACC']], ['Bo', ['SPD']]]);
  });

  it.each([
    ['a text without the index', 'first_without: "Driver "', 'key: Driver {n} First', /groups\[0\] > first_without: "Driver " does not contain \{n\}/],
    ['a column that does not hold the text', 'first_without: "Driver {n} "', 'key: D{n}_First', /"D\{n\}_First" does not contain "Driver \{n\} " \(first_without\)/],
  ])('is refused when the mapping loads: %s', (_name, option, key, message) => {
    const text = `version: 1\nfields:\n${VEHICLE}groups:\n  - target: application.drivers\n    index: n\n    count: 2\n    ${option}\n    ${key}\n    fields:\n      name.first_name: Driver {n} First\n`;
    expect(loadError(text)).toMatch(message);
  });

  it('belongs to numbered groups only', () => {
    expect(loadError(`version: 1\nfields:\n${VEHICLE}groups:\n  - target: application.drivers\n    each: drivers\n    first_without: "Driver {n} "\n    key: first\n    fields:\n      name.first_name: first\n`))
      .toMatch(/first_without: `first_without:` belongs to a numbered group/);
  });
});

describe('a top-level field into an element a group fills', () => {
  const group = `groups:
  - target: application.drivers
    index: n
    start: 2
    count: 1
    key: Driver {n} First Name
    fields:
      name.first_name: Driver {n} First Name
      name.last_name: Driver {n} Last Name
      dob: { column: "Driver {n} DOB", type: date, format: MM/DD/YYYY }
`;

  it.each([
    ['the same member', '  application.drivers[0].name.first_name: First Name\n', 'application.drivers[0].name.first_name', 'from First Name', 'name.first_name from Driver 2 First Name'],
    ['an object around a member the group fills', '  application.drivers[0].name: { pass: name }\n', 'application.drivers[0].name', 'from name', 'name.first_name from Driver 2 First Name; name.last_name from Driver 2 Last Name'],
    ['the whole element', '  application.drivers[0]: { pass: primary }\n', 'application.drivers[0]', 'from primary', 'dob from Driver 2 DOB'],
  ])('is refused when it fills %s, naming both', (_name, field, path, mine, theirs) => {
    const error = loadError(`version: 1\nfields:\n${VEHICLE}${field}${group}`);
    expect(error).toContain(`fields > ${path}: filled twice: here (${mine}) and by the group over application.drivers (`);
    expect(error).toContain(theirs);
    expect(error).toContain('mixing two people');
    expect(error).toMatch(/hint: .*first_without/);
  });

  it('is allowed into members the group leaves empty (the primary driver\'s e-mail), and lands in the group\'s first element', () => {
    const row = mapOne(`version: 1\nfields:\n${VEHICLE}  application.drivers[0].contact_info.email: Email\n${group}`,
      { Email: 'ann@example.com', 'Driver 2 First Name': 'Bo', 'Driver 2 Last Name': 'Sample', 'Driver 2 DOB': '04/05/1982' });
    expect(row.errors).toEqual([]);
    expect(drivers(row)).toEqual([{ name: { first_name: 'Bo', last_name: 'Sample' }, dob: '1982-04-05', contact_info: { email: 'ann@example.com' } }]);
  });
});
