/**
 * docs/mapping.md shows the partner's known words as generated from src/partner/known-words.ts.
 * When this fails, regenerate the table: UPDATE_DOCS=1 npx vitest run test/mapping/known-words-docs.test.ts
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findKnownWord, KNOWN_VALUES, KNOWN_WORDS, renderKnownWordsTable } from '../../src/partner/known-words.js';
import { findUnknownEnumValues } from '../../src/partner/schemas.js';

const DOC = join(import.meta.dirname, '..', '..', 'docs', 'mapping.md');
const BLOCK = /(<!-- known-words:start -->\n)[\s\S]*?(<!-- known-words:end -->)/;

describe('known words', () => {
  it('docs/mapping.md shows the table generated from known-words.ts', () => {
    const text = readFileSync(DOC, 'utf8');
    expect(text).toMatch(BLOCK);
    const generated = text.replace(BLOCK, `$1${renderKnownWordsTable()}$2`);
    if (process.env.UPDATE_DOCS === '1') writeFileSync(DOC, generated);
    expect(text, 'docs/mapping.md is out of date: UPDATE_DOCS=1 npx vitest run test/mapping/known-words-docs.test.ts').toBe(generated);
  });

  it.each([
    ['application.drivers[].gender', 'M', 'male'],
    ['application.drivers[].gender', 'female', 'female'],
    ['application.drivers[].residence.type', 'OWN', 'own_home'],
    ['application.drivers[].residence.type', 'Mobile Home', 'own_mobile_home'],
    ['application.drivers[].education', 'PHD', 'phd'],
    ['application.vehicles[].ownership.type', 'LSE', 'leased'],
    ['application.drivers[].gender', 'Q', undefined],
    ['tracking.click_id', 'M', undefined],
  ])('%s: %s → %s', (path, code, word) => {
    expect(findKnownWord(path, code)).toBe(word);
  });

  it('a code names one word per field, and the words are what the request check warns about', () => {
    for (const [path, words] of Object.entries(KNOWN_WORDS)) {
      const wordOf = new Map<string, string>();
      for (const { word, codes } of words) {
        for (const code of [word, ...codes]) {
          const simple = code.toLowerCase().replace(/[\s_.-]+/g, '');
          expect(wordOf.get(simple) ?? word, `${path}: "${code}" names two words`).toBe(word);
          wordOf.set(simple, word);
        }
      }
      expect(KNOWN_VALUES[path]).toEqual(words.map((w) => w.word));
    }
    const request = { application: { drivers: [{ gender: 'male', marital_status: 'complicated' }] } };
    expect(findUnknownEnumValues(request).map((w) => w.path)).toEqual(['application.drivers[0].marital_status']);
  });
});
