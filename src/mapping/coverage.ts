/**
 * `check --coverage`: which of the input's columns (or NDJSON fields) the mapping never reads, and
 * which QuoteRequest fields no row filled. Memory grows with the number of distinct columns and
 * paths, never with rows (and is capped for files whose records invent new keys).
 */
import { listRequestLeaves } from './_request-paths.js';
import type { CompiledMapping } from './types.js';

/** Distinct source or request paths remembered at most. */
const MAX_PATHS = 10_000;

export interface CoverageReport {
  /** Input columns (CSV) or field paths (NDJSON, `drivers[].nickname`) the mapping never reads, with the rows that have a value there. */
  unread: { source: string; rowsWithValue: number }[];
  /** QuoteRequest fields no row filled: `mapped` ones were empty in every row, the others are not in the mapping. */
  unfilled: { path: string; mapped: boolean; required: boolean }[];
  /** True when a file had more distinct paths than are counted (the lists are then incomplete). */
  truncated: boolean;
}

type Rec = Record<string, unknown>;

/** Counts, row by row, the sources with a value and the request paths filled. */
export class CoverageTally {
  readonly #mapping: CompiledMapping;
  #header: readonly string[] | null = null;
  /** CSV: the header's columns the mapping does not read, and how many rows have a value in each. */
  #unreadColumns: { name: string; rows: number }[] = [];
  /** NDJSON: rows with a value per field pattern. */
  readonly #fields = new Map<string, number>();
  readonly #filled = new Set<string>();
  #truncated = false;

  constructor(mapping: CompiledMapping) {
    this.#mapping = mapping;
  }

  /** The CSV header (null for NDJSON), before the first row. */
  start(header: readonly string[] | null): void {
    this.#header = header;
    if (header === null) return;
    const read = new Set(this.#mapping.sourceColumns);
    this.#unreadColumns = header.filter((name) => !read.has(name)).map((name) => ({ name, rows: 0 }));
  }

  addRecord(record: Rec): void {
    if (this.#header !== null) {
      for (const column of this.#unreadColumns) {
        const value = record[column.name];
        if (typeof value === 'string' && value.trim() !== '') column.rows += 1;
      }
      return;
    }
    const seen = new Set<string>();
    collectLeaves(record, '', seen);
    for (const path of seen) {
      const count = this.#fields.get(path);
      if (count !== undefined) this.#fields.set(path, count + 1);
      else if (this.#fields.size < MAX_PATHS) this.#fields.set(path, 1);
      else this.#truncated = true;
    }
  }

  addRequest(request: Rec): void {
    const seen = new Set<string>();
    collectLeaves(request, '', seen);
    for (const path of seen) {
      if (this.#filled.has(path)) continue;
      if (this.#filled.size < MAX_PATHS) this.#filled.add(path);
      else this.#truncated = true;
    }
  }

  report(): CoverageReport {
    let unread: CoverageReport['unread'];
    if (this.#header !== null) {
      unread = this.#unreadColumns.map((c) => ({ source: c.name, rowsWithValue: c.rows }));
    } else {
      const reads = this.#mapping.sourcePaths;
      const isRead = (path: string): boolean => reads.some((r) => r.path === path || path === `${r.path}[]`
        || (r.whole && (path.startsWith(`${r.path}.`) || path.startsWith(`${r.path}[`))));
      unread = [...this.#fields].filter(([path]) => !isRead(path)).map(([source, rowsWithValue]) => ({ source, rowsWithValue }));
    }
    const filled = [...this.#filled];
    const mapped = new Set(this.#mapping.targetPaths);
    const isMapped = (leaf: string): boolean => mapped.has(leaf) || [...mapped].some((t) => leaf.startsWith(`${t}.`) || leaf.startsWith(`${t}[`));
    const unfilled = listRequestLeaves()
      // The agent id is filled by the run, from validating the agent e-mail.
      .filter((leaf) => leaf.path !== this.#mapping.agentIdPath)
      .filter((leaf) => !filled.some((path) => path === leaf.path || path.startsWith(`${leaf.path}.`) || path.startsWith(`${leaf.path}[`)))
      .map((leaf) => ({ path: leaf.path, mapped: isMapped(leaf.path), required: leaf.required }));
    return { unread, unfilled, truncated: this.#truncated };
  }
}

/** Adds the patterns of `value`'s leaves with a value (`a.b`, `list[].c`); empty strings do not count. */
function collectLeaves(value: unknown, path: string, out: Set<string>): void {
  if (value === undefined || value === null || value === '') return;
  if (Array.isArray(value)) {
    for (const item of value) collectLeaves(item, `${path}[]`, out);
    return;
  }
  if (typeof value === 'object') {
    for (const [key, child] of Object.entries(value as Rec)) collectLeaves(child, path === '' ? key : `${path}.${key}`, out);
    return;
  }
  if (path !== '' && (typeof value !== 'string' || value.trim() !== '')) out.add(path);
}
