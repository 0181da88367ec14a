/**
 * CSV cells for files ops open in a spreadsheet (RFC 4180: comma, CRLF, double quotes).
 * Lead data is untrusted: a cell starting with `=`, `+`, `-`, `@`, tab or CR would run as a
 * formula in Excel/LibreOffice ("CSV injection"), so such text cells get a leading `'`.
 * Numbers are written as numbers (a negative number is data, not a formula).
 */

/** Characters that make a spreadsheet read a cell as a formula. */
const FORMULA_START = /^[=+\-@\t\r]/;

export type CsvValue = string | number | boolean | null | undefined;

/**
 * One CSV cell: `null`/`undefined` → empty; text guarded against formulas and quoted when it holds
 * the delimiter (`,` unless told), a quote or a line break.
 */
export function formatCsvCell(value: CsvValue, delimiter = ','): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : '';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  const text = FORMULA_START.test(value) ? `'${value}` : value;
  return /["\r\n]/.test(text) || text.includes(delimiter) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** One CSV record, CRLF-terminated. */
export function formatCsvLine(values: readonly CsvValue[]): string {
  return `${values.map((value) => formatCsvCell(value)).join(',')}\r\n`;
}
