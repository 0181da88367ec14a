/**
 * The ledger a command names: a SQLite file (the embedded default, `Ledger`) or a PostgreSQL
 * database (`postgres://…`, `PgLedger`), opened, and the maintenance of either. Commands reach both
 * through these and the queries (`queries/`), never through a database handle. The PostgreSQL code
 * (and its driver) loads only for a `postgres://` ledger.
 */
import { Ledger } from './ledger.js';
import { pruneJobs, resolveInDoubt, vacuumLedger, type PruneOptions, type PruneResult, type ResolveRequest, type ResolveResult, type VacuumResult } from './maintenance.js';
import type { PgLedger } from './postgres/ledger.js';
import { isPostgresTarget } from './postgres/target.js';
import type { JobRecord } from './types.js';

/** An opened ledger: the SQLite file, or a PostgreSQL database. */
export type AnyLedger = Ledger | PgLedger;

export function isPgLedger(ledger: AnyLedger): ledger is PgLedger {
  return !(ledger instanceof Ledger);
}

/**
 * Opens the ledger `target` names: `readonly` for reports (SQLite: no migration, an older ledger
 * through an upgraded copy), `mustExist` for commands that change an existing one. `retryForMs`
 * (PostgreSQL): how long a statement the server did not take (a restart, a cut connection) is sent again.
 */
export async function openLedger(target: string, options: { readonly?: boolean; mustExist?: boolean; retryForMs?: number } = {}): Promise<AnyLedger> {
  if (!isPostgresTarget(target)) return Ledger.open(target, options);
  const { PgLedger: Pg } = await import('./postgres/ledger.js');
  return Pg.open(target, { readonly: options.readonly === true || options.mustExist === true, retryForMs: options.retryForMs ?? 0 });
}

export async function closeLedger(ledger: AnyLedger): Promise<void> {
  await ledger.close();
}

export async function jobOf(ledger: AnyLedger, jobId: number): Promise<JobRecord | undefined> {
  return ledger.getJob(jobId);
}

/** `resolve` on either ledger. */
export async function resolveRows(ledger: AnyLedger, request: ResolveRequest): Promise<ResolveResult> {
  if (!isPgLedger(ledger)) return resolveInDoubt(ledger, request);
  const { resolveInDoubtPg } = await import('./postgres/maintenance.js');
  return resolveInDoubtPg(ledger, request);
}

/** `prune` on either ledger. */
export async function pruneLedger(ledger: AnyLedger, options: PruneOptions): Promise<PruneResult> {
  if (!isPgLedger(ledger)) return pruneJobs(ledger, options);
  const { pruneJobsPg } = await import('./postgres/maintenance.js');
  return pruneJobsPg(ledger, options);
}

/** `prune --vacuum`: SQLite rewrites its file; PostgreSQL's own autovacuum returns the space (null: nothing done). */
export function vacuumOf(ledger: AnyLedger): VacuumResult | null {
  return isPgLedger(ledger) ? null : vacuumLedger(ledger);
}
