/**
 * Keeps the arrows the README draws: the ledger is the only code that speaks SQL (a second backend
 * then touches `src/ledger/` alone), `pipeline/` never imports `report/`, and no import cycle
 * anywhere in `src/` (type imports count: a cycle of types is still two files that cannot be read
 * one without the other). Each rule is also run on a small made-up source that breaks it, so a
 * rule that could not fail would show.
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { findInCode, importCycles, importGraph, readSources, scanSource, type SourceFile } from './_source-scan.js';

const SRC = fileURLToPath(new URL('../../src', import.meta.url));
const sources = readSources(SRC);

const outsideLedger = (file: SourceFile): boolean => !file.path.startsWith('ledger/');

/** Code that runs SQL on a database handle or reaches one: what only `src/ledger/` may do. */
const DATABASE_CODE = [
  // better-sqlite3's statements and transactions.
  /\.\s*(?:prepare|transaction|pragma|iterate)\s*\(/g,
  // `db.exec('…')`: SQL text run as is (a RegExp's `exec` takes no literal).
  /\.\s*exec\s*\(\s*['"`]/g,
  // The ledger's connection.
  /[\w$)\]]\s*\??\.\s*db\b(?!\s*:)/g,
  // The driver itself.
  /\bfrom\s+['"]better-sqlite3['"]|\bimport\s*\(\s*['"]better-sqlite3['"]\s*\)|\brequire\s*\(\s*['"]better-sqlite3['"]\s*\)/g,
];

/** SQL statements written as text. */
const SQL_TEXT = /\b(?:SELECT\b[\s\S]*\bFROM|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s+(?:TABLE|INDEX|VIEW)|BEGIN(?:\s+(?:DEFERRED|IMMEDIATE))?\s*$|PRAGMA)\b/;

function databaseCode(files: readonly SourceFile[]): string[] {
  return files.filter(outsideLedger).flatMap((file) => DATABASE_CODE.flatMap((pattern) => {
    // The driver's name is a string: look for its import in the text, the rest in the code.
    const where = pattern.source.includes('better-sqlite3') ? { ...file, code: file.text } : file;
    return findInCode(where, pattern);
  }));
}

function sqlText(files: readonly SourceFile[]): string[] {
  return files.filter(outsideLedger).flatMap((file) => file.literals.filter((l) => SQL_TEXT.test(l)).map((l) => `${file.path}: ${l.slice(0, 80)}`));
}

function pipelineToReport(files: readonly SourceFile[]): string[] {
  const graph = importGraph(files);
  return [...graph].filter(([from]) => from.startsWith('pipeline/'))
    .flatMap(([from, imports]) => imports.filter((i) => i.to.startsWith('report/')).map((i) => `${from} imports ${i.to}`));
}

const cyclesOf = (files: readonly SourceFile[]): string[] => importCycles(importGraph(files)).map((c) => c.join(' -> '));

describe('the ledger is the only code that speaks SQL', () => {
  it('no file outside src/ledger/ prepares, runs or reaches a database handle', () => {
    expect(databaseCode(sources)).toEqual([]);
  });

  it('no file outside src/ledger/ writes SQL', () => {
    expect(sqlText(sources)).toEqual([]);
  });

  it('catches each way of doing so, and not text or regular expressions that look alike', () => {
    const file = (path: string, text: string) => scanSource(path, text);
    const found = databaseCode([
      file('report/a.ts', "const n = ledger.db.prepare('SELECT 1').get();"),
      file('report/b.ts', 'export function f(db: Db) {\n  return db.transaction(() => 1)();\n}'),
      file('report/c.ts', "db.exec('BEGIN');"),
      file('report/d.ts', "import type Database from 'better-sqlite3';"),
      file('report/e.ts', 'const x = `${ledger.db.pragma(`user_version`)}`;'),
      file('pipeline/f.ts', 'const handle = this.ledger?.db;'),
      // Look-alikes: a file name, a RegExp's exec, a comment, a regular expression, an object key, the ledger itself.
      file('commands/g.ts', "const d = 'quote-batch.db'; const m = /^(\\d+)\\.db$/.exec(name); // ledger.db.prepare(\nconst o = { db: 1 };"),
      file('ledger/h.ts', "this.db.prepare('SELECT 1');"),
    ]);
    expect(new Set(found.map((f) => f.split(':')[0]))).toEqual(new Set(['report/a.ts', 'report/b.ts', 'report/c.ts', 'report/d.ts', 'report/e.ts', 'pipeline/f.ts']));
    expect(sqlText([file('report/a.ts', 'const q = `SELECT id FROM jobs WHERE id = ?`;'), file('report/b.ts', "const s = 'select the jobs from the list';")]))
      .toEqual(['report/a.ts: SELECT id FROM jobs WHERE id = ?']);
  });
});

describe('arrows point down', () => {
  it('pipeline/ imports nothing from report/', () => {
    expect(pipelineToReport(sources)).toEqual([]);
  });

  it('src/ has no import cycle, type imports included', () => {
    expect(importGraph(sources).size).toBeGreaterThan(100);
    expect(cyclesOf(sources)).toEqual([]);
  });

  it('finds an import from pipeline/ to report/, and cycles through re-exports, dynamic and type imports', () => {
    const made = [
      scanSource('pipeline/run.ts', "import { formatDuration } from '../report/index.js';\n// import { x } from './commented.js';"),
      scanSource('report/index.ts', "export { readTimeline } from './timeline.js';"),
      scanSource('report/timeline.ts', "import type { Report } from './index.js';"),
      scanSource('partner/a.ts', "const b = await import('./b.js');"),
      scanSource('partner/b.ts', "import { a } from './a.js';"),
      scanSource('partner/c.ts', "const text = \"import { a } from './a.js'\";"),
    ];
    expect(pipelineToReport(made)).toEqual(['pipeline/run.ts imports report/index.ts']);
    expect(cyclesOf(made)).toEqual(['partner/a.ts -> partner/b.ts -> partner/a.ts', 'report/index.ts -> report/timeline.ts -> report/index.ts']);
  });
});
