/**
 * The specs `init` drafts for fields that need more than a column: a boolean with the words the
 * sample uses, and a value table from the file's codes to the partner's known words.
 */
import { findKnownWord, KNOWN_WORDS } from '../../partner/known-words.js';
import type { ValueShape } from './values.js';

/** A column with more distinct values than this is not a code list: no value table. */
const MAX_TABLE_CODES = 30;

export function booleanSpec(source: Record<string, unknown>, shape: ValueShape): { spec: Record<string, unknown>; note: string | undefined } {
  if (shape.type === 'boolean' && shape.trueWords !== undefined && shape.falseWords !== undefined) {
    return { spec: { ...source, type: 'boolean', true: shape.trueWords, false: shape.falseWords }, note: undefined };
  }
  return { spec: { ...source, type: 'boolean' }, note: shape.type === 'boolean' || shape.type === 'empty' ? undefined : 'check: the sample does not read as yes/no' };
}

/** A value table from the codes seen to the partner's known words (docs/mapping.md, "Known words"). */
export function wordsSpec(source: Record<string, unknown>, plain: () => string | Record<string, unknown>, texts: readonly string[], pattern: string):
  { spec: string | Record<string, unknown>; note: string | undefined } {
  const known = KNOWN_WORDS[pattern];
  const codes = [...new Set(texts)];
  if (known === undefined || codes.length === 0) return { spec: plain(), note: undefined };
  const words = new Set(known.map((k) => k.word));
  if (codes.every((code) => words.has(code))) return { spec: plain(), note: undefined };
  if (codes.every((code) => words.has(code.toLowerCase()))) return { spec: { ...source, case: 'lower' }, note: undefined };
  if (codes.length > MAX_TABLE_CODES) return { spec: { ...source, case: 'lower' }, note: `check: ${codes.length} different values, not a code list` };
  const table: Record<string, string> = {};
  const unknown: string[] = [];
  // Codes differing only by case are one code (value tables ignore case): the first spelling seen names it.
  const spellings = new Map<string, string>();
  for (const code of codes) if (!spellings.has(code.toLowerCase())) spellings.set(code.toLowerCase(), code);
  for (const code of [...spellings.values()].sort()) {
    const word = findKnownWord(pattern, code);
    if (word === undefined) unknown.push(code);
    else table[code] = word;
  }
  if (Object.keys(table).length === 0) {
    return { spec: { ...source, case: 'lower' }, note: `decide: none of ${quoteList(unknown)} is a known word (known: ${[...words].join(', ')})` };
  }
  if (unknown.length === 0) return { spec: { ...source, map: table }, note: undefined };
  // Kept in lower case: the partner takes an unknown word (with a warning), not an upper-case code.
  return {
    spec: { ...source, case: 'lower', map: table, on_miss: 'keep' },
    note: `decide: ${quoteList(unknown)} matched no known word (known: ${[...words].join(', ')}); sent in lower case until mapped`,
  };
}

function quoteList(values: readonly string[]): string {
  return values.slice(0, 8).map((v) => JSON.stringify(v)).join(', ') + (values.length > 8 ? ', …' : '');
}

