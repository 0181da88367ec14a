/**
 * docs/mapping.md, "From init to a clean check in one sitting", is what the tool does: its file
 * drafted by the real CLI gives the draft the docs show, its first check the kinds the docs show,
 * and the docs' two decisions plus the corrected row give a clean check (exit 0).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { REPO_ROOT, runCli } from '../helpers/cli.js';
import { useTempDir } from '../helpers/temp-dir.js';

const DOC = readFileSync(join(REPO_ROOT, 'docs', 'mapping.md'), 'utf8');
const SECTION = DOC.slice(DOC.indexOf('## From `init` to a clean `check` in one sitting'), DOC.indexOf('## Fields and sources'));

/** The fenced blocks of the section with the info string `info`, in order. */
function blocks(info: string): string[] {
  const found: string[] = [];
  const lines = SECTION.split('\n');
  for (let i = 0; i < lines.length; i += 1) {
    if (!lines[i]?.startsWith('```')) continue;
    const end = lines.indexOf('```', i + 1);
    if (lines[i] === `\`\`\`${info}`) found.push(lines.slice(i + 1, end).join('\n'));
    i = end;
  }
  return found;
}

describe('docs/mapping.md: from init to a clean check in one sitting', () => {
  const tmp = useTempDir('quote-batch-walkthrough-');

  it('the draft, the first check and the clean check are as the docs say', async () => {
    const [csv] = blocks('csv');
    const [draftShown, decisions] = blocks('yaml');
    const [firstCheck] = blocks('');
    expect(csv).toBeDefined();
    const input = tmp.path('quotes.csv');
    const mapping = tmp.path('quotes.yaml');
    writeFileSync(input, csv ?? '');
    const init = await runCli(['init', input, '--out', mapping]);
    expect(init.stdout).toContain('15 of 15 columns placed');
    const drafted = readFileSync(mapping, 'utf8');
    // The docs leave out the header comments; the rest is the draft, line for line.
    expect(drafted.split('\n').filter((line) => !line.startsWith('#') && line !== '').join('\n')).toBe((draftShown ?? '').trim());

    const check = await runCli(['check', input, '--mapping', mapping]);
    expect(check.code).toBe(1);
    for (const line of (firstCheck ?? '').trim().split('\n')) expect(check.stdout.split('\n')).toContain(line);

    // The two decisions, and row 3 as the vendor corrects it.
    const decided = parse(decisions ?? '') as { fields: Record<string, string> };
    let text = drafted;
    for (const [path, spec] of Object.entries(decided.fields)) {
      text = text.replace(new RegExp(`^  ${path.replace(/[.[\]]/g, '\\$&')}: .*$`, 'm'), `  ${path}: ${JSON.stringify(spec)}`);
    }
    writeFileSync(mapping, text);
    writeFileSync(input, (csv ?? '').replace('Cy,Testwood,N/A,', 'Cy,Testwood,12-Jun-1985,').replace('3VWDX7AJ5BM12345,', '3VWDX7AJ5BM123456,'));
    expect(SECTION).toContain('`12-Jun-1985`, `3VWDX7AJ5BM123456`');
    const clean = await runCli(['check', input, '--mapping', mapping]);
    expect(clean.stdout).toContain('all rows are valid');
    expect(clean.code).toBe(0);
  });
});
