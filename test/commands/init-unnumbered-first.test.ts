/**
 * A new user's first try on an export whose primary driver's columns carry no number (`First Name`,
 * `Date Of Birth`…) and whose second driver's do (`Driver 2 First Name`…), with the real CLI:
 * `init` drafts one drivers group with an unnumbered first member, `check` finds every row valid,
 * and `preview` of a row with two drivers shows two whole drivers, each with their own name. The
 * "obvious fix" of the earlier draft (the primary driver's name as top-level fields beside a group
 * over the drivers) is refused, naming both. The file (test/fixtures/mapping/unnumbered-first/)
 * holds made-up people only.
 */
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT, runCli } from '../helpers/cli.js';
import { useTempDir } from '../helpers/temp-dir.js';

const FIXTURE = join(REPO_ROOT, 'test/fixtures/mapping/unnumbered-first');

interface Driver { name: { first_name: string; last_name: string }; dob: string; gender?: string; contact_info?: { email?: string } }

/** The file's rows by header name. */
function fileRows(): Record<string, string>[] {
  const [header, ...lines] = readFileSync(join(FIXTURE, 'policies.tsv'), 'utf8').trimEnd().split('\n');
  const names = (header ?? '').split('\t');
  return lines.map((line) => Object.fromEntries(line.split('\t').map((value, i) => [names[i] ?? '', value])));
}

describe('init on an export with an unnumbered primary driver and a numbered Driver 2', () => {
  const tmp = useTempDir('quote-batch-unnumbered-first-');

  it('init → check: every row valid; preview: each row with two drivers sends both, whole and apart', async () => {
    copyFileSync(join(FIXTURE, 'policies.tsv'), tmp.path('policies.tsv'));
    const init = await runCli(['init', 'policies.tsv', '--out', 'm.yaml'], { cwd: tmp.dir, timeoutMs: 30_000 });
    expect(init.code, init.stderr).toBe(0);
    const draft = readFileSync(tmp.path('m.yaml'), 'utf8');
    expect(draft).toContain('first_without: "Driver {n} "');
    // The primary driver's name, birth date and gender are placed (in the group), not left over.
    expect(init.stdout + init.stderr).not.toMatch(/not placed: .*(First Name|Last Name|Date Of Birth|Gender)/);
    expect(draft).not.toMatch(/application\.drivers\[0\]\.(name|dob|gender)/);

    const check = await runCli(['check', 'policies.tsv', '--mapping', 'm.yaml', '--json'], { cwd: tmp.dir, timeoutMs: 30_000 });
    const summary = JSON.parse(check.stdout) as { rows: number; valid: number; invalid: number };
    expect(summary).toMatchObject({ rows: 20, valid: 20, invalid: 0 });

    const preview = await runCli(['preview', 'policies.tsv', '--mapping', 'm.yaml', '--rows', '20', '--json'], { cwd: tmp.dir, timeoutMs: 30_000 });
    expect(preview.code, preview.stderr).toBe(0);
    const previewed = JSON.parse(preview.stdout) as { row: number; valid: boolean; request: { application: { drivers: Driver[] } } }[];
    const rows = fileRows();
    expect(previewed).toHaveLength(20);
    let withTwo = 0;
    for (const { row, valid, request } of previewed) {
      const want = rows[row - 1] as Record<string, string>;
      const { drivers } = request.application;
      expect(valid).toBe(true);
      const first = drivers[0] as Driver;
      expect([first.name.first_name, first.name.last_name, first.gender, first.contact_info?.email])
        .toEqual([want['First Name'], want['Last Name'], want.Gender?.toLowerCase(), want['Email Address']]);
      if ((want['Driver 2 First Name'] ?? '') === '') {
        expect(drivers).toHaveLength(1);
        continue;
      }
      withTwo += 1;
      expect(drivers).toHaveLength(2);
      const second = drivers[1] as Driver;
      expect([second.name.first_name, second.name.last_name, second.gender])
        .toEqual([want['Driver 2 First Name'], want['Driver 2 Last Name'], want['Driver 2 Gender']?.toLowerCase()]);
      expect(second.dob).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      // Driver 1's contact data stays with driver 1.
      expect(second.contact_info).toBeUndefined();
    }
    expect(withTwo).toBe(7);
  });

  it('preview --row 1 shows Avery and Reese as two drivers', async () => {
    copyFileSync(join(FIXTURE, 'policies.tsv'), tmp.path('policies.tsv'));
    const preview = await runCli(['preview', 'policies.tsv', '--mapping', join(FIXTURE, 'hand.yaml'), '--row', '1', '--json'], { cwd: tmp.dir, timeoutMs: 30_000 });
    expect(preview.code, preview.stderr).toBe(0);
    const [one] = JSON.parse(preview.stdout) as { request: { application: { drivers: Driver[] } } }[];
    expect(one?.request.application.drivers.map((d) => `${d.name.first_name} ${d.name.last_name} ${d.dob}`))
      .toEqual(['Avery Dummond 1987-02-06', 'Reese Dummond 1990-12-11']);
  });

  it('check refuses the primary driver\'s name as top-level fields beside a group over the drivers, naming both', async () => {
    copyFileSync(join(FIXTURE, 'policies.tsv'), tmp.path('policies.tsv'));
    const check = await runCli(['check', 'policies.tsv', '--mapping', join(FIXTURE, 'obvious-fix.yaml')], { cwd: tmp.dir, timeoutMs: 30_000 });
    expect(check.code).toBe(2);
    expect(check.stderr).toContain('application.drivers[0].name.first_name: filled twice: here (from First Name) and by the group over application.drivers (name.first_name from Driver 2 First Name)');
    expect(check.stderr).toContain('application.drivers[0].dob: filled twice: here (from Date Of Birth)');
    expect(check.stderr).toContain('mixing two people');
  });
});
