import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import Database from 'better-sqlite3';
import { startSandbox, type SandboxHandle } from '../../src/sandbox/index.js';
import { REPO_ROOT } from '../helpers/cli.js';

export const SAMPLE_CSV = join(REPO_ROOT, 'samples', 'leads.csv');
export const SAMPLE_NDJSON = join(REPO_ROOT, 'samples', 'leads.ndjson');
export const SAMPLE_AGENTS = join(REPO_ROOT, 'samples', 'agents.csv');
export const MAPPING_CSV = join(REPO_ROOT, 'mappings', 'example-csv.yaml');
export const MAPPING_NDJSON = join(REPO_ROOT, 'mappings', 'example-ndjson.yaml');
export const FIXTURES = join(REPO_ROOT, 'test', 'fixtures', 'pipeline');
export const KEY = 'test-key-for-pipeline';

export function startTestSandbox(options: Parameters<typeof startSandbox>[0] = {}): Promise<SandboxHandle> {
  return startSandbox({ port: 0, apiKey: KEY, agentsFile: SAMPLE_AGENTS, seed: 7, ...options });
}

/** Writes `rows` generated leads (and their agents file) into `dir` with the samples' generator. */
export function generateLeads(dir: string, rows: number, seed = 11): { csv: string; agents: string } {
  const result = spawnSync(process.execPath, [join(REPO_ROOT, 'samples', 'generate.mjs'), '--rows', String(rows), '--out', dir, '--seed', String(seed)], {
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`generator failed: ${result.stderr}`);
  return { csv: join(dir, 'leads.csv'), agents: join(dir, 'agents.csv') };
}

export function copyInto(dir: string, file: string, name: string): string {
  const target = join(dir, name);
  copyFileSync(file, target);
  return target;
}

export interface LedgerView {
  states: Record<string, number>;
  rows: { row_number: number; row_key: string | null; state: string; agent_email: string | null; attempts: number }[];
  jobs: { id: number; status: string; total_rows: number | null }[];
  runs: { id: number; job_id: number; status: string }[];
  attemptsByKind: Record<string, number>;
  integrity: string;
}

/** Reads a ledger the way an analyst would: read-only, plain SQL. */
export function readLedger(path: string, jobId?: number): LedgerView {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const job = jobId ?? (db.prepare('SELECT MAX(id) AS id FROM jobs').get() as { id: number }).id;
    const states: Record<string, number> = {};
    for (const r of db.prepare('SELECT state, COUNT(*) AS n FROM rows WHERE job_id = ? GROUP BY state').all(job) as { state: string; n: number }[]) {
      states[r.state] = r.n;
    }
    const attemptsByKind: Record<string, number> = {};
    for (const r of db.prepare('SELECT kind, COUNT(*) AS n FROM attempts WHERE job_id = ? GROUP BY kind').all(job) as { kind: string; n: number }[]) {
      attemptsByKind[r.kind] = r.n;
    }
    return {
      states,
      rows: db.prepare('SELECT row_number, row_key, state, agent_email, attempts FROM rows WHERE job_id = ? ORDER BY row_number').all(job) as LedgerView['rows'],
      jobs: db.prepare('SELECT id, status, total_rows FROM jobs ORDER BY id').all() as LedgerView['jobs'],
      runs: db.prepare('SELECT id, job_id, status FROM runs ORDER BY id').all() as LedgerView['runs'],
      attemptsByKind,
      integrity: db.pragma('integrity_check', { simple: true }) as string,
    };
  } finally {
    db.close();
  }
}

/** Counts rows in a state while a run writes (WAL lets a reader in); 0 before the ledger exists. */
export function countState(path: string, state: string): number {
  let db: Database.Database | undefined;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
    return (db.prepare('SELECT COUNT(*) AS n FROM rows WHERE state = ?').get(state) as { n: number }).n;
  } catch {
    return 0;
  } finally {
    db?.close();
  }
}

/** Waits (bounded) until `predicate` holds; throws after `maxMs`. */
export async function waitFor(predicate: () => boolean | Promise<boolean>, maxMs = 60_000, stepMs = 50): Promise<void> {
  for (let waited = 0; waited < maxMs; waited += stepMs) {
    if (await predicate()) return;
    await new Promise((r) => setTimeout(r, stepMs));
  }
  throw new Error(`condition not met within ${maxMs} ms`);
}

/** Every byte of the ledger files, for searching secrets. */
export function ledgerBytes(path: string): string {
  return ['', '-wal', '-shm']
    .map((suffix) => {
      try {
        return readFileSync(path + suffix).toString('latin1');
      } catch {
        return '';
      }
    })
    .join('\n');
}

/** The job's recorded resume point (first row not known to be final), 0 when none. */
export function resumePointOf(path: string): number {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('SELECT resume_row FROM jobs ORDER BY id DESC LIMIT 1').get() as { resume_row: number | null }).resume_row ?? 0;
  } finally {
    db.close();
  }
}
