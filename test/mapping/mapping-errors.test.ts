import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isQuoteBatchError, type QuoteBatchError } from '../../src/errors.js';
import { compileMapping, loadMapping } from '../../src/mapping/index.js';

const FIXTURES = join(import.meta.dirname, '..', 'fixtures', 'mapping');

async function loadError(name: string): Promise<QuoteBatchError> {
  const file = join(FIXTURES, `${name}.yaml`);
  try {
    await loadMapping(file);
  } catch (error) {
    if (isQuoteBatchError(error)) return error;
    throw error;
  }
  throw new Error(`${name} loaded without an error`);
}

// Each case: the fixture, the line the mistake is reported at, words of the message and hint.
const CASES: [name: string, line: number, message: RegExp, hint: RegExp][] = [
  ['bad-yaml-syntax-error', 4, /YAML: Flow map/, /indentation/],
  ['bad-unknown-key', 3, /unknown key "colum"/, /did you mean "column"/],
  ['bad-unknown-transform', 3, /unknown key "uppercase"/, /case: upper/],
  ['bad-unknown-type', 3, /"datee" is not allowed/, /did you mean "date"/],
  ['bad-bad-date-format', 3, /unknown token "QQ" in format "MM\/QQ\/YYYY"/, /YYYY, YY, MM/],
  ['bad-date-without-format', 3, /a date needs its source format/, /format: MM\/DD\/YYYY/],
  ['bad-bad-time-zone', 3, /unknown time zone "Mars\/Olympus"/, /America\/New_York/],
  ['bad-unknown-target-path', 4, /not a QuoteRequest path: tracking has no member "clik_id"/, /did you mean "click_id"/],
  ['bad-number-without-type', 3, /pricing\.lead_price is a number in the QuoteRequest/, /type: decimal/],
  ['bad-two-sources', 3, /more than one source \(column, literal\)/, /default:/],
  ['bad-no-source', 3, /no source/, /column: first_name/],
  ['bad-group-without-key', 5, /missing "key"/, /must have a value for the group to exist/],
  ['bad-group-key-without-index', 7, /does not contain \{n\}/, /driver\{n\}_first_name/],
  ['bad-group-without-repeat', 4, /index:.*count:.*each:/, /index: n/],
  ['bad-group-target-not-array', 4, /application\.coverage is not an array/, /application\.drivers/],
  ['bad-unknown-index-variable', 9, /"driver\{m\}_first_name" has an unknown \{…\} index/, /define \{n\}/],
  ['bad-missing-version', 1, /missing "version"/, /version: 1/],
  ['bad-on-miss-default-without-default', 3, /on_miss: default` needs a `default:`/, /default: other/],
  ['bad-mapped-twice', 4, /Map keys must be unique/, /mapped once/],
  ['bad-conversion-on-literal', 3, /literal takes no conversion \(case\)/, /exactly as it should be sent/],
];

describe('mapping-file mistakes', () => {
  it.each(CASES)('%s is reported at its line with a hint', async (name, line, message, hint) => {
    const error = await loadError(name);
    expect(error.code).toBe('E_MAPPING');
    expect(error.message).toContain(`${name}.yaml:${line}:`);
    expect(error.message).toMatch(message);
    expect(error.hint).toMatch(hint);
  });

  it('reports every mistake of a file at once, each at its own line', async () => {
    const error = await loadError('bad-several-mistakes');
    expect(error.message).toMatch(/2 mistakes/);
    expect(error.message).toMatch(/bad-several-mistakes\.yaml:3:\d+: .*unknown key "colum"/);
    expect(error.message).toMatch(/bad-several-mistakes\.yaml:4:\d+: .*unknown key "tpye".*did you mean "type"/);
  });

  it('a missing file is an E_MAPPING error naming it', async () => {
    await expect(loadMapping(join(FIXTURES, 'no-such-file.yaml'))).rejects.toMatchObject({
      code: 'E_MAPPING',
      message: expect.stringContaining('no-such-file.yaml: no such file'),
    });
  });

  it('a mapping naming a column the file lacks fails before any row, with did-you-mean and the YAML line', () => {
    const mapping = compileMapping('version: 1\nfields:\n  channel.channel_id: { literal: acme }\n  tracking.click_id: clickid\n', 'm.yaml');
    expect(() => mapping.checkColumns(['click_id', 'lead_id'])).toThrow(/m\.yaml:4: the input has no column "clickid" \(did you mean "click_id"\?\)/);
    try {
      mapping.checkColumns(['click_id']);
    } catch (error) {
      expect((error as QuoteBatchError).code).toBe('E_MAPPING');
      expect((error as QuoteBatchError).hint).toMatch(/did you mean "click_id"/);
    }
    expect(() => mapping.checkColumns(['clickid'])).not.toThrow();
  });

  it('a mapping that reads nested NDJSON paths refuses a CSV header', () => {
    const mapping = compileMapping('version: 1\nfields:\n  tracking.click_id: { path: ids.click }\n', 'n.yaml');
    expect(() => mapping.checkColumns(['ids.click'])).toThrow(/reads nested NDJSON paths \(ids\.click\).*flat CSV/);
  });

  it('both example mappings load', async () => {
    for (const name of ['example-csv.yaml', 'example-ndjson.yaml']) {
      const mapping = await loadMapping(join(import.meta.dirname, '..', '..', 'mappings', name));
      expect(mapping.sha256).toMatch(/^[0-9a-f]{64}$/);
    }
  });
});
