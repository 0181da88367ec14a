/**
 * Errors grouped by kind: one function that says which group a failure belongs to, shared by the
 * run summary, `report` (every format) and `check`, so that the three never disagree.
 *
 * A kind is the row's state, its error code, and what went wrong with the row numbers, values and
 * ids taken out: for a mapping error, the request path (indexes removed) and the message head; for
 * a partner answer, the partner's message. `row 17: application.drivers[1].dob: expected YYYY-MM-DD,
 * got "13/45/1990" (column driver2_dob)` and the same mistake on row 90 in `driver1_dob` are one kind,
 * `application.drivers[].dob: expected YYYY-MM-DD`, seen in the columns driver1_dob and driver2_dob.
 */

/** What is known of one failure. */
export interface ErrorKindInput {
  state: string;
  errorCode: string | null;
  /** `rows.error_message`, or a `check` issue formatted by `formatRowIssue`. */
  message: string | null;
}

export interface ErrorKind {
  /** Stable grouping key (state, code and subject). */
  key: string;
  state: string;
  code: string | null;
  /** What went wrong, without row numbers, values or ids. */
  subject: string;
  /** Source columns (or NDJSON fields) named by the message, in the order seen. */
  columns: string[];
  /** What the message called them: `field` for an NDJSON input's paths, else `column`. */
  sourceWord?: 'column' | 'field';
  /** The state codes the subject shows as `XX` (the partner's `State AK is not supported.`), in the order seen; at most 8, then `…`. */
  states: string[];
}

/** One group: how many failures, and a few of their rows as samples. */
export interface ErrorGroup extends ErrorKind {
  count: number;
  /** The first rows seen in the group (at most `samples` of {@link ErrorGroups}). */
  rows: number[];
}

/** `row 17: ` at the start of a formatted issue. */
const ROW_PREFIX = /^row \d+: /;
/** `line 12: ` at the start of a reader's message. */
const LINE_PREFIX = /^(?:line|lines) \d+(?:[-–]\d+)?: /;
/** ` (column driver2_dob)`, ` (columns a, b)`, ` (field x.y)` at the end of a formatted issue. */
const COLUMNS_SUFFIX = / \((column|field)s? ([^()]*)\)$/;
const INDEX = /\[\d+\]/g;

// Value-like parts of a message, replaced by a placeholder (order matters: the wider ones first).
// A mapping issue's message is quote-batch's own text with the value quoted or after `, got`:
// only these first ones apply to it, so its limits (`expected a 17-character VIN`) stay.
const VALUE_REPLACEMENTS: readonly [RegExp, string][] = [
  [/"(?:[^"\\]|\\.)*"/g, '"…"'],
  [/'(?:[^'\\]|\\.)*'/g, "'…'"],
  [/\bhttps?:\/\/\S+/gi, '<url>'],
  [/[^\s@"'<>()]+@[^\s@"'<>()]+\.[A-Za-z]{2,}/g, '<email>'],
];
/** A US state code after the word "state": taken out of a group's subject, and listed with the group. */
const STATE_CODE = /\b([Ss]tate|STATE) ([A-Z]{2})\b/g;
/** Most state codes (and columns) a group lists; past it, a group's states end with {@link MORE}. */
const MAX_LISTED = 8;
const MORE = '…';

// A partner's or the client's message may hold ids and numbers anywhere.
const REPLACEMENTS: readonly [RegExp, string][] = [
  ...VALUE_REPLACEMENTS,
  [/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, '<id>'],
  // Tokens mixing letters and digits (ids, quote numbers, VINs) and long hex strings.
  [/\b(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{6,}\b/g, '<id>'],
  // Not an HTTP status with its reason phrase (`501 Not Implemented`: which answer it was), nor UTF-8's 8.
  [/(?<!UTF-)\b(?![1-5]\d\d [A-Z][a-z])\d+(?:\.\d+)?\b/g, 'N'],
  // A US state code after the word "state" (the partner's `State AK is not supported.`).
  [STATE_CODE, '$1 XX'],
];

/**
 * The client's own words that are not values: the phase a time-out fired in (`time-out in the
 * 'request' phase`), which the quotes would otherwise hide; and the `; 3 attempts` it adds after a
 * retried call's message, which would make one failure two kinds (tried once, tried again).
 */
const CLIENT_WORDING: readonly [RegExp, string][] = [
  [/\btime-out in the '([a-zA-Z]+)' phase\b/g, 'time-out in the $1 phase'],
  [/; \d+ attempts$/, ''],
];

/** Takes row numbers, quoted values, ids, e-mails, URLs and numbers out of a message. */
export function normaliseReason(text: string): string {
  return replaceAll(replaceAll(text.replace(/\s+/g, ' ').trim().replace(ROW_PREFIX, '').replace(LINE_PREFIX, ''), CLIENT_WORDING), REPLACEMENTS);
}

function replaceAll(text: string, replacements: readonly [RegExp, string][]): string {
  let out = text;
  for (const [pattern, placeholder] of replacements) out = out.replace(pattern, placeholder);
  return out;
}

/**
 * The issues of one row's message: the run records a row's mapping errors joined with
 * `; row N: ` (its own number N, so a value holding such text does not split it). A last issue the
 * ledger cut short (`…`) is left out: its kind would be a fragment.
 */
export function splitRowIssues(message: string | null): (string | null)[] {
  const row = message === null ? null : ROW_NUMBER.exec(message);
  if (message === null || row === null) return [message];
  const issues = message.split(`; row ${row[1] ?? ''}: `).map((issue, i) => (i === 0 ? issue : `row ${row[1] ?? ''}: ${issue}`));
  if (issues.length > 1 && issues[issues.length - 1]?.endsWith('…') === true) issues.pop();
  return issues;
}

const ROW_NUMBER = /^row (\d+): /;
/** `, "555-01" in the file` before the end of a columns suffix: the file's own text, a value. */
const IN_FILE = /, "(?:[^"\\]|\\.)*(?:"|\.\.\.|…") in the file\)$/;

/**
 * The kind of one failure. A row whose message holds several issues (`; `-separated, as the run
 * records mapping errors) is of the kind of its first issue ({@link ErrorGroups.add} counts the row
 * under each of them).
 */
export function errorKindOf(input: ErrorKindInput): ErrorKind {
  const code = input.errorCode === null || input.errorCode === '' ? null : input.errorCode;
  let text = (input.message ?? '').replace(/\s+/g, ' ').trim();
  if (ROW_PREFIX.test(text)) {
    // Issues are joined with "; row N: " by the run: keep the first.
    const next = text.search(/; row \d+: /);
    if (next > 0) text = text.slice(0, next);
    // The file's text after a converted value's columns is a value too: never part of a group.
    text = text.replace(IN_FILE, ')');
  }
  const columns: string[] = [];
  let sourceWord: 'column' | 'field' | undefined;
  const suffix = COLUMNS_SUFFIX.exec(text);
  if (suffix !== null && ROW_PREFIX.test(text)) {
    for (const column of (suffix[2] ?? '').split(', ')) if (column !== '' && !columns.includes(column)) columns.push(column);
    sourceWord = suffix[1] === 'field' ? 'field' : 'column';
    text = text.slice(0, suffix.index);
  }
  let subject: string;
  let states: string[] = [];
  if (ROW_PREFIX.test(text)) {
    // `row N: path: message[, got "value"]`: the path without indexes, the message without its value.
    const rest = text.replace(ROW_PREFIX, '');
    const colon = rest.indexOf(': ');
    const path = colon < 0 ? '' : rest.slice(0, colon).replace(INDEX, '[]');
    const message = colon < 0 ? rest : rest.slice(colon + 2);
    subject = path === '' ? normaliseReason(message) : `${path}: ${replaceAll(message.replace(/, got .*$/, ''), VALUE_REPLACEMENTS)}`;
  } else {
    subject = normaliseReason(text);
    if (subject.includes(' XX')) states = [...new Set(Array.from(text.matchAll(STATE_CODE), (m) => m[2] as string))];
  }
  if (subject === '') subject = code ?? input.state;
  return { key: `${input.state}\u0000${code ?? ''}\u0000${subject}`, state: input.state, code, subject, columns, states, ...(sourceWord === 'field' ? { sourceWord } : {}) };
}

/** Subject of the group that gathers a state's failures once {@link ErrorGroups} holds `maxKinds` kinds. */
export const OTHER_KINDS_SUBJECT = 'other kinds (too many to tell apart)';

/**
 * Counts failures by kind, keeping the first few rows of each as samples. Memory grows with kinds,
 * not rows, and kinds are capped: past `maxKinds` (default 10,000), a new kind is counted in one
 * {@link OTHER_KINDS_SUBJECT} group per state, so text that never repeats cannot grow it without end.
 */
export class ErrorGroups {
  readonly #groups = new Map<string, ErrorGroup>();
  /** The row each group last counted: a row counts once per group, however many of its issues fall in it. */
  readonly #lastRow = new Map<ErrorGroup, number>();
  readonly #samples: number;
  readonly #maxKinds: number;

  constructor(options: { samples?: number; maxKinds?: number } = {}) {
    this.#samples = options.samples ?? 3;
    this.#maxKinds = options.maxKinds ?? 10_000;
  }

  /**
   * Adds one failure (of `row`, when known) and returns its group. A row whose message holds several
   * issues is counted under the kind of each (once per kind): the groups then say how many rows each
   * problem affects, and the first `check` of a draft lists every problem. Returns the first issue's group.
   */
  add(input: ErrorKindInput, row?: number, count = 1): ErrorGroup {
    const issues = splitRowIssues(input.message);
    let first: ErrorGroup | undefined;
    for (const message of issues) {
      const group = this.#addOne(issues.length === 1 ? input : { ...input, message }, row, count);
      first ??= group;
    }
    return first as ErrorGroup;
  }

  #addOne(input: ErrorKindInput, row: number | undefined, count: number): ErrorGroup {
    let kind = errorKindOf(input);
    let group = this.#groups.get(kind.key);
    if (group === undefined && this.#groups.size >= this.#maxKinds) {
      kind = { key: `${input.state}\u0000\u0000\u0000other`, state: input.state, code: null, subject: OTHER_KINDS_SUBJECT, columns: [], states: [] };
      group = this.#groups.get(kind.key);
    }
    if (group === undefined) {
      group = { ...kind, columns: [], states: [], count: 0, rows: [] };
      this.#groups.set(kind.key, group);
    }
    if (row !== undefined && this.#lastRow.get(group) === row) {
      // The same row again (two drivers' dates, two warnings of one kind): its columns only.
      for (const column of kind.columns) if (group.columns.length < MAX_LISTED && !group.columns.includes(column)) group.columns.push(column);
      return group;
    }
    if (row !== undefined) this.#lastRow.set(group, row);
    group.count += count;
    if (row !== undefined && group.rows.length < this.#samples) group.rows.push(row);
    for (const column of kind.columns) if (group.columns.length < MAX_LISTED && !group.columns.includes(column)) group.columns.push(column);
    for (const state of kind.states) {
      if (group.states.includes(state)) continue;
      // Past the cap, one `…` says there were more.
      if (group.states.length < MAX_LISTED) group.states.push(state);
      else if (group.states.length === MAX_LISTED) group.states.push(MORE);
    }
    return group;
  }

  /** Number of distinct kinds. */
  get size(): number {
    return this.#groups.size;
  }

  /** The groups, largest first (ties: the one seen first). */
  top(limit = Number.POSITIVE_INFINITY): ErrorGroup[] {
    return [...this.#groups.values()]
      .map((group, order) => ({ group, order }))
      .sort((a, b) => b.group.count - a.group.count || a.order - b.order)
      .slice(0, limit)
      .map(({ group }) => group);
  }
}

/**
 * One line for a group: `state · code · subject (columns …) (states …)`; the code is left out when it
 * repeats the state or the subject.
 */
export function describeErrorKind(kind: ErrorKind): string {
  const word = kind.sourceWord ?? 'column';
  const columns = kind.columns.length === 0 ? '' : ` (${word}${kind.columns.length === 1 ? '' : 's'} ${kind.columns.join(', ')})`;
  const states = kind.states.length === 0 ? '' : ` (${kind.states.length === 1 ? 'state' : 'states'} ${kind.states.join(', ')})`;
  const head = kind.code === null || kind.subject === kind.code || kind.code === kind.state ? kind.state : `${kind.state} · ${kind.code}`;
  return `${head} · ${kind.subject}${columns}${states}`;
}

/**
 * A group as terminal lines of at most `width` code points: `  count  description`, wrapped under
 * itself (at most four lines), then `sample rows: 3, 17` on an indented line of its own, so the
 * group line never names a row. Control characters are replaced (ledger text is untrusted).
 */
export function formatErrorGroupLines(
  group: { count: number; description: string; sampleRows: readonly number[] },
  width: number,
  countWidth = 7,
): string[] {
  const indent = ' '.repeat(countWidth + 4);
  const count = group.count.toLocaleString('en-US').padStart(countWidth);
  // eslint-disable-next-line no-control-regex
  const text = group.description.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ');
  const lines = wrapWords(text, Math.max(20, width - indent.length), 4).map((line, i) => `${i === 0 ? `  ${count}  ` : indent}${line}`);
  if (group.sampleRows.length > 0) lines.push(`${indent}sample rows: ${group.sampleRows.join(', ')}`);
  return lines;
}

/** Splits `text` into lines of at most `width` code points at spaces; the last of `maxLines` ends with `…` when cut. */
export function wrapWords(text: string, width: number, maxLines: number): string[] {
  const lines: string[] = [];
  let rest = Array.from(text.trim());
  while (rest.length > 0 && lines.length < maxLines) {
    if (rest.length <= width) {
      lines.push(rest.join(''));
      rest = [];
      break;
    }
    const space = rest.lastIndexOf(' ', width);
    const cut = space > width / 3 ? space : width;
    lines.push(rest.slice(0, cut).join('').trimEnd());
    rest = rest.slice(cut);
    while (rest[0] === ' ') rest.shift();
  }
  if (rest.length > 0) {
    const last = Array.from(lines.pop() ?? '');
    lines.push(`${last.slice(0, width - 1).join('')}…`);
  }
  return lines;
}

/** A row in an error state, as the ledger streams them (`errorRowBatches`). */
export interface RowErrorInput<S extends string = string> {
  row_number: number;
  state: S;
  error_code: string | null;
  error_message: string | null;
}

/** A kind of row error, as the run summary and every `report` format show it (see `ReportRowError` in `src/report/types.ts`). */
export interface RowErrorGroup<S extends string = string> {
  state: S;
  error_code: string | null;
  kind: string;
  subject: string;
  columns: string[];
  states: string[];
  rows: number;
  sample_rows: number[];
  /** The message recorded for the first sample row, as it is in the ledger. */
  error_message: string | null;
}

export interface RowErrorGroups<S extends string = string> {
  /** The largest groups first (at most `limit`). */
  groups: RowErrorGroup<S>[];
  /** How many kinds there were in all. */
  kinds: number;
}

/**
 * Groups rows in an error state by kind, given in row order batch by batch, so that memory grows with
 * kinds, not rows, and each group's samples are its first rows.
 */
export async function groupRowErrors<S extends string>(
  batches: AsyncIterable<readonly RowErrorInput<S>[]>,
  options: { limit?: number; samples?: number } = {},
): Promise<RowErrorGroups<S>> {
  const groups = new ErrorGroups({ samples: options.samples ?? 3 });
  const firstMessage = new Map<ErrorGroup, string | null>();
  for await (const batch of batches) {
    for (const row of batch) {
      const group = groups.add({ state: row.state, errorCode: row.error_code, message: row.error_message }, row.row_number);
      if (!firstMessage.has(group)) firstMessage.set(group, row.error_message);
    }
  }
  return {
    kinds: groups.size,
    groups: groups.top(options.limit).map((g) => ({
      state: g.state as S,
      error_code: g.code,
      kind: describeErrorKind(g),
      subject: g.subject,
      columns: g.columns,
      states: g.states,
      rows: g.count,
      sample_rows: g.rows,
      error_message: firstMessage.get(g) ?? null,
    })),
  };
}
