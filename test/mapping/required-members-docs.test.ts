/**
 * docs/mapping.md shows the members the partner's schema requires inside each object, as generated
 * from the QuoteRequest. When this fails, regenerate the table:
 * UPDATE_DOCS=1 npx vitest run test/mapping/required-members-docs.test.ts
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { listRequiredMembers, renderRequiredMembersTable } from '../../src/mapping/_request-paths.js';
import { describeTokens } from '../../src/mapping/_dates.js';

const DOC = join(import.meta.dirname, '..', '..', 'docs', 'mapping.md');
const BLOCK = /(<!-- required-members:start -->\n)[\s\S]*?(<!-- required-members:end -->)/;

describe('docs/mapping.md and the QuoteRequest', () => {
  it('shows the members each object requires, generated from the partner schema', () => {
    const text = readFileSync(DOC, 'utf8');
    expect(text).toMatch(BLOCK);
    const generated = text.replace(BLOCK, `$1${renderRequiredMembersTable()}$2`);
    if (process.env.UPDATE_DOCS === '1') writeFileSync(DOC, generated);
    expect(text, 'docs/mapping.md is out of date: UPDATE_DOCS=1 npx vitest run test/mapping/required-members-docs.test.ts').toBe(generated);
  });

  it('an incident, optional, needs its code, date and fault when it is there', () => {
    expect(listRequiredMembers()).toContainEqual({ object: 'application.drivers[].incident_history[]', members: ['code', 'incident_date', 'is_at_fault'], optional: true });
  });

  it('documents every date and time token the loader reads', () => {
    const text = readFileSync(DOC, 'utf8');
    const tables = text.slice(text.indexOf('### Dates'), text.indexOf('### Money and limits'))
      .split('\n').filter((line) => line.startsWith('| `')).map((line) => line.split(' | ')[0] ?? '');
    for (const { token } of describeTokens()) expect(tables.some((cell) => cell.includes(`\`${token}\``)), token).toBe(true);
  });
});
