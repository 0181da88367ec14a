import { describe, expect, it } from 'vitest';
import { detectGroups, fillTemplate, stemEntity, type ColumnGroup } from '../../../src/mapping/draft/groups.js';

/** A group as `stem numbers: residual=template…` with `{0}`/`{1}` for the level marks, for readable expectations. */
function describeGroup(group: ColumnGroup): unknown {
  return {
    stem: group.stem,
    numbers: group.numbers,
    fields: group.fields.map((f) => `${f.residual}=${fillTemplate(f.template, ['{0}', '{1}'])}`),
    groups: group.groups.map(describeGroup),
  };
}

describe('numbered groups from column names', () => {
  it.each([
    ['driver2_x', ['driver1_first_name', 'driver1_dob', 'driver2_first_name', 'driver2_dob', 'state'],
      [{ stem: 'driver', numbers: [1, 2], fields: ['first_name=driver{0}_first_name', 'dob=driver{0}_dob'], groups: [] }], ['state']],
    ['D2_X', ['D1_FName', 'D1_DOB', 'D2_FName', 'D2_DOB'],
      [{ stem: 'D', numbers: [1, 2], fields: ['FName=D{0}_FName', 'DOB=D{0}_DOB'], groups: [] }], []],
    ['Driver 2 X', ['Driver 1 First Name', 'Driver 1 Birth Date', 'Driver 2 First Name', 'Driver 2 Birth Date'],
      [{ stem: 'Driver ', numbers: [1, 2], fields: ['First Name=Driver {0} First Name', 'Birth Date=Driver {0} Birth Date'], groups: [] }], []],
    ['x_2', ['first_name_1', 'dob_1', 'first_name_2', 'dob_2', 'zip'],
      [{ stem: '_', numbers: [1, 2], fields: ['first_name=first_name_{0}', 'dob=dob_{0}'], groups: [] }], ['zip']],
    ['nested D1_Inc2_X', ['D1_FName', 'D1_Inc1_Code', 'D1_Inc1_Date', 'D1_Inc2_Code', 'D1_Inc2_Date', 'D2_FName', 'D2_Inc1_Code', 'D2_Inc1_Date', 'D2_Inc2_Code', 'D2_Inc2_Date'],
      [{
        stem: 'D', numbers: [1, 2], fields: ['FName=D{0}_FName'],
        groups: [{ stem: '_Inc', numbers: [1, 2], fields: ['Code=D{0}_Inc{1}_Code', 'Date=D{0}_Inc{1}_Date'], groups: [] }],
      }], []],
    ['camelCase numbered at the end; the vehicle fields a group of their own', ['firstName1', 'lastName1', 'dateOfBirth1', 'firstName2', 'lastName2', 'dateOfBirth2', 'vin1', 'modelYear1', 'vin2', 'modelYear2', 'city'],
      [
        { stem: '', numbers: [1, 2], fields: ['firstName=firstName{0}', 'lastName=lastName{0}', 'dateOfBirth=dateOfBirth{0}'], groups: [] },
        { stem: 'vehicle', numbers: [1, 2], fields: ['vin=vin{0}', 'modelYear=modelYear{0}'], groups: [] },
      ], ['city']],
    ['one driver only, named as a driver', ['D1_FName', 'D1_DOB', 'lead_id'],
      [{ stem: 'D', numbers: [1], fields: ['FName=D{0}_FName', 'DOB=D{0}_DOB'], groups: [] }], ['lead_id']],
  ] as const)('%s', (_, header, groups, rest) => {
    const found = detectGroups(header);
    expect(found.groups.map(describeGroup)).toEqual(groups);
    expect(found.rest).toEqual(rest);
  });

  it.each([
    ['numbered lines of one field', ['address_line_1', 'address_line_2', 'city']],
    ['a number inside a name', ['Addr1', 'Addr2', 'Zip5']],
    ['two fields numbered without a separator', ['address1', 'address2', 'phone1', 'phone2']],
    ['one number of an unknown stem', ['Foo1_a', 'Foo1_b']],
    ['zero-padded numbers', ['D01_FName', 'D01_DOB', 'D02_FName', 'D02_DOB']],
  ])('not a group: %s', (_, header) => {
    const found = detectGroups(header);
    expect(found.groups).toEqual([]);
    expect(found.rest).toEqual(header);
  });

  it('takes a 10 MB column name in its stride', () => {
    const huge = `D1_${'x'.repeat(10 * 1024 * 1024)}`;
    const started = performance.now();
    const found = detectGroups([huge, 'D1_FName', 'D2_FName', 'D2_DOB', `${huge}2`]);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(found.groups[0]?.numbers).toEqual([1, 2]);
  });

  it.each([
    ['D', 'driver'], ['Driver ', 'driver'], ['drv', 'driver'], ['V', 'vehicle'], ['vehicle', 'vehicle'], ['Veh_', 'vehicle'],
    ['_Inc', 'incident'], ['_Violation', 'incident'], ['Foo', undefined], ['_', undefined],
  ] as const)('stem %j names a %s', (stem, entity) => {
    expect(stemEntity(stem)).toBe(entity);
  });
});
