/**
 * A small reader of the project's TypeScript sources for test/ledger/boundaries.test.ts: each file's
 * code with comments and the text of string, template and regular-expression literals blanked out
 * (so `'quote-batch.db'` or `/\.db$/` is not code touching `.db`), the text of its string literals,
 * and its relative imports resolved to files. Not a parser: just enough to tell code from text.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

export interface SourceFile {
  /** Path relative to the scanned root, with `/` separators. */
  path: string;
  text: string;
  /** `text` with comments and literal contents replaced by spaces (line breaks kept, so lines match). */
  code: string;
  /** The contents of its string and template literals (template expressions left out). */
  literals: string[];
}

/** Every `.ts` file under `root`, read and blanked. */
export function readSources(root: string): SourceFile[] {
  const files: SourceFile[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const full = join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else if (name.endsWith('.ts')) files.push(scanSource(relative(root, full).split('\\').join('/'), readFileSync(full, 'utf8')));
    }
  };
  walk(root);
  return files;
}

/** Characters after which a `/` starts a regular expression rather than a division. */
const BEFORE_REGEX = new Set(['', '(', ',', '=', ':', '[', '!', '&', '|', '?', '{', '}', ';', '+', '-', '*', '%', '<', '>', '~', '^']);
const KEYWORDS_BEFORE_REGEX = /\b(?:return|typeof|case|do|else|in|of|void|yield|await|delete|throw|new)$/;

export function scanSource(path: string, text: string): SourceFile {
  const code: string[] = [];
  const literals: string[] = [];
  /** For each open `${`, the depth of braces inside it: its `}` returns to the template. */
  const templateDepths: number[] = [];
  let i = 0;
  const blank = (c: string): string => (c === '\n' ? '\n' : ' ');
  const lastSignificant = (): string => {
    for (let k = code.length - 1; k >= 0; k -= 1) if (!/\s/.test(code[k] as string)) return code.slice(Math.max(0, k - 10), k + 1).join('');
    return '';
  };
  /** Reads a template's text from `i` (just after its opening backtick or a `}` closing an expression). */
  const readTemplate = (): void => {
    let literal = '';
    while (i < text.length) {
      const c = text[i] as string;
      if (c === '\\') {
        literal += text.slice(i, i + 2);
        code.push(' ', blank(text[i + 1] ?? ''));
        i += 2;
      } else if (c === '`') {
        code.push('`');
        i += 1;
        break;
      } else if (c === '$' && text[i + 1] === '{') {
        code.push('$', '{');
        i += 2;
        templateDepths.push(0);
        break;
      } else {
        literal += c;
        code.push(blank(c));
        i += 1;
      }
    }
    literals.push(literal);
  };
  while (i < text.length) {
    const c = text[i] as string;
    const next = text[i + 1];
    if (c === '/' && next === '/') {
      while (i < text.length && text[i] !== '\n') {
        code.push(' ');
        i += 1;
      }
    } else if (c === '/' && next === '*') {
      const end = text.indexOf('*/', i + 2);
      const stop = end < 0 ? text.length : end + 2;
      for (; i < stop; i += 1) code.push(blank(text[i] as string));
    } else if (c === '"' || c === "'") {
      let literal = '';
      code.push(c);
      i += 1;
      while (i < text.length && text[i] !== c && text[i] !== '\n') {
        if (text[i] === '\\') {
          literal += text.slice(i, i + 2);
          code.push(' ', ' ');
          i += 2;
        } else {
          literal += text[i];
          code.push(' ');
          i += 1;
        }
      }
      code.push(c);
      i += 1;
      literals.push(literal);
    } else if (c === '`') {
      code.push('`');
      i += 1;
      readTemplate();
    } else if (c === '/' && (BEFORE_REGEX.has(lastSignificant().slice(-1)) || KEYWORDS_BEFORE_REGEX.test(lastSignificant()))) {
      // A regular expression literal: up to its closing `/` outside a character class, then its flags.
      code.push('/');
      i += 1;
      let inClass = false;
      while (i < text.length && text[i] !== '\n') {
        const r = text[i] as string;
        if (r === '\\') {
          code.push(' ', ' ');
          i += 2;
          continue;
        }
        if (r === '[') inClass = true;
        else if (r === ']') inClass = false;
        else if (r === '/' && !inClass) break;
        code.push(' ');
        i += 1;
      }
      code.push('/');
      i += 1;
    } else if (templateDepths.length > 0 && c === '{') {
      templateDepths[templateDepths.length - 1] = (templateDepths.at(-1) as number) + 1;
      code.push(c);
      i += 1;
    } else if (templateDepths.length > 0 && c === '}') {
      code.push(c);
      i += 1;
      const depth = templateDepths.at(-1) as number;
      if (depth === 0) {
        templateDepths.pop();
        readTemplate();
      } else {
        templateDepths[templateDepths.length - 1] = depth - 1;
      }
    } else {
      code.push(c);
      i += 1;
    }
  }
  return { path, text, code: code.join(''), literals };
}

/** 1-based line of offset `index` in `text`. */
export const lineOf = (text: string, index: number): number => text.slice(0, index).split('\n').length;

/** Each match of `pattern` (global) in a file's code, as `path:line: the line`. */
export function findInCode(file: SourceFile, pattern: RegExp): string[] {
  const lines = file.text.split('\n');
  return Array.from(file.code.matchAll(pattern), (m) => {
    const line = lineOf(file.code, m.index);
    return `${file.path}:${line}: ${(lines[line - 1] ?? '').trim()}`;
  });
}

/** A relative import of a file: the file it names (resolved, `.js` read as `.ts`) and whether it imports types only. */
export interface Import {
  to: string;
  typeOnly: boolean;
}

const IMPORT = /(?:^|[;\n])\s*(?:import|export)\s+(type\s+)?(?:[^;'"`]*?\sfrom\s+)?['"](\.{1,2}\/[^'"]+)['"]|\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;

/** The relative imports (static, re-exports and dynamic) of each file, by path relative to the root. */
export function importGraph(files: readonly SourceFile[]): Map<string, Import[]> {
  const graph = new Map<string, Import[]>();
  for (const file of files) {
    const imports: Import[] = [];
    for (const m of file.text.matchAll(IMPORT)) {
      // Imports commented out, or written inside a string, do not count.
      if (file.code[m.index + m[0].search(/import|export/)] === ' ') continue;
      const spec = (m[2] ?? m[3]) as string;
      const to = relative('/', resolve('/', dirname(file.path), spec.replace(/\.js$/, '.ts'))).split('\\').join('/');
      imports.push({ to, typeOnly: m[1] !== undefined });
    }
    graph.set(file.path, imports);
  }
  return graph;
}

/** The import cycles of a graph, each as the files around it (the first repeated at the end). */
export function importCycles(graph: ReadonlyMap<string, readonly Import[]>): string[][] {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const visit = (file: string): void => {
    state.set(file, 'open');
    stack.push(file);
    for (const { to } of graph.get(file) ?? []) {
      if (!graph.has(to)) continue;
      if (state.get(to) === 'open') cycles.push([...stack.slice(stack.indexOf(to)), to]);
      else if (state.get(to) === undefined) visit(to);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of [...graph.keys()].sort()) if (state.get(file) === undefined) visit(file);
  return cycles;
}
