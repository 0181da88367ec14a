import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { REPO_ROOT, runCli } from '../helpers/cli.js';
import { useTempDir } from '../helpers/temp-dir.js';

const SECOND = 'test/fixtures/mapping/second-partner.csv';

describe('quote-batch init', () => {
  const tmp = useTempDir('quote-batch-init-');

  it.each([
    ['samples/leads.csv', 1],
    ['samples/leads.ndjson', 1],
    [SECOND, 0],
  ] as const)('%s: the draft printed on stdout loads, and check runs with it (exit %i)', async (input, checkCode) => {
    const init = await runCli(['init', input]);
    expect(init.stderr).toBe('');
    expect(init.code).toBe(0);
    expect(init.stdout).toMatch(/^# yaml-language-server: \$schema=\S+\n# Draft mapping for /);
    const draft = tmp.path('draft.yaml');
    writeFileSync(draft, init.stdout);
    const check = await runCli(['check', input, '--mapping', draft]);
    expect(check.stderr).toBe('');
    // 1 on the samples: their deliberately bad rows are still invalid.
    expect(check.code).toBe(checkCode);
  });

  it('finds the second layout\'s `;`, groups and formats', async () => {
    const init = await runCli(['init', SECOND]);
    const content = parse(init.stdout) as { input: unknown; groups: { target: string; count: number; key: string | string[]; groups?: { key: string }[] }[] };
    expect(content.input).toEqual({ delimiter: ';' });
    // A driver exists when either name is there; a vehicle (and its coverage) when its VIN is.
    expect(content.groups.map((g) => [g.target, g.count, g.key])).toEqual([
      ['application.drivers', 3, ['D{n}_FName', 'D{n}_LName']],
      ['application.vehicles', 2, 'V{v}_VIN'],
      ['application.coverage.vehicle_coverage', 2, 'V{v}_VIN'],
    ]);
    expect(content.groups[0]?.groups?.[0]?.key).toBe('D{n}_Inc{m}_Type');
    expect(init.stdout).toContain('compliance.consent_timestamp: { column: Submitted, type: timestamp, format: MM/DD/YYYY hh:mm A, zone: UTC }');
    expect(init.stdout).toContain('contact_info.phone: { column: "D{n}_Phone", type: phone }');
  });

  it('the channel id left as CHANGE-ME: check lists it, run sends it to the sandbox only (a real environment: exit 2, nothing sent)', async () => {
    const draft = tmp.path('placeholder.yaml');
    expect((await runCli(['init', SECOND, '--out', draft])).code).toBe(0);
    const check = await runCli(['check', SECOND, '--mapping', draft]);
    expect(check.code).toBe(0);
    expect(check.stdout).toContain('left to decide in the mapping (`run` sends it only to the sandbox):\n  channel.channel_id: still CHANGE-ME, the placeholder `init` wrote\n');
    const json = await runCli(['check', SECOND, '--mapping', draft, '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ placeholders: ['channel.channel_id'] });

    // A real environment is refused before any ledger or connection: port 9 (discard) would refuse anyway.
    const ledger = tmp.path('placeholder.db');
    const uat = await runCli(['run', SECOND, '--mapping', draft, '--env', 'uat', '--base-url', 'http://127.0.0.1:9', '--ledger', ledger], { env: { QUOTE_BATCH_API_KEY: 'made-up-key-1' } });
    expect(uat.code).toBe(2);
    expect(uat.stderr).toContain('channel.channel_id still holds CHANGE-ME, the placeholder `init` wrote; nothing was sent to uat');
    expect(existsSync(ledger)).toBe(false);

    // The embedded sandbox takes it, with a warning.
    const sandbox = await runCli(['run', SECOND, '--mapping', draft, '--env', 'sandbox', '--ledger', tmp.path('sandbox.db'), '--quiet', '--limit', '3'], { env: { QUOTE_BATCH_API_KEY: 'sandbox-key' } });
    expect(sandbox.stderr).toContain('warning: ');
    expect(sandbox.stderr).toContain('channel.channel_id still holds CHANGE-ME, the placeholder `init` wrote: the sandbox takes it, a real partner would not');
    expect(sandbox.code).toBe(3);
    expect(sandbox.stdout).toContain('exit 3: job not completed: this run was limited to the first 3 rows');
  });

  it('--out writes the draft and says what is left; an existing file is kept unless --force', async () => {
    const out = tmp.path('partner.yaml');
    const first = await runCli(['init', SECOND, '--out', out]);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^wrote .*partner\.yaml: 104 of 106 columns placed, from 30 rows\nnot placed: Lead_Score, Notes\n/);
    expect(readFileSync(out, 'utf8')).toMatch(/^# yaml-language-server: \$schema=\S+\n# Draft mapping for /);

    writeFileSync(out, 'mine\n');
    const again = await runCli(['init', SECOND, '--out', out]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/partner\.yaml already exists: init does not overwrite a mapping\nhint: .*--force/);
    expect(readFileSync(out, 'utf8')).toBe('mine\n');

    const forced = await runCli(['init', SECOND, '--out', out, '--force']);
    expect(forced.code).toBe(0);
    expect(readFileSync(out, 'utf8')).toMatch(/^# yaml-language-server: \$schema=\S+\n# Draft mapping for /);
  });

  it('columns named with { or } are never placed (a mapping would read them as indexes), and say why', async () => {
    const file = tmp.path('braces.csv');
    writeFileSync(file, 'click_id,{first},last},DOB,D1_FName,D1_{x},D2_FName,D2_{x}\nc-1,Ann,Lee,02/03/1980,Ann,1,Bo,2\n');
    const out = tmp.path('braces.yaml');
    const init = await runCli(['init', file, '--out', out]);
    expect(init.stderr).toBe('');
    expect(init.code).toBe(0);
    expect(init.stdout).toMatch(/^wrote .*braces\.yaml: 4 of 8 columns placed, from 1 row\nnot placed: \{first\}, last\}, D\{n\}_\{x\}\n/);
    const draft = readFileSync(out, 'utf8');
    expect(draft).toMatch(/# Not placed \(a mapping cannot name a column with \{ or \}: it reads \{…\} as a group's index or a template's column\): \{first\}, last\}, D\{n\}_\{x\}/);
    const check = await runCli(['check', file, '--mapping', out]);
    expect(check.stderr).toBe('');
    expect(check.code, 'the draft loads: 1 is a row to complete (no vehicle), 2 would be a bad mapping').toBe(1);
  });

  it('a 10 MB column name: the draft comes quickly and names it cut', async () => {
    const file = tmp.path('huge.csv');
    writeFileSync(file, `click_id,${'x'.repeat(10 * 1024 * 1024)},D1_FName,D1_DOB\nc-1,v,Ann,02/03/1980\n`);
    const started = performance.now();
    const init = await runCli(['init', file, '--out', tmp.path('huge.yaml')]);
    expect(init.code).toBe(0);
    expect(performance.now() - started).toBeLessThan(30_000);
    expect(init.stdout).toMatch(/^wrote .*huge\.yaml: 3 of 4 columns placed, from 1 row\nnot placed: x{60}… \(10485760 characters\)\n/);
    expect(readFileSync(tmp.path('huge.yaml'), 'utf8').length).toBeLessThan(5_000);
  });

  it('reads only the rows it needs, and refuses what it cannot read', async () => {
    const few = await runCli(['init', 'samples/leads.csv', '--rows', '5']);
    expect(few.stdout).toMatch(/from its header and 5 rows\./);
    // An NDJSON file has no header: the draft says what it read.
    const records = await runCli(['init', 'samples/leads.ndjson', '--rows', '5']);
    expect(records.stdout).toMatch(/from the fields of its first 5 records\./);
    const unknown = await runCli(['init', tmp.path('leads.xlsx')]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^error: .*leads\.xlsx/);
  });

  it('a draft names the shipped JSON Schema for its editor, relative to where it is written, and the schema accepts it', async () => {
    const out = tmp.path('deep/down/partner.yaml');
    mkdirSync(dirname(out), { recursive: true });
    expect((await runCli(['init', 'test/fixtures/mapping/layouts/title-case.tsv', '--out', out])).code).toBe(0);
    const text = readFileSync(out, 'utf8');
    const ref = /^# yaml-language-server: \$schema=(\S+)\n/.exec(text)?.[1];
    expect(ref).toMatch(/^\.\.?\/.*schema\/mapping\.schema\.json$/);
    expect(realpathSync(resolve(dirname(out), ref ?? ''))).toBe(realpathSync(join(REPO_ROOT, 'schema', 'mapping.schema.json')));
    const ajv = new Ajv2020();
    ajv.addVocabulary(['errorMessage', 'patternErrorMessage']);
    const validate = ajv.compile(JSON.parse(readFileSync(join(REPO_ROOT, 'schema', 'mapping.schema.json'), 'utf8')) as object);
    expect(validate(parse(text)), JSON.stringify(validate.errors)).toBe(true);
  });
});

describe('init → check in one sitting, on the three vendor layouts init is measured on', () => {
  const tmp = useTempDir('quote-batch-init-check-');

  it.each([
    ['numbered-pipe.csv', 0, []],
    ['title-case.tsv', 1, ['application.drivers[].name.first_name: required string (columns Driver 2 First Name, Driver 3 First Name, Driver 4 First Name)']],
    ['nested-vendor.ndjson', 0, []],
  ] as const)('%s: the first check of the draft lists every kind of problem its rows have', async (file, code, kinds) => {
    const input = `test/fixtures/mapping/layouts/${file}`;
    const out = tmp.path('draft.yaml');
    expect((await runCli(['init', input, '--out', out])).code).toBe(0);
    const check = await runCli(['check', input, '--mapping', out, '--json']);
    expect(check.stderr).toBe('');
    expect(check.code).toBe(code);
    const summary = JSON.parse(check.stdout) as { errorGroups: { subject: string; columns: string[] }[]; placeholders: string[] };
    expect(summary.errorGroups.map((g) => `${g.subject} (columns ${g.columns.join(', ')})`)).toEqual(kinds);
    // What is left to decide is said, not hidden: the channel id.
    expect(summary.placeholders).toEqual(['channel.channel_id']);
  });
});

