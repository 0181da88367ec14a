import { describe, expect, it } from 'vitest';
import { describeErrorKind, ErrorGroups, errorKindOf, normaliseReason, OTHER_KINDS_SUBJECT } from '../../src/error-groups.js';

describe('normaliseReason', () => {
  it.each([
    ['row 17: expected a date', 'expected a date'],
    ['line 12: unclosed quote', 'unclosed quote'],
    ['State "XX" is not supported', 'State "…" is not supported'],
    ['agent dana.whitfield@example.com not found', 'agent <email> not found'],
    ['transaction 3f2b9c1e-0d7a-4e55-9a1b-2c3d4e5f6a7b failed', 'transaction <id> failed'],
    ['vehicle 1HGCM82633A004352 not eligible', 'vehicle <id> not eligible'],
    ['Request body exceeds 1048576 bytes.', 'Request body exceeds N bytes.'],
    ['see https://partner.example/docs?id=4 now', 'see <url> now'],
    ['Processed successfully.', 'Processed successfully.'],
    ['state_not_supported', 'state_not_supported'],
    ['State AK is not supported.', 'State XX is not supported.'],
    ['The state NY is not supported', 'The state XX is not supported'],
    ['Agent ID is missing', 'Agent ID is missing'],
    // The client's own wording: the phase a time-out fired in is kept, the count of attempts dropped.
    ["POST /partner/v2/policy/quote: time-out in the 'request' phase; 3 attempts", 'POST /partner/v2/policy/quote: time-out in the request phase'],
    ['POST /partner/v2/policy/quote: read ECONNRESET; 2 attempts', 'POST /partner/v2/policy/quote: read ECONNRESET'],
    ['POST /partner/v2/policy/quote: read ECONNRESET', 'POST /partner/v2/policy/quote: read ECONNRESET'],
    // Which answer it was stays: an HTTP status with its reason phrase; and UTF-8 is not UTF-N.
    ['POST http://127.0.0.1:34729/partner/v2/policy/quote: 501 Not Implemented', 'POST <url> 501 Not Implemented'],
    ['agent validation: POST /account/v1/agent/validate: 429 Too Many Requests (rate_limited: Too many requests); 5 attempts', 'agent validation: POST /account/v1/agent/validate: 429 Too Many Requests (rate_limited: Too many requests)'],
    ['invalid UTF-8', 'invalid UTF-8'],
    ['expected 120 fields, got 119', 'expected N fields, got N'],
  ])('%s → %s', (input, expected) => {
    expect(normaliseReason(input)).toBe(expected);
  });
});

describe('errorKindOf', () => {
  it('groups one mapping mistake across rows, drivers and values', () => {
    const a = errorKindOf({ state: 'invalid', errorCode: 'mapping_error', message: 'row 17: application.drivers[1].dob: expected YYYY-MM-DD, got "13/45/1990" (column driver2_dob)' });
    const b = errorKindOf({ state: 'invalid', errorCode: 'mapping_error', message: 'row 90: application.drivers[0].dob: expected YYYY-MM-DD, got "1990-02-30" (column driver1_dob)' });
    expect(a.key).toBe(b.key);
    expect(a.subject).toBe('application.drivers[].dob: expected YYYY-MM-DD');
    expect(a.columns).toEqual(['driver2_dob']);
    expect(a.subject).not.toMatch(/17|90|1990/);
  });

  it('names the sources as the message did: an NDJSON input\'s fields are fields, not columns', () => {
    const one = errorKindOf({ state: 'invalid', errorCode: 'mapping_error', message: 'row 2: application.drivers[0].marital_status: expected string, got true (field person.married)' });
    expect(one.columns).toEqual(['person.married']);
    expect(describeErrorKind(one)).toBe('invalid · mapping_error · application.drivers[].marital_status: expected string (field person.married)');
    const two = errorKindOf({ state: 'invalid', errorCode: 'mapping_error', message: 'row 3: application.vehicles: required array, got nothing (fields cars[].vin, cars[].year)' });
    expect(describeErrorKind(two)).toBe('invalid · mapping_error · application.vehicles: required array (fields cars[].vin, cars[].year)');
    const csv = errorKindOf({ state: 'invalid', errorCode: 'mapping_error', message: 'row 17: application.drivers[1].dob: expected YYYY-MM-DD, got "x" (column driver2_dob)' });
    expect(describeErrorKind(csv)).toBe('invalid · mapping_error · application.drivers[].dob: expected YYYY-MM-DD (column driver2_dob)');
  });

  it("keeps a mapping message's own limits and takes its quoted values out", () => {
    const vin = errorKindOf({ state: 'invalid', errorCode: 'mapping_error', message: 'row 64: application.vehicles[0].vin: expected a 17-character VIN, got "W7BZMG009HPEN4JT" (column vehicle1_vin)' });
    expect(vin.subject).toBe('application.vehicles[].vin: expected a 17-character VIN');
    const tcpa = errorKindOf({ state: 'invalid', errorCode: 'mapping_error', message: 'row 140: compliance.tcpa_consent: expected yes or no (Y/N, yes/no, 1/0, true/false), got "maybe" (column tcpa_consent)' });
    expect(tcpa.subject).toBe('compliance.tcpa_consent: expected yes or no (Y/N, yes/no, 1/0, true/false)');
    const unknown = errorKindOf({ state: 'invalid', errorCode: 'mapping_error', message: 'row 9: application.drivers[0].gender: unknown value "X" (known: M, F) (column driver1_gender)' });
    expect(unknown.subject).toBe('application.drivers[].gender: unknown value "…" (known: M, F)');
  });

  it('takes the first issue of a row with several', () => {
    const kind = errorKindOf({
      state: 'invalid', errorCode: 'mapping_error',
      message: 'row 3: application.effective_date: is required (column eff); row 3: tracking.click_id: is required (column click)',
    });
    expect(kind.subject).toBe('application.effective_date: is required');
    expect(kind.columns).toEqual(['eff']);
  });

  it('keeps state and code apart', () => {
    const rejected = errorKindOf({ state: 'rejected', errorCode: 'state_not_supported', message: 'State not supported.' });
    const failed = errorKindOf({ state: 'failed', errorCode: 'state_not_supported', message: 'State not supported.' });
    expect(rejected.key).not.toBe(failed.key);
  });

  it('falls back to the code, then the state, when there is no message', () => {
    expect(errorKindOf({ state: 'failed', errorCode: 'http_503', message: null }).subject).toBe('http_503');
    expect(errorKindOf({ state: 'in_doubt', errorCode: null, message: '' }).subject).toBe('in_doubt');
  });

  it('groups partner messages that differ only by ids and numbers', () => {
    const a = errorKindOf({ state: 'in_doubt', errorCode: 'ETIMEDOUT', message: 'POST http://127.0.0.1:41234/partner/v2/policy/quote: ETIMEDOUT (time-out); 2 attempts' });
    const b = errorKindOf({ state: 'in_doubt', errorCode: 'ETIMEDOUT', message: 'POST http://127.0.0.1:41234/partner/v2/policy/quote: ETIMEDOUT (time-out); 3 attempts' });
    expect(a.key).toBe(b.key);
  });
});

describe('ErrorGroups', () => {
  it('counts by kind, keeps samples, and ranks largest first', () => {
    const groups = new ErrorGroups({ samples: 2 });
    for (let row = 1; row <= 5; row += 1) {
      groups.add({ state: 'rejected', errorCode: 'state_not_supported', message: `row ${row}: State "X${row}" not supported` }, row);
    }
    groups.add({ state: 'invalid', errorCode: 'mapping_error', message: 'row 9: tracking.click_id: is required (column click_id)' }, 9);
    expect(groups.size).toBe(2);
    const [first, second] = groups.top();
    expect(first).toMatchObject({ count: 5, rows: [1, 2], state: 'rejected' });
    expect(second).toMatchObject({ count: 1, rows: [9], columns: ['click_id'] });
    expect(describeErrorKind(second!)).toBe('invalid · mapping_error · tracking.click_id: is required (column click_id)');
    expect(groups.top(1)).toHaveLength(1);
  });

  it('gathers the partner messages of the samples (one per US state) in one kind, which names the states', () => {
    const groups = new ErrorGroups();
    for (const state of ['AK', 'HI', 'MA', 'HI']) {
      groups.add({ state: 'rejected', errorCode: 'state_not_supported', message: `State ${state} is not supported.` });
    }
    expect(groups.top().map((g) => [g.count, describeErrorKind(g)])).toEqual([
      [4, 'rejected · state_not_supported · State XX is not supported. (states AK, HI, MA)'],
    ]);
    const one = errorKindOf({ state: 'rejected', errorCode: 'state_not_supported', message: 'State ZZ is not supported.' });
    expect(describeErrorKind(one)).toBe('rejected · state_not_supported · State XX is not supported. (state ZZ)');
    // At most 8 listed; the count goes on.
    const many = new ErrorGroups();
    for (const state of ['AA', 'BB', 'CC', 'DD', 'EE', 'FF', 'GG', 'HH', 'II']) many.add({ state: 'rejected', errorCode: null, message: `State ${state} is not supported.` });
    expect(many.top()[0]).toMatchObject({ count: 9, states: ['AA', 'BB', 'CC', 'DD', 'EE', 'FF', 'GG', 'HH', '…'] });
    expect(describeErrorKind(many.top()[0]!)).toMatch(/\(states AA, BB, CC, DD, EE, FF, GG, HH, …\)$/);
  });

  it('leaves out a code that repeats the state', () => {
    const kind = errorKindOf({ state: 'agent_invalid', errorCode: 'agent_invalid', message: 'User not found.' });
    expect(describeErrorKind(kind)).toBe('agent_invalid · User not found.');
  });

  it('stops telling kinds apart past maxKinds: the rest is counted per state, nothing is lost', () => {
    const groups = new ErrorGroups({ maxKinds: 3, samples: 2 });
    for (let n = 1; n <= 10; n += 1) {
      groups.add({ state: n % 2 === 0 ? 'failed' : 'rejected', errorCode: null, message: `reason ${'abcdefghij'[n - 1] ?? ''}` }, n);
    }
    expect(groups.size).toBe(5);
    const top = groups.top();
    expect(top.reduce((sum, g) => sum + g.count, 0)).toBe(10);
    const other = top.filter((g) => g.subject === OTHER_KINDS_SUBJECT);
    // Rows 1–3 made the three kinds; rows 4–10 fell past the cap.
    expect(other.map((g) => [g.state, g.count, g.rows])).toEqual([['failed', 4, [4, 6]], ['rejected', 3, [5, 7]]]);
  });

  it('counts a row under each of its problems, once per kind: the groups say how many rows each problem affects', () => {
    const groups = new ErrorGroups({ samples: 5 });
    const issues = (row: number): string => [
      `row ${row}: application.drivers[0].dob: expected a date as DD-MMM-YYYY, got "1988-03-05" (column D1 DOB)`,
      `row ${row}: application.drivers[1].dob: expected a date as DD-MMM-YYYY, got "x" (column D2 DOB)`,
      `row ${row}: application.vehicles[0].vin: expected a 17-character VIN, got "123" (column V1 VIN)`,
      `row ${row}: tracking.consumer_source_ip: expected an IPv4 or IPv6 address, got "n/a" (column IP)`,
    ].join('; ');
    groups.add({ state: 'invalid', errorCode: 'mapping_error', message: issues(1) }, 1);
    groups.add({ state: 'invalid', errorCode: 'mapping_error', message: issues(2) }, 2);
    groups.add({ state: 'invalid', errorCode: 'mapping_error', message: 'row 3: application.vehicles[0].vin: expected a 17-character VIN, got "9" (column V1 VIN)' }, 3);
    expect(groups.top().map((g) => [g.count, g.rows, describeErrorKind(g)])).toEqual([
      [3, [1, 2, 3], 'invalid · mapping_error · application.vehicles[].vin: expected a 17-character VIN (column V1 VIN)'],
      // Two drivers' dates in one row: one row of that kind, both columns named.
      [2, [1, 2], 'invalid · mapping_error · application.drivers[].dob: expected a date as DD-MMM-YYYY (columns D1 DOB, D2 DOB)'],
      [2, [1, 2], 'invalid · mapping_error · tracking.consumer_source_ip: expected an IPv4 or IPv6 address (column IP)'],
    ]);
  });

  it('a row added twice to a group (two warnings of one kind) is one row, sampled once', () => {
    const groups = new ErrorGroups({ samples: 5 });
    for (const [row, n] of [[1, 1], [2, 1], [2, 2], [8, 1]] as const) {
      groups.add({ state: 'warning', errorCode: null, message: `row ${row}: application.drivers[${n}].gender: unknown value "x" (known: male, female) (column D${n} Sex)` }, row);
    }
    expect(groups.top().map((g) => [g.count, g.rows, g.columns])).toEqual([[3, [1, 2, 8], ['D1 Sex', 'D2 Sex']]]);
  });

  it('never puts a value into a group: the file\'s text after the columns, a long value cut inside its quotes', () => {
    const phone = errorKindOf({ state: 'invalid', errorCode: 'mapping_error', message: 'row 4: application.drivers[0].contact_info.phone: expected 10 digits, got "55501" (column Phone, "555-01" in the file)' });
    expect(describeErrorKind(phone)).toBe('invalid · mapping_error · application.drivers[].contact_info.phone: expected 10 digits (column Phone)');
    const odd = errorKindOf({ state: 'invalid', errorCode: 'mapping_error', message: 'row 4: application.drivers[0].contact_info.phone: expected 10 digits, got "55501" (column Phone, "(555) 01" in the file)' });
    expect(describeErrorKind(odd)).toBe('invalid · mapping_error · application.drivers[].contact_info.phone: expected 10 digits (column Phone)');
    const long = `${'x'.repeat(71)}…`;
    const table = errorKindOf({ state: 'warning', errorCode: null, message: `row 4: application.drivers[0].gender: "${long}" is not in the value table (knows M, F); sent as is (column Sex)` });
    expect(describeErrorKind(table)).toBe('warning · application.drivers[].gender: "…" is not in the value table (knows M, F); sent as is (column Sex)');
  });

  it('a last issue the ledger cut short is left out of the kinds', () => {
    const groups = new ErrorGroups();
    groups.add({ state: 'invalid', errorCode: 'mapping_error', message: 'row 5: tracking.click_id: required string, got nothing (column click); row 5: application.vehicles[0].vin: expected a 17-charac…' }, 5);
    expect(groups.top().map((g) => g.subject)).toEqual(['tracking.click_id: required string']);
  });
});

