/**
 * Mistakes found in a mapping file, located at their line in the YAML. They are collected (so a
 * user sees every mistake at once) and thrown together as one E_MAPPING error.
 */
import { isMap, isSeq, isScalar, type Document, type LineCounter, type Node } from 'yaml';
import type { z } from 'zod';
import { QuoteBatchError } from '../errors.js';
import { ALLOWED_KEYS, KEY_HINTS } from './_schema.js';
import { findClosest } from './_text.js';

export type YamlPath = readonly (string | number)[];

interface Problem {
  line: number;
  col: number;
  where: string;
  message: string;
  hint: string | undefined;
}

const MAX_REPORTED = 12;

export class MappingProblems {
  private readonly problems: Problem[] = [];

  constructor(
    private readonly fileName: string,
    private readonly doc: Document | undefined,
    private readonly lineCounter: LineCounter,
  ) {}

  get count(): number {
    return this.problems.length;
  }

  /** Records a mistake at `path` (at the key itself when `atKey`, else at its value). */
  add(path: YamlPath, message: string, hint?: string, atKey = false): void {
    const { line, col } = this.locate(path, atKey);
    this.problems.push({ line, col, where: describeYamlPath(path), message, hint });
  }

  /** Records a mistake at a line already known (YAML syntax errors). */
  addAt(line: number, col: number, message: string, hint?: string): void {
    this.problems.push({ line, col, where: '', message, hint });
  }

  /** Translates zod's issues on the parsed file into located mistakes with hints. */
  addZodIssues(issues: readonly z.core.$ZodIssue[]): void {
    for (const issue of issues) {
      const path = issue.path.filter((key): key is string | number => typeof key !== 'symbol');
      if (issue.code === 'unrecognized_keys') {
        const allowed = allowedKeysAt(path);
        for (const key of issue.keys) {
          const close = findClosest(key, allowed);
          const hint = KEY_HINTS[key] ?? (close === undefined ? `allowed here: ${allowed.join(', ')}` : `did you mean "${close}"?`);
          this.add([...path, key], `unknown key "${key}"`, hint, true);
        }
      } else if (issue.code === 'invalid_value' && this.valueAt(path) === undefined) {
        const key = path[path.length - 1];
        this.add(path, `missing "${String(key)}"`, MISSING_HINTS[String(key)], true);
      } else if (issue.code === 'invalid_value') {
        const values = issue.values.map(String);
        const got = this.valueAt(path);
        const close = typeof got === 'string' ? findClosest(got, values) : undefined;
        const hint = close === undefined ? `allowed: ${values.join(', ')}` : `did you mean "${close}"?`;
        this.add(path, `${JSON.stringify(got)} is not allowed here`, hint);
      } else if ((issue.code === 'invalid_type' || issue.code === 'invalid_union') && this.valueAt(path) === undefined) {
        const key = path[path.length - 1];
        this.add(path, `missing "${String(key)}"`, MISSING_HINTS[String(key)], true);
      } else if (issue.code === 'invalid_type') {
        const got = this.valueAt(path);
        const kind = Array.isArray(got) ? 'a list' : got === null ? 'nothing' : typeof got === 'object' ? 'a map' : JSON.stringify(got);
        this.add(path, `expected ${describeExpected(issue.expected)}, got ${kind}`,
          got === null && issue.expected === 'string' ? 'YAML reads null, NULL, ~ and a missing value as nothing: quote the text, e.g. "NULL"' : undefined);
      } else if (issue.code === 'invalid_union') {
        this.add(path, `expected ${UNION_WORDS[String(path[path.length - 1])] ?? 'another kind of value'}, got ${JSON.stringify(this.valueAt(path))}`);
      } else {
        this.add(path, issue.message);
      }
    }
  }

  /** Throws the collected mistakes as one E_MAPPING error (no-op when there are none). */
  throwIfAny(): void {
    if (this.problems.length === 0) return;
    const sorted = [...this.problems].sort((a, b) => a.line - b.line || a.col - b.col);
    const lines = sorted.slice(0, MAX_REPORTED).map((p) => {
      const where = p.where === '' ? '' : `${p.where}: `;
      return `${this.fileName}:${p.line}:${p.col}: ${where}${p.message}${p.hint === undefined ? '' : ` (hint: ${p.hint})`}`;
    });
    if (sorted.length > MAX_REPORTED) lines.push(`... and ${sorted.length - MAX_REPORTED} more`);
    const first = sorted[0];
    const head = sorted.length === 1 ? 'invalid mapping: ' : `invalid mapping (${sorted.length} mistakes):\n  `;
    throw new QuoteBatchError('E_MAPPING', `${head}${lines.join('\n  ')}`, {
      hint: first?.hint ?? 'see docs/mapping.md for the mapping language',
    });
  }

  private valueAt(path: YamlPath): unknown {
    const node = this.doc?.getIn(path, true);
    if (node === undefined || node === null) return undefined;
    return isScalar(node) ? node.value : (node as { toJSON?: () => unknown }).toJSON?.();
  }

  private locate(path: YamlPath, atKey: boolean): { line: number; col: number } {
    if (this.doc === undefined) return { line: 1, col: 1 };
    for (let depth = path.length; depth >= 0; depth -= 1) {
      const parentPath = path.slice(0, Math.max(0, depth - 1));
      const last = path[depth - 1];
      if (depth > 0 && (atKey || depth < path.length)) {
        const parent = parentPath.length === 0 ? this.doc.contents : this.doc.getIn(parentPath, true);
        if (isMap(parent)) {
          const pair = parent.items.find((item) => isScalar(item.key) && String(item.key.value) === String(last));
          const node = pair?.key as Node | undefined;
          if (node?.range !== undefined && node.range !== null) return this.position(node.range[0]);
        }
        if (isSeq(parent) && typeof last === 'number') {
          const node = parent.items[last] as Node | undefined;
          if (node?.range) return this.position(node.range[0]);
        }
      }
      const node = (depth === 0 ? this.doc.contents : this.doc.getIn(path.slice(0, depth), true)) as Node | null | undefined;
      if (node?.range) return this.position(node.range[0]);
    }
    return { line: 1, col: 1 };
  }

  private position(offset: number): { line: number; col: number } {
    return this.lineCounter.linePos(offset);
  }
}

const MISSING_HINTS: Readonly<Record<string, string>> = {
  key: 'a group needs `key:`, the column that must have a value for the group to exist, e.g. driver{n}_first_name',
  target: 'a group needs `target:`, the request array it fills, e.g. application.drivers',
  fields: 'list the request paths and their sources under `fields:`',
  version: 'start the file with `version: 1`',
  email: 'write `email: agent_email` (the column holding the agent e-mail)',
};

/** What a key that takes one of several shapes takes, in words. */
const UNION_WORDS: Readonly<Record<string, string>> = {
  key: 'a column (or a list of columns)',
  zone: 'a time zone, or { column: …, default: … }',
  required: 'true, false or first',
};

function describeExpected(expected: string): string {
  if (expected === 'record' || expected === 'object') return 'a map of keys and values';
  if (expected === 'array') return 'a list';
  return `a ${expected}`;
}

/** Which keys are allowed in the object at `path`, for did-you-mean on unknown keys. */
function allowedKeysAt(path: YamlPath): readonly string[] {
  if (path.length === 0) return ALLOWED_KEYS.top;
  const last = path[path.length - 1];
  const before = path[path.length - 2];
  if (path.length === 1 && last === 'input') return ALLOWED_KEYS.input;
  if (path.length === 1 && last === 'agent') return ALLOWED_KEYS.agent;
  if (path.length === 1 && last === 'row_key') return ALLOWED_KEYS.row_key;
  if (last === 'zone') return ALLOWED_KEYS.zone;
  if (before === 'groups' && typeof last === 'number') return ALLOWED_KEYS.group;
  return ALLOWED_KEYS.field;
}

/** `groups[0] > fields > dob > type`: where in the file, in words a user can follow. */
export function describeYamlPath(path: YamlPath): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? key : ` > ${key}`;
  }
  return out;
}
