import { quoteValue } from './_text.js';
import type { RowIssue } from './types.js';

/**
 * One line per issue:
 * `row 17: application.drivers[1].dob: expected YYYY-MM-DD, got "13/45/1990" (column driver2_dob)`.
 */
export function formatRowIssue(rowNumber: number, issue: RowIssue): string {
  let text = `row ${rowNumber}: ${issue.path === '' ? '(request)' : issue.path}: ${issue.message}`;
  const received = issue.received;
  if (received !== undefined && (received === null || typeof received !== 'object') && !/\bgot\b/.test(issue.message)) {
    text += `, got ${quoteValue(received)}`;
  }
  if (issue.columns.length > 0) {
    const noun = issue.sourceKind === 'field' ? 'field' : 'column';
    const inFile = issue.sourceText === undefined ? '' : `, ${quoteValue(issue.sourceText)} in the file`;
    text += ` (${issue.columns.length === 1 ? noun : `${noun}s`} ${issue.columns.join(', ')}${inFile})`;
  }
  return text;
}
