/**
 * Whether another job of the ledger sent a lead: its row of that key, and for a row that found the
 * lead sent by a third job (`duplicate`, `sent_by_other_job`), the chain of such rows followed to the
 * row that sent it. `Ledger.sentByOtherJob` asks it before a lead is sent (README: never a
 * lead sent twice by accident).
 */
import type { LedgerStatements } from './_statements.js';
import type { RowState } from './schema.js';
import type { SentRow, SentRowRef } from './types.js';

/** Most `sent_by_other_job` rows followed from one to the row that sent the lead (a chain of jobs of one lead). */
const MAX_SENT_BY_HOPS = 64;

/** `rows.sent_by_job`, `sent_by_row`: where a `sent_by_other_job` row found its lead sent (null before schema version 6). */
interface SentByColumns {
  error_message: string | null;
  sent_by_job: number | null;
  sent_by_row: number | null;
}

/**
 * The end of a `sent_by_other_job` row's message (pipeline/other-jobs.ts): `… by job 3 (its row 12,
 * in_doubt); not sent again (--resend-sent sends it)`. Anchored at the end: the row key before it
 * may hold anything.
 */
const SENT_BY_MESSAGE = /by (?:a job before )?job (\d+) \(its row (\d+), (?:succeeded|in_doubt|in_flight|duplicate)\); not sent again \(--resend-sent sends it\)$/;

/** Where a `sent_by_other_job` row found its lead sent: its columns, or for a row written before schema version 6, its message. */
function sentByOf(row: SentByColumns): SentRowRef | undefined {
  if (row.sent_by_job !== null && row.sent_by_row !== null) return { job_id: row.sent_by_job, row_number: row.sent_by_row };
  const match = row.error_message === null ? null : SENT_BY_MESSAGE.exec(row.error_message);
  return match === null ? undefined : { job_id: Number(match[1]), row_number: Number(match[2]) };
}

/** A query the search below asks of its ledger: the candidates of a key, or one row a chain points to. */
export type SentByQuery =
  | { query: 'candidates'; key: string; jobId: number; environment: string; operation: string }
  | { query: 'row'; jobId: number; rowNumber: number; key: string | null };

/** A row of another job with the key that may show the lead sent (`sentByOtherJob` in `_statements.ts`). */
export type SentByCandidate = SentRow & SentByColumns;
/** A row a chain points to (`sentByRow`). */
export type SentByRow = SentByColumns & { state: RowState; error_code: string | null };

/**
 * The earliest row of another job of this environment and operation with key `key` (bounded, as
 * stored) that shows the lead sent: see `Ledger.sentByOtherJob`, which this serves. A generator of
 * the queries it needs, so that one search serves both ledgers: SQLite answers each at once (in the
 * transaction that marks a row), PostgreSQL over the network ({@link runSentBySearch}).
 */
export function* sentByOtherJobSearch(jobId: number, environment: string, operation: string, key: string): Generator<SentByQuery, SentRow | undefined, unknown> {
  const candidates = (yield { query: 'candidates', key, jobId, environment, operation }) as SentByCandidate[];
  for (const row of candidates) {
    const found = { job_id: row.job_id, row_number: row.row_number, state: row.state };
    if (row.state !== 'duplicate') return found;
    const origin = yield* evidenceOf(row, jobId, key);
    if (origin !== false) return { ...found, origin: origin ?? { job_id: row.job_id, row_number: row.row_number } };
  }
  return undefined;
}

/** Runs the search with a ledger's answers, synchronously (SQLite). */
export function runSentBySearch(search: Generator<SentByQuery, SentRow | undefined, unknown>, answer: (q: SentByQuery) => unknown): SentRow | undefined {
  let step = search.next();
  while (step.done !== true) step = search.next(answer(step.value));
  return step.value;
}

/** Runs the search with a ledger's answers over the network (PostgreSQL). */
export async function runSentBySearchAsync(search: Generator<SentByQuery, SentRow | undefined, unknown>, answer: (q: SentByQuery) => Promise<unknown>): Promise<SentRow | undefined> {
  let step = search.next();
  while (step.done !== true) step = search.next(await answer(step.value));
  return step.value;
}

/** SQLite's answers, from its prepared statements. */
export function findSentByOtherJob(stmts: LedgerStatements, jobId: number, environment: string, operation: string, key: string): SentRow | undefined {
  return runSentBySearch(sentByOtherJobSearch(jobId, environment, operation, key), (q) => (q.query === 'candidates'
    ? stmts.sentByOtherJob.all(q.key, q.jobId, q.environment, q.operation)
    : stmts.sentByRow.get(q.jobId, q.rowNumber, q.key)));
}

/**
 * Follows a `sent_by_other_job` row to the row it found sent. False when that no longer shows the
 * lead sent, or leads back to job `askingJobId` (what that job did with the lead is no evidence
 * against its sending it: its row may be the very one being marked `in_flight` now). Else the row
 * at the end of the chain that sent the lead, or null when the chain ends in a row since pruned
 * (what the last one recorded stands). A row of another key at the place pointed to is a job id
 * reused after a prune: the row pointed to was pruned.
 */
function* evidenceOf(duplicate: SentByColumns, askingJobId: number, rowKey: string | null): Generator<SentByQuery, SentRowRef | null | false, unknown> {
  let next = duplicate;
  const seen = new Set<string>();
  for (let hops = 0; hops < MAX_SENT_BY_HOPS; hops += 1) {
    const ref = sentByOf(next);
    // Nothing to follow (a message cut short before schema version 6): it counts, as it did.
    if (ref === undefined) return null;
    const at = `${ref.job_id}:${ref.row_number}`;
    if (ref.job_id === askingJobId || seen.has(at)) return false;
    seen.add(at);
    const origin = (yield { query: 'row', jobId: ref.job_id, rowNumber: ref.row_number, key: rowKey }) as SentByRow | undefined;
    // Gone with a pruned job: what it recorded stands.
    if (origin === undefined) return null;
    if (origin.state === 'succeeded' || origin.state === 'in_doubt' || origin.state === 'in_flight') return ref;
    if (origin.state !== 'duplicate' || origin.error_code !== 'sent_by_other_job') return false;
    next = origin;
  }
  return null;
}
