/**
 * A worker's row writes on PostgreSQL, a turn of them at a time (`PgLedger.commitRowWrites`). Every
 * write is fenced by its row's claim ({@link fence}): a write whose claim was lost changes nothing
 * and says so (`lost`). Each names the state it expects the row in, so that a turn sent again after a
 * cut connection finds it applied (`found`), not applied twice.
 *
 * A turn costs one statement whatever its size ({@link commitBulk}): its marks, outcomes (inserting
 * their attempts) and put-backs, each a fenced UPDATE in a CTE of one WITH; a SELECT more for writes
 * not applied (a commit sent again). Marks whose lead is looked up (another job of the environment
 * exists) add the leads' locks and the other-job check between marks and outcomes, in a transaction.
 * Each is a named statement, parsed and planned once per connection. A mark's request waits for its
 * commit (docs/ledger.md, "What a worker's writes cost"). A turn that writes a row twice (none does
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
 * True when the turn is written by one statement (no mark looked up, each row once): atomic by
 * itself, it needs no transaction of its own (two round trips fewer, which a mark's request waits for).
 */
export function writtenByOneStatement(writes: readonly FencedRowWrite[]): boolean {
  return writes.every((w) => w.kind !== 'mark' || w.lookup === undefined) && new Set(writes.map((w) => w.rowNumber)).size === writes.length;
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
  const sentOf = new Map<number, SentRow>();
  let written: Written;
  if (marks.every((m) => m.lookup === undefined)) {
    written = await writeRows(client, jobId, runId, { marks, outcomes, putBacks }, at);
  } else {
    await lockLeads(client, marks);
    const { marked } = await writeRows(client, jobId, runId, { marks }, at);
    // The other-job check, after the marks: under the leads' locks, a job marking the same lead beside
    // this one has committed its mark (this one finds it) or waits for this commit (and finds this one).
    const looked = marks.filter((m): m is Mark & { lookup: MarkLookup } => m.lookup !== undefined && marked.has(m.rowNumber));
    const sent = await sentByOtherJobMany(client, jobId, looked.map((m) => m.lookup));
    const sentOutcomes: Outcome[] = [];
    looked.forEach((m, i) => {
      const found = sent[i];
      if (found === undefined) return;
      sentOf.set(m.rowNumber, found);
      sentOutcomes.push({ kind: 'outcome', rowNumber: m.rowNumber, from: 'in_flight', change: m.lookup.sentBy(found), attempts: [], claimId: m.claimId });
    });
    const rest = await writeRows(client, jobId, runId, { outcomes: [...outcomes, ...sentOutcomes], putBacks }, at);
    written = { marked, settled: rest.settled, putBack: rest.putBack };
  }

  const applied = (w: FencedRowWrite): boolean => (w.kind === 'mark' ? written.marked : w.kind === 'outcome' ? written.settled : written.putBack).has(w.rowNumber);
  const found = await foundApplied(client, jobId, writes.filter((w) => !applied(w) && w.from !== undefined));
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

/** The row numbers a statement of {@link writeRows} applied, by kind. */
interface Written {
  marked: Set<number>;
  settled: Set<number>;
  putBack: Set<number>;
}

/** A statement's parameters, numbered as they are added: `$1` the job, `$2` the time. */
class Params {
  readonly values: unknown[];

  constructor(jobId: number, at: string) {
    this.values = [jobId, at];
  }

  add(value: unknown, type: string): string {
    this.values.push(value);
    return `$${this.values.length}::${type}`;
  }
}

/**
 * Marks, outcomes (with their attempts) and put-backs in one statement: an UPDATE each, in CTEs of one
 * WITH (different rows: no row is written twice), atomic by itself. A mark committed with the outcomes
 * queued before it waits for no other commit.
 */
async function writeRows(client: Client, jobId: number, runId: number, parts: { marks?: readonly Mark[]; outcomes?: readonly Outcome[]; putBacks?: readonly PutBack[] }, at: string): Promise<Written> {
  const { marks = [], outcomes = [], putBacks = [] } = parts;
  const written: Written = { marked: new Set(), settled: new Set(), putBack: new Set() };
  const p = new Params(jobId, at);
  const ctes: string[] = [];
  /** The CTEs whose RETURNING says which rows were written: m (marks), o (outcomes), p (put-backs). */
  const returning: ('m' | 'o' | 'p')[] = [];
  if (marks.length > 0) {
    const col = <T>(f: (m: Mark) => T): T[] => marks.map(f);
    ctes.push(`m AS (UPDATE rows SET state = 'in_flight', agent_id = COALESCE(v.agent_id, rows.agent_id), request_json = v.request_json, request_sha256 = v.request_sha256, updated_at = $2
       FROM unnest(${p.add(col((m) => m.rowNumber), 'int[]')}, ${p.add(col((m) => m.claimId), 'bigint[]')}, ${p.add(col((m) => m.from ?? null), 'text[]')},
                   ${p.add(col((m) => boundText(m.agentId, MAX_STORED_ID_CHARS)), 'text[]')}, ${p.add(col((m) => boundJson(m.requestJson)), 'text[]')},
                   ${p.add(col((m) => m.requestSha256), 'text[]')}) AS v(row_number, claim_id, from_state, agent_id, request_json, request_sha256)
      WHERE ${WRITTEN_ROW}
     RETURNING rows.row_number)`);
    returning.push('m');
  }
  if (outcomes.length > 0) {
    const col = <T>(f: (c: RowChange, w: Outcome) => T): T[] => outcomes.map((w) => f(w.change, w));
    ctes.push(`o AS (UPDATE rows SET state = v.state, agent_id = COALESCE(v.agent_id, rows.agent_id), attempts = rows.attempts + v.attempts, http_status = v.http_status,
              error_code = v.error_code, error_message = v.error_message, transaction_id = v.transaction_id, quote_number = v.quote_number,
              total_premium = v.total_premium, input_issues_json = COALESCE(v.input_issues_json, rows.input_issues_json),
              request_json = COALESCE(v.request_json, rows.request_json), response_json = v.response_json, updated_at = $2,
              sent_by_job = v.sent_by_job, sent_by_row = v.sent_by_row
         FROM unnest(${[
           p.add(col((_, w) => w.rowNumber), 'int[]'), p.add(col((_, w) => w.claimId), 'bigint[]'), p.add(col((_, w) => w.from ?? null), 'text[]'),
           p.add(col((c) => c.state), 'text[]'), p.add(col((c) => boundText(c.agentId ?? null, MAX_STORED_ID_CHARS)), 'text[]'),
           p.add(col((_, w) => w.attempts.length), 'int[]'), p.add(col((c) => c.httpStatus ?? null), 'int[]'),
           p.add(col((c) => boundText(c.errorCode ?? null, MAX_STORED_ID_CHARS)), 'text[]'), p.add(col((c) => boundText(c.errorMessage ?? null)), 'text[]'),
           p.add(col((c) => boundText(c.transactionId ?? null, MAX_STORED_ID_CHARS)), 'text[]'), p.add(col((c) => boundText(c.quoteNumber ?? null, MAX_STORED_ID_CHARS)), 'text[]'),
           p.add(col((c) => c.totalPremium ?? null), 'float8[]'), p.add(col((c) => boundJson(c.inputIssuesJson ?? null)), 'text[]'),
           p.add(col((c) => boundJson(c.requestJson ?? null)), 'text[]'), p.add(col((c) => boundJson(c.responseJson ?? null)), 'text[]'),
           p.add(col((c) => c.sentBy?.job_id ?? null), 'int[]'), p.add(col((c) => c.sentBy?.row_number ?? null), 'int[]'),
         ].join(', ')})
              AS v(row_number, claim_id, from_state, state, agent_id, attempts, http_status, error_code, error_message, transaction_id,
                   quote_number, total_premium, input_issues_json, request_json, response_json, sent_by_job, sent_by_row)
        WHERE ${WRITTEN_ROW}
       RETURNING rows.row_number)`, attemptsOf(p, runId, 'oa', 'o', outcomes));
    returning.push('o');
  }
  if (putBacks.length > 0) {
    const col = <T>(f: (w: PutBack) => T): T[] => putBacks.map(f);
    ctes.push(`p AS (UPDATE rows SET state = v.state, attempts = rows.attempts + v.attempts, updated_at = $2
         FROM unnest(${p.add(col((w) => w.rowNumber), 'int[]')}, ${p.add(col((w) => w.claimId), 'bigint[]')}, ${p.add(col((w) => w.from ?? null), 'text[]')},
                     ${p.add(col((w) => w.change.state), 'text[]')}, ${p.add(col((w) => w.attempts.length), 'int[]')}) AS v(row_number, claim_id, from_state, state, attempts)
        WHERE ${WRITTEN_ROW}
       RETURNING rows.row_number)`, attemptsOf(p, runId, 'pa', 'p', putBacks));
    returning.push('p');
  }
  if (ctes.length === 0) return written;
  const done = await client.query<{ kind: 'm' | 'o' | 'p'; row_number: number }>({
    // Named by the parts it has: its text is the same for every turn with those parts.
    name: `quote-batch.write-rows-${returning.join('')}`,
    text: `WITH ${ctes.join(',\n')}\n${returning.map((k) => `SELECT '${k}' AS kind, row_number FROM ${k}`).join('\nUNION ALL ')}`,
    values: p.values,
  });
  for (const r of done.rows) (r.kind === 'm' ? written.marked : r.kind === 'o' ? written.settled : written.putBack).add(r.row_number);
  return written;
}

/** The attempts of the writes `updated` applied, inserted by the same statement, in the writes' order. */
function attemptsOf(p: Params, runId: number, name: string, updated: string, writes: readonly { rowNumber: number; attempts: readonly AttemptRecord[] }[]): string {
  const all = writes.flatMap((w) => w.attempts.map((a) => ({ row: w.rowNumber, a })));
  const col = <T>(f: (x: { row: number; a: AttemptRecord }) => T): T[] => all.map(f);
  return `${name} AS (INSERT INTO attempts (job_id, row_number, run_id, kind, started_at, duration_ms, http_status, error_code, outcome, agent_email)
       SELECT $1, t.row_number, ${p.add(runId, 'int')}, t.kind, t.started_at, t.duration_ms, t.http_status, t.error_code, t.outcome, NULL
         FROM unnest(${p.add(col((x) => x.row), 'int[]')}, ${p.add(col((x) => x.a.kind), 'text[]')}, ${p.add(col((x) => x.a.startedAt), 'text[]')},
                     ${p.add(col((x) => x.a.durationMs), 'float8[]')}, ${p.add(col((x) => x.a.httpStatus), 'int[]')},
                     ${p.add(col((x) => boundText(x.a.errorCode, MAX_STORED_ID_CHARS)), 'text[]')}, ${p.add(col((x) => x.a.outcome), 'text[]')})
              WITH ORDINALITY AS t(row_number, kind, started_at, duration_ms, http_status, error_code, outcome, ord)
         JOIN ${updated} ON ${updated}.row_number = t.row_number ORDER BY t.ord)`;
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
