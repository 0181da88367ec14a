/**
 * A worker's row writes on PostgreSQL, a turn of them at a time (`PgLedger.commitRowWrites`). Every
 * write is fenced by its row's claim ({@link fence}): a write whose claim was lost changes nothing
 * and says so (`lost`). Each names the state it expects the row in, so that a turn sent again after a
 * cut connection finds it applied (`found`), not applied twice.
 *
 * A turn costs a few statements whatever its size ({@link commitBulk}): the leads' locks, one fenced
 * UPDATE for its marks, one query for their other-job checks, one UPDATE (inserting the attempts in the same
 * statement) for its outcomes and one for its put-backs, one SELECT for the writes not applied; each
 * a named statement, parsed and planned once per connection. A mark's request waits for its commit:
 * with a few statements per write, one worker on PostgreSQL sent 0.6-0.75 of what it sent on
 * SQLite (docs/ledger.md, "What a worker's writes cost"). A turn that writes a row twice (none does
 * today: a row has one write outstanding at a time) is written one write after another
 * ({@link commitOneByOne}).
 */
import type pg from 'pg';
import type { AttemptRecord } from '../../partner/types.js';
import { runSentBySearchAsync, sentByOtherJobSearch, type SentByCandidate, type SentByQuery } from '../_sent-by.js';
import { boundJson, boundKey, boundText, MAX_STORED_ID_CHARS } from '../limits.js';
import type { RowState } from '../schema.js';
import type { MarkLookup, RowChange, RowWrite, RowWriteResult, SentRow } from '../types.js';
import { fence, insertAttempts } from './claims.js';

/** A write of a worker: to a row of a chunk it claimed, fenced by that claim. */
export type FencedRowWrite = RowWrite & { claimId: number };
export type FencedRowResult = RowWriteResult & { lost?: boolean };
type Client = Pick<pg.PoolClient, 'query'>;
type Applied = 'applied' | 'found' | 'lost';
type Outcome = Extract<FencedRowWrite, { kind: 'outcome' }>;
type PutBack = Extract<FencedRowWrite, { kind: 'put_back' }>;
type Mark = Extract<FencedRowWrite, { kind: 'mark' }>;

/**
 * True when the turn is written by one statement (all marks not looked up, all outcomes, or all
 * put-backs, each row once): atomic by itself, it needs no transaction of its own (two round trips
 * fewer, which a mark's request waits for).
 */
export function writtenByOneStatement(writes: readonly FencedRowWrite[]): boolean {
  const kind = writes[0]?.kind;
  return writes.every((w) => w.kind === kind && (w.kind !== 'mark' || w.lookup === undefined))
    && new Set(writes.map((w) => w.rowNumber)).size === writes.length;
}

/** Writes a turn (inside the caller's transaction, unless {@link writtenByOneStatement}): in bulk, unless a row is written twice. */
export async function commitRowWritesOn(client: Client, jobId: number, runId: number, writes: readonly FencedRowWrite[], at: string): Promise<FencedRowResult[]> {
  const rows = new Set(writes.map((w) => w.rowNumber));
  return rows.size === writes.length ? commitBulk(client, jobId, runId, writes, at) : commitOneByOne(client, jobId, runId, writes, at);
}

// --- in bulk --------------------------------------------------------------------------------

/** A turn in which each row is written once, in a few statements; the same results as {@link commitOneByOne}. */
export async function commitBulk(client: Client, jobId: number, runId: number, writes: readonly FencedRowWrite[], at: string): Promise<FencedRowResult[]> {
  const marks = writes.filter((w): w is Mark => w.kind === 'mark');
  const outcomes = writes.filter((w): w is Outcome => w.kind === 'outcome');
  const putBacks = writes.filter((w): w is PutBack => w.kind === 'put_back');

  await lockLeads(client, marks);
  const marked = await markInFlight(client, jobId, marks, at);
  // The other-job check, after the marks: under the leads' locks, a job marking the same lead beside
  // this one has committed its mark (this one finds it) or waits for this commit (and finds this one).
  const looked = marks.filter((m): m is Mark & { lookup: MarkLookup } => m.lookup !== undefined && marked.has(m.rowNumber));
  const sent = await sentByOtherJobMany(client, jobId, looked.map((m) => m.lookup));
  const sentOutcomes: Outcome[] = [];
  looked.forEach((m, i) => {
    const found = sent[i];
    if (found !== undefined) sentOutcomes.push({ kind: 'outcome', rowNumber: m.rowNumber, from: 'in_flight', change: m.lookup.sentBy(found), attempts: [], claimId: m.claimId });
  });
  const settled = await applyOutcomes(client, jobId, runId, [...outcomes, ...sentOutcomes], at);
  const putBack = await applyPutBacks(client, jobId, runId, putBacks, at);

  const applied = (w: FencedRowWrite): boolean => (w.kind === 'mark' ? marked : w.kind === 'outcome' ? settled : putBack).has(w.rowNumber);
  const found = await foundApplied(client, jobId, writes.filter((w) => !applied(w) && w.from !== undefined));
  const sentOf = new Map(looked.map((m, i) => [m.rowNumber, sent[i]]));
  return writes.map((w): FencedRowResult => {
    if (!applied(w)) return found.has(w.rowNumber) ? {} : { lost: true };
    const s = w.kind === 'mark' ? sentOf.get(w.rowNumber) : undefined;
    return s === undefined ? {} : { sent: s };
  });
}

/**
 * Locks each lead a mark will look up (its environment, operation and key) until the transaction
 * ends, in one order: two jobs marking the same lead at once take turns, so the second's other-job
 * check sees the first's mark (under READ COMMITTED, an uncommitted mark is seen by no one).
 */
export const LEAD_LOCK_KEY = `hashtextextended(l.environment || chr(31) || l.operation || chr(31) || l.row_key, 0)`;

async function lockLeads(client: Client, marks: readonly Mark[]): Promise<void> {
  const lookups = marks.flatMap((m) => (m.lookup === undefined ? [] : [m.lookup]));
  if (lookups.length === 0) return;
  await client.query({
    name: 'quote-batch.lock-leads',
    text: `SELECT pg_advisory_xact_lock(k) FROM (
        SELECT DISTINCT ${LEAD_LOCK_KEY} AS k FROM unnest($1::text[], $2::text[], $3::text[]) AS l(environment, operation, row_key) ORDER BY 1
      ) keys`,
    values: [lookups.map((l) => l.environment), lookups.map((l) => l.operation), lookups.map((l) => boundKey(l.rowKey))],
  });
}

/** The condition every bulk UPDATE shares: the row is the write's, under its claim (the same fence), in the state it expects. */
const WRITTEN_ROW = `rows.job_id = $1 AND rows.row_number = v.row_number AND ${fence('v.claim_id')} AND (v.from_state IS NULL OR rows.state = v.from_state)`;

/** Marks rows `in_flight`; the row numbers marked. */
async function markInFlight(client: Client, jobId: number, marks: readonly Mark[], at: string): Promise<Set<number>> {
  if (marks.length === 0) return new Set();
  const col = <T>(f: (m: Mark) => T): T[] => marks.map(f);
  const done = await client.query<{ row_number: number }>({
    name: 'quote-batch.mark-rows',
    text: `UPDATE rows SET state = 'in_flight', agent_id = COALESCE(v.agent_id, rows.agent_id), request_json = v.request_json, request_sha256 = v.request_sha256, updated_at = $2
       FROM unnest($3::int[], $4::bigint[], $5::text[], $6::text[], $7::text[], $8::text[]) AS v(row_number, claim_id, from_state, agent_id, request_json, request_sha256)
      WHERE ${WRITTEN_ROW}
     RETURNING rows.row_number`,
    values: [jobId, at, col((m) => m.rowNumber), col((m) => m.claimId), col((m) => m.from ?? null),
      col((m) => boundText(m.agentId, MAX_STORED_ID_CHARS)), col((m) => boundJson(m.requestJson)), col((m) => m.requestSha256)],
  });
  return new Set(done.rows.map((r) => r.row_number));
}

/** The attempts of the writes applied, inserted by the statement that applies them (`u`: its RETURNING), in the writes' order. */
function attemptsOf(writes: readonly { rowNumber: number; attempts: readonly AttemptRecord[] }[], first: number): { sql: string; params: unknown[] } {
  const all = writes.flatMap((w) => w.attempts.map((a) => ({ row: w.rowNumber, a })));
  const col = <T>(f: (x: { row: number; a: AttemptRecord }) => T): T[] => all.map(f);
  const p = (i: number): string => `$${first + i}`;
  return {
    sql: `a AS (INSERT INTO attempts (job_id, row_number, run_id, kind, started_at, duration_ms, http_status, error_code, outcome, agent_email)
       SELECT $1, t.row_number, ${p(0)}, t.kind, t.started_at, t.duration_ms, t.http_status, t.error_code, t.outcome, NULL
         FROM unnest(${p(1)}::int[], ${p(2)}::text[], ${p(3)}::text[], ${p(4)}::float8[], ${p(5)}::int[], ${p(6)}::text[], ${p(7)}::text[])
              WITH ORDINALITY AS t(row_number, kind, started_at, duration_ms, http_status, error_code, outcome, ord)
         JOIN u ON u.row_number = t.row_number ORDER BY t.ord)`,
    params: [
      col((x) => x.row), col((x) => x.a.kind), col((x) => x.a.startedAt), col((x) => x.a.durationMs), col((x) => x.a.httpStatus),
      col((x) => boundText(x.a.errorCode, MAX_STORED_ID_CHARS)), col((x) => x.a.outcome),
    ],
  };
}

/** Records outcomes, and the attempts of those recorded; the row numbers recorded. */
async function applyOutcomes(client: Client, jobId: number, runId: number, outcomes: readonly Outcome[], at: string): Promise<Set<number>> {
  if (outcomes.length === 0) return new Set();
  const col = <T>(f: (c: RowChange, w: Outcome) => T): T[] => outcomes.map((w) => f(w.change, w));
  const attempts = attemptsOf(outcomes, 20);
  const done = await client.query<{ row_number: number }>({
    name: 'quote-batch.outcome-rows',
    text: `WITH u AS (
       UPDATE rows SET state = v.state, agent_id = COALESCE(v.agent_id, rows.agent_id), attempts = rows.attempts + v.attempts, http_status = v.http_status,
              error_code = v.error_code, error_message = v.error_message, transaction_id = v.transaction_id, quote_number = v.quote_number,
              total_premium = v.total_premium, input_issues_json = COALESCE(v.input_issues_json, rows.input_issues_json),
              request_json = COALESCE(v.request_json, rows.request_json), response_json = v.response_json, updated_at = $2,
              sent_by_job = v.sent_by_job, sent_by_row = v.sent_by_row
         FROM unnest($3::int[], $4::bigint[], $5::text[], $6::text[], $7::text[], $8::int[], $9::int[], $10::text[], $11::text[], $12::text[],
                     $13::text[], $14::float8[], $15::text[], $16::text[], $17::text[], $18::int[], $19::int[])
              AS v(row_number, claim_id, from_state, state, agent_id, attempts, http_status, error_code, error_message, transaction_id,
                   quote_number, total_premium, input_issues_json, request_json, response_json, sent_by_job, sent_by_row)
        WHERE ${WRITTEN_ROW}
       RETURNING rows.row_number),
     ${attempts.sql}
     SELECT row_number FROM u`,
    values: [
      jobId, at, col((_, w) => w.rowNumber), col((_, w) => w.claimId), col((_, w) => w.from ?? null), col((c) => c.state),
      col((c) => boundText(c.agentId ?? null, MAX_STORED_ID_CHARS)), col((_, w) => w.attempts.length), col((c) => c.httpStatus ?? null),
      col((c) => boundText(c.errorCode ?? null, MAX_STORED_ID_CHARS)), col((c) => boundText(c.errorMessage ?? null)),
      col((c) => boundText(c.transactionId ?? null, MAX_STORED_ID_CHARS)), col((c) => boundText(c.quoteNumber ?? null, MAX_STORED_ID_CHARS)),
      col((c) => c.totalPremium ?? null), col((c) => boundJson(c.inputIssuesJson ?? null)), col((c) => boundJson(c.requestJson ?? null)),
      col((c) => boundJson(c.responseJson ?? null)), col((c) => c.sentBy?.job_id ?? null), col((c) => c.sentBy?.row_number ?? null),
      runId, ...attempts.params,
    ],
  });
  return new Set(done.rows.map((r) => r.row_number));
}

/** Puts rows back in the state they had before their mark, with the attempts made; the row numbers put back. */
async function applyPutBacks(client: Client, jobId: number, runId: number, putBacks: readonly PutBack[], at: string): Promise<Set<number>> {
  if (putBacks.length === 0) return new Set();
  const col = <T>(f: (w: PutBack) => T): T[] => putBacks.map(f);
  const attempts = attemptsOf(putBacks, 8);
  const done = await client.query<{ row_number: number }>({
    name: 'quote-batch.put-back-rows',
    text: `WITH u AS (
       UPDATE rows SET state = v.state, attempts = rows.attempts + v.attempts, updated_at = $2
         FROM unnest($3::int[], $4::bigint[], $5::text[], $6::text[], $7::int[]) AS v(row_number, claim_id, from_state, state, attempts)
        WHERE ${WRITTEN_ROW}
       RETURNING rows.row_number),
     ${attempts.sql}
     SELECT row_number FROM u`,
    values: [jobId, at, col((w) => w.rowNumber), col((w) => w.claimId), col((w) => w.from ?? null), col((w) => w.change.state), col((w) => w.attempts.length),
      runId, ...attempts.params],
  });
  return new Set(done.rows.map((r) => r.row_number));
}

/** What a write leaves its row in: a mark `in_flight`, an outcome or put-back its new state. */
const targetOf = (w: FencedRowWrite): RowState => (w.kind === 'mark' ? 'in_flight' : w.change.state);

/** Of writes not applied, those found applied already (their row is in the state they leave it in, under their claim): a commit sent again. */
async function foundApplied(client: Client, jobId: number, writes: readonly FencedRowWrite[]): Promise<Set<number>> {
  if (writes.length === 0) return new Set();
  const found = await client.query<{ row_number: number }>({
    name: 'quote-batch.found-rows',
    text: `SELECT rows.row_number FROM unnest($2::int[], $3::bigint[], $4::text[]) AS v(row_number, claim_id, target)
       JOIN rows ON rows.job_id = $1 AND rows.row_number = v.row_number
      WHERE ${fence('v.claim_id')} AND rows.state = v.target`,
    values: [jobId, writes.map((w) => w.rowNumber), writes.map((w) => w.claimId), writes.map(targetOf)],
  });
  return new Set(found.rows.map((r) => r.row_number));
}

// --- whether another job sent a lead ------------------------------------------------------------

const CANDIDATES_WHERE = `r.job_id <> $2 AND j.environment = $3 AND j.operation = $4 AND r.row_key <> 'row-' || r.row_number
  AND (r.state IN ('succeeded', 'in_doubt', 'in_flight') OR (r.state = 'duplicate' AND r.error_code = 'sent_by_other_job'))`;

/** Answers a search's queries one at a time; `candidates`, when given, answers its first from what was read for many keys at once. */
function answerer(client: Client, candidates?: Map<string, SentByCandidate[]>, asked?: { jobId: number; environment: string; operation: string }) {
  return async (q: SentByQuery): Promise<unknown> => {
    if (q.query === 'candidates') {
      const known = asked !== undefined && q.jobId === asked.jobId && q.environment === asked.environment && q.operation === asked.operation
        ? candidates?.get(q.key) : undefined;
      if (known !== undefined) return known;
      return (await client.query(
        `SELECT r.job_id, r.row_number, r.state, r.error_message, r.sent_by_job, r.sent_by_row FROM rows r JOIN jobs j ON j.id = r.job_id
          WHERE r.row_key = $1 AND ${CANDIDATES_WHERE} ORDER BY r.job_id, r.row_number`, [q.key, q.jobId, q.environment, q.operation])).rows;
    }
    return (await client.query(
      'SELECT state, error_code, error_message, sent_by_job, sent_by_row FROM rows WHERE job_id = $1 AND row_number = $2 AND row_key IS NOT DISTINCT FROM $3',
      [q.jobId, q.rowNumber, q.key])).rows[0];
  };
}

/** See the SQLite ledger's `sentByOtherJob`: the search of `_sent-by.ts`, its queries asked of `client`. */
export async function sentByOtherJobOn(client: Client, jobId: number, environment: string, operation: string, rowKey: string): Promise<SentRow | undefined> {
  return runSentBySearchAsync(sentByOtherJobSearch(jobId, environment, operation, boundKey(rowKey)), answerer(client));
}

/**
 * {@link sentByOtherJobOn} for many keys: the candidates of all of them in one query (per environment
 * and operation); the rarer rows a `duplicate` candidate points to are read one at a time.
 */
export async function sentByOtherJobMany(client: Client, jobId: number, lookups: readonly Pick<MarkLookup, 'environment' | 'operation' | 'rowKey'>[]): Promise<(SentRow | undefined)[]> {
  const results: (SentRow | undefined)[] = new Array<SentRow | undefined>(lookups.length).fill(undefined);
  const groups = new Map<string, number[]>();
  lookups.forEach((l, i) => {
    const at = JSON.stringify([l.environment, l.operation]);
    groups.set(at, [...(groups.get(at) ?? []), i]);
  });
  for (const indices of groups.values()) {
    const { environment, operation } = lookups[indices[0] as number] as MarkLookup;
    const keys = indices.map((i) => boundKey((lookups[i] as MarkLookup).rowKey));
    const read = await client.query<SentByCandidate & { row_key: string }>({
      name: 'quote-batch.sent-by-candidates',
      text: `SELECT r.row_key, r.job_id, r.row_number, r.state, r.error_message, r.sent_by_job, r.sent_by_row FROM rows r JOIN jobs j ON j.id = r.job_id
        WHERE r.row_key = ANY($1::text[]) AND ${CANDIDATES_WHERE} ORDER BY r.job_id, r.row_number`,
      values: [keys, jobId, environment, operation],
    });
    const byKey = new Map<string, SentByCandidate[]>(keys.map((k) => [k, []]));
    for (const { row_key: key, ...candidate } of read.rows) byKey.get(key)?.push(candidate);
    const answer = answerer(client, byKey, { jobId, environment, operation });
    for (const [n, i] of indices.entries()) {
      results[i] = await runSentBySearchAsync(sentByOtherJobSearch(jobId, environment, operation, keys[n] as string), answer);
    }
  }
  return results;
}

// --- one write after another --------------------------------------------------------------------

/** A turn written one write after another (a row written twice in it); a few statements per write. */
export async function commitOneByOne(client: Client, jobId: number, runId: number, writes: readonly FencedRowWrite[], at: string): Promise<FencedRowResult[]> {
  await lockLeads(client, writes.filter((w): w is Mark => w.kind === 'mark'));
  const results: FencedRowResult[] = [];
  for (const write of writes) {
    switch (write.kind) {
      case 'mark': {
        const marked = await fencedOne(client, jobId, write, 'in_flight',
          `UPDATE rows SET state = 'in_flight', agent_id = COALESCE($5, agent_id), request_json = $6, request_sha256 = $7, updated_at = $8`,
          [boundText(write.agentId, MAX_STORED_ID_CHARS), boundJson(write.requestJson), write.requestSha256, at]);
        if (marked !== 'applied') {
          results.push(marked === 'lost' ? { lost: true } : {});
          break;
        }
        const { lookup } = write;
        const sent = lookup === undefined ? undefined : await sentByOtherJobOn(client, jobId, lookup.environment, lookup.operation, lookup.rowKey);
        if (sent !== undefined && lookup !== undefined) {
          await applyOutcomeOne(client, jobId, runId, { kind: 'outcome', rowNumber: write.rowNumber, from: 'in_flight', change: lookup.sentBy(sent), attempts: [], claimId: write.claimId }, at);
          results.push({ sent });
        } else {
          results.push({});
        }
        break;
      }
      case 'outcome':
        results.push((await applyOutcomeOne(client, jobId, runId, write, at)) === 'lost' ? { lost: true } : {});
        break;
      case 'put_back': {
        const put = await fencedOne(client, jobId, write, write.change.state, 'UPDATE rows SET state = $5, attempts = attempts + $6, updated_at = $7',
          [write.change.state, write.attempts.length, at]);
        if (put === 'applied') await insertAttempts(client, jobId, runId, write.rowNumber, write.attempts, null);
        results.push(put === 'lost' ? { lost: true } : {});
        break;
      }
    }
  }
  return results;
}

/**
 * A fenced update of one row (`update` sets, its parameters from `$5`): applied; or found already
 * applied (the row is in `target` under this claim: a commit sent again after a cut connection);
 * or lost (the claim is not this worker's any more).
 */
async function fencedOne(client: Client, jobId: number, write: FencedRowWrite, target: RowState, update: string, params: unknown[]): Promise<Applied> {
  const updated = await client.query(`${update} WHERE rows.job_id = $1 AND rows.row_number = $2 AND ${fence('$3')} AND ($4::text IS NULL OR rows.state = $4)`,
    [jobId, write.rowNumber, write.claimId, write.from ?? null, ...params]);
  if (updated.rowCount === 1) return 'applied';
  if (write.from === undefined) return 'lost';
  const now = await client.query<{ state: string }>(`SELECT state FROM rows WHERE job_id = $1 AND row_number = $2 AND ${fence('$3')}`, [jobId, write.rowNumber, write.claimId]);
  return now.rows[0]?.state === target ? 'found' : 'lost';
}

async function applyOutcomeOne(client: Client, jobId: number, runId: number, write: Outcome, at: string): Promise<Applied> {
  const { change } = write;
  const applied = await fencedOne(client, jobId, write, change.state,
    `UPDATE rows SET state = $5, agent_id = COALESCE($6, agent_id), attempts = attempts + $7, http_status = $8, error_code = $9, error_message = $10,
       transaction_id = $11, quote_number = $12, total_premium = $13, input_issues_json = COALESCE($14, input_issues_json),
       request_json = COALESCE($15, request_json), response_json = $16, updated_at = $17, sent_by_job = $18, sent_by_row = $19`,
    [
      change.state, boundText(change.agentId ?? null, MAX_STORED_ID_CHARS), write.attempts.length, change.httpStatus ?? null,
      boundText(change.errorCode ?? null, MAX_STORED_ID_CHARS), boundText(change.errorMessage ?? null),
      boundText(change.transactionId ?? null, MAX_STORED_ID_CHARS), boundText(change.quoteNumber ?? null, MAX_STORED_ID_CHARS), change.totalPremium ?? null,
      boundJson(change.inputIssuesJson ?? null), boundJson(change.requestJson ?? null), boundJson(change.responseJson ?? null), at,
      change.sentBy?.job_id ?? null, change.sentBy?.row_number ?? null,
    ]);
  if (applied === 'applied') await insertAttempts(client, jobId, runId, write.rowNumber, write.attempts, null);
  return applied;
}
