/**
 * Reads the error groups back out of each output (table, run summary, CSV, HTML), so a test can
 * hold them against the JSON report's `row_errors`: same kinds, same counts, in the same order.
 */
import { parse } from 'csv-parse/sync';

export interface GroupLine {
  rows: number;
  kind: string;
  sampleRows: number[];
}

/**
 * Groups printed by `formatErrorGroupLines` after the line starting with `heading`: `  count  kind`,
 * wrapped kind lines under it (joined with a space, as they were split at spaces), `sample rows: …`.
 */
export function groupsFromText(text: string, heading: string): GroupLine[] {
  const lines = text.split('\n');
  const start = lines.findIndex((l) => l.startsWith(heading));
  if (start < 0) throw new Error(`no "${heading}" in:\n${text}`);
  const groups: GroupLine[] = [];
  for (const line of lines.slice(start + 1)) {
    const head = /^ {2} *([\d,]+) {2}(\S.*)$/.exec(line);
    const samples = /^ +sample rows: ([\d, ]+)$/.exec(line);
    const last = groups[groups.length - 1];
    if (head !== null) groups.push({ rows: Number((head[1] as string).replaceAll(',', '')), kind: head[2] as string, sampleRows: [] });
    else if (samples !== null && last !== undefined) last.sampleRows = (samples[1] as string).split(', ').map(Number);
    else if (/^ {5,}\S/.test(line) && last !== undefined && last.sampleRows.length === 0) last.kind += ` ${line.trim()}`;
    else if (line.trim() === '' || !line.startsWith(' ')) break;
  }
  return groups;
}

/** `row_errors[i].*` figures of `report --format csv`. */
export function groupsFromCsv(csv: string): GroupLine[] {
  const figures = new Map((parse(csv, { columns: true }) as { figure: string; value: string }[]).map((f) => [f.figure, f.value]));
  const groups: GroupLine[] = [];
  for (let i = 0; figures.has(`row_errors[${i}].kind`); i++) {
    const sampleRows: number[] = [];
    for (let j = 0; figures.has(`row_errors[${i}].sample_rows[${j}]`); j++) sampleRows.push(Number(figures.get(`row_errors[${i}].sample_rows[${j}]`)));
    groups.push({ rows: Number(figures.get(`row_errors[${i}].rows`)), kind: figures.get(`row_errors[${i}].kind`) as string, sampleRows });
  }
  return groups;
}

/** The rows of the HTML report's `table.error-groups`. */
export function groupsFromHtml(html: string): GroupLine[] {
  const table = /<table class="error-groups">[\s\S]*?<tbody>([\s\S]*?)<\/tbody>/.exec(html)?.[1] ?? '';
  const unescape = (s: string): string => s.replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&quot;', '"').replaceAll('&#39;', "'").replaceAll('&amp;', '&');
  return [...table.matchAll(/<tr><td class="n">([\d,]+)<\/td><td class="msg">([\s\S]*?)<\/td><td class="wrap">([\d, ]*)<\/td><\/tr>/g)]
    .map((m) => ({ rows: Number((m[1] as string).replaceAll(',', '')), kind: unescape(m[2] as string), sampleRows: (m[3] as string).split(', ').map(Number) }));
}
