/**
 * The report as CSV, one line per figure (`--format csv`): `figure,value`, where `figure` is the
 * figure's path in the JSON report (`rows.by_state.succeeded`, `latency_ms.quote.p90`,
 * `row_errors[0].error_code`), so the two formats never disagree.
 */
import { formatCsvLine, type CsvValue } from './csv.js';
import type { Report } from './types.js';

export function renderCsv(report: Report): string {
  const lines = [formatCsvLine(['figure', 'value'])];
  for (const [figure, value] of flattenFigures(report)) lines.push(formatCsvLine([figure, value]));
  return lines.join('');
}

/** Every leaf of `value` as `[path, leaf]`, depth first, in key order. */
export function flattenFigures(value: unknown, path = ''): [string, CsvValue][] {
  if (Array.isArray(value)) {
    return value.flatMap((item, i) => flattenFigures(item, `${path}[${i}]`));
  }
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).flatMap(([key, item]) => flattenFigures(item, path === '' ? key : `${path}.${key}`));
  }
  return [[path, value as CsvValue]];
}
