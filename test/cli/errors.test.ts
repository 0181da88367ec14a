/**
 * Every error a user can cause prints one line naming the thing and one hint, exits 2 and sends
 * nothing (README, --json-log); with --json-log the same as one JSON line (issue 9 item 7).
 */
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { MAPPING_CSV, SAMPLE_CSV } from '../pipeline/_setup.js';

/** Root reads and writes whatever the mode says: permission cases only mean something for other users. */
const asRoot = process.getuid?.() === 0;

describe('errors a user can cause', () => {
  const tmp = useTempDir('quote-batch-errors-');

  /** `run` of the samples with `extra` flags; the ledger in the temp dir unless given. */
  async function run(extra: readonly string[], input = SAMPLE_CSV) {
    const hasLedger = extra.includes('--ledger');
    const args = ['run', input, '--mapping', MAPPING_CSV, '--env', 'sandbox', ...(hasLedger ? [] : ['--ledger', tmp.path('l.db')]), ...extra];
    return runCli(args, { cwd: tmp.dir, timeoutMs: 30_000 });
  }

  /** Exit 2, then exactly an `error:` line matching `message` and a `hint:` line matching `hint`. */
  function expectOneLineAndHint(result: { code: number | null; stdout: string; stderr: string }, message: RegExp, hint: RegExp): void {
    expect(result.code, result.stderr).toBe(2);
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines, result.stderr).toHaveLength(2);
    expect(lines[0]).toMatch(/^error: /);
    expect(lines[0]).toMatch(message);
    expect(lines[1]).toMatch(/^hint: /);
    expect(lines[1]).toMatch(hint);
    expect(result.stdout).toBe('');
  }

  it.each([
    ['a missing input', () => [[], tmp.path('missing.csv')] as const, /cannot open input file .*missing\.csv: no such file$/, /check the path/],
    ['a directory as input', () => [[], tmp.dir] as const, /cannot open input file .*: it is a directory$/, /name the lead file itself/],
    ['a ledger directory that does not exist', () => [['--ledger', tmp.path('nowhere/l.db')], SAMPLE_CSV] as const, /cannot create ledger .*l\.db: the directory .*nowhere does not exist$/, /create it, or pass --ledger/],
    ['a ledger path that is a directory', () => [['--ledger', tmp.dir], SAMPLE_CSV] as const, /the ledger path .* is a directory$/, /pass --ledger <file> naming a file/],
    ['a missing key file', () => [['--api-key-file', tmp.path('key.txt')], SAMPLE_CSV] as const, /API key file .*key\.txt does not exist$/, /--api-key-file <file>.*QUOTE_BATCH_API_KEY/],
    ['a key file that is a directory', () => [['--api-key-file', tmp.dir], SAMPLE_CSV] as const, /API key file .* is not a regular file$/, /naming the file that holds the key/],
  ])('%s', async (_name, make, message, hint) => {
    const [extra, input] = make();
    expectOneLineAndHint(await run(extra, input), message, hint);
  });

  it('a path that is no file is named so before its name is judged; init says how to name a file of an unknown kind', async () => {
    mkdirSync(tmp.path('exports'));
    expectOneLineAndHint(await run([], tmp.path('missing.txt')), /cannot open input file .*missing\.txt: no such file$/, /check the path/);
    expectOneLineAndHint(await run([], tmp.path('exports')), /cannot open input file .*exports: it is a directory$/, /name the lead file itself/);
    writeFileSync(tmp.path('leads.txt'), 'a,b\n1,2\n');
    const init = await runCli(['init', 'leads.txt'], { cwd: tmp.dir, timeoutMs: 30_000 });
    expectOneLineAndHint(init, /cannot tell the format of input file .*leads\.txt/, new RegExp(`init tells the format from the name: copy or rename the file, e\\.g\\. cp ${tmp.path('leads.txt')} ${tmp.path('leads.csv')}$`));
  });

  it('an empty key file', async () => {
    writeFileSync(tmp.path('key.txt'), '\n');
    expectOneLineAndHint(await run(['--api-key-file', tmp.path('key.txt')]), /API key file .*key\.txt is empty$/, /alone on the first line/);
  });

  it.skipIf(asRoot)('an unreadable input, key file and ledger directory', async () => {
    writeFileSync(tmp.path('leads.csv'), 'a,b\n1,2\n');
    chmodSync(tmp.path('leads.csv'), 0o000);
    expectOneLineAndHint(await run([], tmp.path('leads.csv')), /cannot open input file .*: permission denied$/, /readable by the user/);
    writeFileSync(tmp.path('key.txt'), 'k\n', { mode: 0o000 });
    expectOneLineAndHint(await run(['--api-key-file', tmp.path('key.txt')]), /API key file .* cannot be read: permission denied$/, /chmod 600/);
    mkdirSync(tmp.path('ro'), { mode: 0o500 });
    expectOneLineAndHint(await run(['--ledger', tmp.path('ro/l.db')]), /cannot create ledger .*: the directory .*ro is not writable$/, /pass --ledger <file> elsewhere/);
  });

  it.each([
    ['a value out of range', 'defaults:\n  env: sandbox\n  concurrency: 5000\n', /config\.yaml:3:16: defaults\.concurrency: too big \(expected at most 1024, got 5000\)$/, /Configuration/],
    ['a value of the wrong type', 'defaults:\n  rate: fast\n', /config\.yaml:2:9: defaults\.rate: wrong type \(expected a number, got "fast"\)$/, /Configuration/],
    ['a value not allowed', 'defaults:\n  env: staging\n', /config\.yaml:2:8: defaults\.env: not allowed \(expected one of sandbox, uat, production, got "staging"\)$/, /Configuration/],
    ['an unknown key', 'defaults:\n  env: sandbox\n  concurency: 4\n', /config\.yaml:3:3: defaults\.concurency: unknown key \(expected one of env, ledger, .*concurrency.*, got "concurency"\)$/, /flag names are written as on the command line/],
    ['broken YAML', 'defaults:\n  env: [sandbox\n', /config\.yaml:\d+:\d+: YAML: /, /indentation and quoting/],
    // Durations were checked only as the run started, and a bad one ended it with exit 2 and no word.
    ['a duration that is none', 'defaults:\n  env: sandbox\n  max-outage: 10 minutes\n', /config\.yaml:3:15: defaults\.max-outage: expected a duration such as 90s, 10m, 2h or a number of seconds \(0: none\) \(got "10 minutes"\)$/, /Configuration/],
    ['a run time of 0', 'defaults:\n  env: sandbox\n  max-runtime: 0\n', /config\.yaml:3:16: defaults\.max-runtime: expected a duration more than 0, .* \(got 0\)$/, /Configuration/],
    // A Node timer holds 24.8 days at most: a longer wait fired at once, or never.
    ['a wait longer than a timer holds', 'defaults:\n  env: sandbox\n  max-outage: 30d\n', /config\.yaml:3:15: defaults\.max-outage: expected a duration of at most 24d00h \(got "30d"\)$/, /Configuration/],
  ])('a bad config file: %s names the file, line, key and value', async (_name, yaml, message, hint) => {
    writeFileSync(tmp.path('config.yaml'), yaml);
    expectOneLineAndHint(await run(['--config', tmp.path('config.yaml')]), message, hint);
  });

  it('a config file may set max-outage and max-retry-after to 0, as the flags may', async () => {
    writeFileSync(tmp.path('config.yaml'), 'defaults:\n  env: sandbox\n  max-outage: 0\n  max-retry-after: 0\n');
    const result = await run(['--config', tmp.path('config.yaml'), '--limit', '3', '--quiet']);
    expect(result.stderr).not.toMatch(/error/);
    expect(result.code).toBe(3); // --limit: the job is not complete
  });

  it('a missing --config file', async () => {
    expectOneLineAndHint(await run(['--config', tmp.path('nope.yaml')]), /cannot read config file .*nope\.yaml: no such file$/, /--config <file>/);
  });

  it('prints each of them as one JSON line with the hint as a field under --json-log', async () => {
    writeFileSync(tmp.path('config.yaml'), 'defaults:\n  concurrency: 0\n');
    const results = [
      await run(['--json-log'], tmp.path('missing.csv')),
      await run(['--json-log', '--config', tmp.path('config.yaml')]),
      await run(['--json-log', '--ledger', tmp.dir]),
      await run(['--json-log', '--no-such-flag']),
    ];
    for (const result of results) {
      expect(result.code).toBe(2);
      const lines = result.stderr.trimEnd().split('\n');
      const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(records[0]).toMatchObject({ level: 'error', exit_code: 2 });
    }
    expect(JSON.parse(results[1]!.stderr)).toMatchObject({
      level: 'error', event: 'error', code: 'E_CONFIG', msg: expect.stringMatching(/config\.yaml:2:16: defaults\.concurrency: too small \(expected more than 0, got 0\)$/), hint: expect.any(String),
    });
    expect(JSON.parse(results[0]!.stderr)).toMatchObject({ code: 'E_INPUT', hint: expect.stringMatching(/check the path/) });
  });

  it('the commands a nightly script runs around run (check, jobs, report, export) take --json-log: every stderr line is JSON, their notes events with fields', async () => {
    const ledger = tmp.path('nightly.db');
    const sent = await run(['--json-log', '--ledger', ledger, '--quiet']);
    expect(sent.code).toBe(1); // the samples' deliberate bad rows
    const cli = (args: readonly string[]) => runCli([...args, '--json-log'], { cwd: tmp.dir, timeoutMs: 30_000 });
    const results = {
      check: await cli(['check', SAMPLE_CSV, '--mapping', MAPPING_CSV]),
      jobs: await cli(['jobs', '--ledger', ledger]),
      report: await cli(['report', '--ledger', ledger, '--format', 'html', '--out', tmp.path('report.html')]),
      export: await cli(['export', '--ledger', ledger, '--status', 'invalid,rejected', '--out', tmp.path('to-fix.csv')]),
      missing: await cli(['export', '--ledger', tmp.path('nope.db')]),
    };
    const events = Object.fromEntries(Object.entries(results).map(([name, result]) => {
      const lines = result.stderr.trimEnd().split('\n').filter((line) => line !== '');
      return [name, lines.map((line) => JSON.parse(line) as Record<string, unknown>)];
    }));
    expect(results.check.code).toBe(1);
    expect(events.check).toEqual([]);
    expect(results.jobs.code).toBe(0);
    expect(events.jobs).toEqual([]);
    expect(events.report).toEqual([expect.objectContaining({ level: 'info', event: 'report_written', job_id: 1, format: 'html', out: tmp.path('report.html') })]);
    expect(events.export).toEqual([expect.objectContaining({ level: 'info', event: 'exported', job_id: 1, rows: expect.any(Number), format: 'csv', out: tmp.path('to-fix.csv') })]);
    expect(events.export?.[0]?.rows).toBeGreaterThan(0);
    expect(results.missing.code).toBe(2);
    expect(events.missing).toEqual([expect.objectContaining({ level: 'error', code: 'E_LEDGER', exit_code: 2 })]);
  });

  it('leaves the value of an unknown --option=value out of the error, with or without --json-log (a guessed --api-key=…)', async () => {
    const secret = 'made-up-secret-7f3a';
    for (const extra of [[], ['--json-log']]) {
      const result = await run([...extra, `--api-key=${secret}`]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain("unknown option '--api-key=…'");
      expect(result.stderr + result.stdout).not.toContain(secret);
    }
  });

  it.each([
    ['an unknown flag', ['--no-such-flag'], /^unknown option '--no-such-flag'$/],
    ['a bad flag value', ['--concurrency', 'lots'], /^option '--concurrency <n>' argument 'lots' is invalid/],
  ])('a usage error of commander\'s (%s) is one JSON line with code E_USAGE, a hint and exit_code 2 under --json-log', async (_name, extra, message) => {
    const result = await run(['--json-log', ...extra]);
    expect(result.code).toBe(2);
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines, result.stderr).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: 'error', event: 'usage_error', code: 'E_USAGE', hint: 'run `quote-batch run --help` for usage', exit_code: 2, msg: expect.stringMatching(message),
    });
    expect(result.stdout).toBe('');
    // Without --json-log: commander's line and its pointer to --help, as before.
    const plain = await run(extra);
    expect(plain.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(/^error: /), '(run with --help for usage)']);
  });

  it('under --json-log a usage error before any command names the program\'s help', async () => {
    const result = await runCli(['--json-log'], { cwd: tmp.dir, timeoutMs: 30_000 });
    expect(result.code).toBe(2);
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines, result.stderr).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ event: 'usage_error', code: 'E_USAGE', hint: 'run `quote-batch --help` for usage', exit_code: 2 });
  });
});
