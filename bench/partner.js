// The `partner` scenario of the benchmark suite (`node bench/run.js --only partner`): adaptive
// concurrency against a partner that limits us (issue 10). For each profile, one `quote-batch
// sandbox` process plays the partner and one `quote-batch run` process sends to it:
//
//   a  an unknown cap of 40 requests/s (one-second windows), latency log-normal, median 200 ms,
//      Retry-After 1, --concurrency 32: ≥ 0.95 of the cap, ≤ 3% of quote requests answered 429
//   b  the cap drops from 40 to 20/s 30 s after the start: total time within 1/0.9 of the ideal,
//      ≤ 5% answered 429
//   c  16 quotes worked on at once × 200 ms, a FIFO queue beyond, --concurrency 64: ≥ 0.9 of the
//      partner's 80/s, its median latency (queue included) ≤ 1.5 × 200 ms
//   d  no limit, 50 ms, --concurrency 32: ≥ 0.9 of 640 rows/s end to end, beside --no-adaptive
//      (the CPU-bound case, no latency at c=64 against a bare got loop, is the `cpu` scenario)
//   leaky  a gateway's leaky bucket of 10/s, burst 5, whose 429 is an HTML page without
//      Retry-After, 50 ms, 600 rows, c=32: ≥ 0.95 of its rate, ≤ 3% of quotes answered 429
//      (the first seconds included)
//   three  three runs (each its own ledger, 1,000 rows, c=32) sharing one cap of 40/s, started
//      10 s apart: while all three run, together ≥ 0.95 of the cap and each one's share of the
//      accepted requests 0.2–0.5; ≤ 5% answered 429 (and, without a target, the whole span's accepted/s ÷ 40)
//   flaky  10% of answers 500/503 and 5% 429 (Retry-After: 1) at random whatever the load, 50 ms,
//      2,000 rows, c=32: --adaptive within 1.2× of --no-adaptive's time (the median of three pairs)
//   announced  a cap of 40/s, 200 ms log-normal, 2,000 rows, c=32, announcing nothing, then its limit
//      in each style (kong, ietf, x-ratelimit), one after the other (issue 34): each style ≥ 0.95 of
//      the cap, ≤ 1% of quotes answered 429 (the sandbox's count), never distrusted
//   announced-liar  the same cap announced as 2.5 times itself (ietf): ≥ 0.9 of the real 40/s, ≤ 5%
//      answered 429, and the warning that the limit is not kept to
//
// Figures come from the run's ledger (attempts, and the per-second run_samples) and from the
// sandbox's GET /__sandbox/stats (per-second counts, its own latency percentiles). A chart per
// profile goes to bench/results/partner-<id>.svg and .png (the PNG rendered by headless Chromium).
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import Database from 'better-sqlite3';
import { BIN, ROOT, createTempDir, measureNode, readLedger, round, sleep, startSandbox } from './_lib.js';
import { median } from './_stats.js';
import { renderTimelineChart } from './_timeline-chart.js';

const MAPPING = join(ROOT, 'bench', 'mappings', 'leads-100.yaml');
const RESULTS = join(ROOT, 'bench', 'results');
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** The profiles: the sandbox's flags, the run's, the rows (full / --quick) and a time cap in seconds. */
export const PROFILES = [
  {
    id: 'a', title: '(a) unknown cap 40/s, 200 ms log-normal, c=32',
    sandbox: ['--rps-cap', '40', '--rps-mode', 'window', '--latency-ms', '200', '--latency-sigma', '0.25', '--retry-after', '1'],
    concurrency: 32, rows: { full: 4000, quick: 1600 }, capS: 300, reference: { value: 40, label: 'cap 40/s' },
  },
  {
    id: 'b', title: '(b) cap 40/s, then 20/s after 30 s, c=32',
    sandbox: ['--rps-cap-schedule', '0:40,30:20', '--rps-mode', 'window', '--latency-ms', '200', '--latency-sigma', '0.25', '--retry-after', '1'],
    concurrency: 32, rows: { full: 2400, quick: 1600 }, capS: 300, schedule: [[0, 40], [30, 20]], reference: { value: 20, label: 'cap 20/s after 30 s' },
  },
  {
    id: 'c', title: '(c) capacity 16 × 200 ms, FIFO queue, c=64',
    sandbox: ['--capacity', '16', '--latency-ms', '200'],
    concurrency: 64, rows: { full: 4000, quick: 1600 }, capS: 240, reference: { value: 80, label: 'capacity 80/s' },
  },
  {
    id: 'd', title: '(d) no limit, 50 ms, c=32',
    sandbox: ['--latency-ms', '50'],
    concurrency: 32, rows: { full: 10_000, quick: 2000 }, capS: 180, reference: { value: 640, label: 'ceiling 640/s' },
  },
  {
    id: 'leaky', title: 'leaky bucket 10/s, burst 5, HTML 429 without Retry-After, 50 ms, c=32',
    sandbox: ['--rps-cap', '10', '--rps-mode', 'bucket', '--rps-burst', '5', '--rps-cap-answer', 'html', '--latency-ms', '50', '--latency-sigma', '0.25'],
    concurrency: 32, rows: { full: 600, quick: 600 }, capS: 180, reference: { value: 10, label: 'rate 10/s' },
  },
  {
    id: 'three', title: 'three runs sharing a cap of 40/s, started 10 s apart, c=32 each',
    sandbox: ['--rps-cap', '40', '--rps-mode', 'window', '--latency-ms', '200', '--latency-sigma', '0.25', '--retry-after', '1'],
    concurrency: 32, rows: { full: 1000, quick: 600 }, capS: 300, clients: 3, staggerS: 10, reference: { value: 40, label: 'cap 40/s (all three)' },
  },
  {
    id: 'flaky', title: 'flaky: 10% 500/503 and 5% 429 at random, 50 ms, c=32',
    sandbox: ['--fail-rate', '0.1', '--throttle-rate', '0.0556', '--retry-after', '1', '--latency-ms', '50'],
    concurrency: 32, rows: { full: 2000, quick: 2000 }, capS: 300, reference: { value: 640, label: 'ceiling 640/s' },
  },
  {
    // Issue 34: the same cap of 40/s announcing nothing, then in each style, one after the other in one run.
    id: 'announced', title: 'cap 40/s, announced', kind: 'announced',
    sandbox: ['--rps-cap', '40', '--rps-mode', 'window', '--latency-ms', '200', '--latency-sigma', '0.25', '--retry-after', '1'],
    variants: [
      { id: 'none', flags: [] },
      { id: 'kong', flags: ['--announce-limit', 'kong'] },
      { id: 'ietf', flags: ['--announce-limit', 'ietf'] },
      { id: 'x-ratelimit', flags: ['--announce-limit', 'x-ratelimit'] },
    ],
    concurrency: 32, rows: { full: 2000, quick: 1000 }, capS: 240, reference: { value: 40, label: 'cap 40/s' },
  },
  {
    id: 'announced-liar', title: 'cap 40/s, announced as 100/s (--announce-factor 2.5)', kind: 'announced',
    sandbox: ['--rps-cap', '40', '--rps-mode', 'window', '--latency-ms', '200', '--latency-sigma', '0.25', '--retry-after', '1',
      '--announce-limit', 'ietf', '--announce-factor', '2.5'],
    variants: [{ id: 'ietf', flags: [] }],
    concurrency: 32, rows: { full: 2000, quick: 1000 }, capS: 240, reference: { value: 40, label: 'cap 40/s (announced 100/s)' },
  },
];

/**
 * Reads what the benchmark needs from `GET /__sandbox/stats`: per-second counts of quote/lead
 * answers and the partner-side latency percentiles of quotes. The one place that knows the shape
 * of those fields; a field the sandbox does not have (yet) reads as null.
 */
export function readSandboxStats(body) {
  const seconds = body.perSecond ?? body.seconds ?? null;
  const latency = body.latencyMs?.quote ?? body.latency?.quote ?? body.operations?.quote?.latencyMs ?? null;
  return {
    perSecond: Array.isArray(seconds)
      ? seconds.map((s, i) => ({ t: s.second ?? s.t ?? i, accepted: s.accepted ?? s.ok ?? 0, throttled: s.throttled ?? s['429'] ?? 0 }))
      : null,
    quoteLatencyMs: latency === null ? null : { p50: latency.p50 ?? null, p90: latency.p90 ?? null, p99: latency.p99 ?? null },
    operations: body.operations,
    faults: body.faults ?? null,
  };
}

/** The run's attempts (every kind): counts, 429s and the window from the first start to the last end, in ms since the epoch. */
function readAttempts(db, jobId) {
  const row = db.prepare(
    `SELECT count(*) AS n,
            sum(http_status = 429) AS throttled,
            sum(kind = 'quote') AS quotes,
            sum(kind = 'quote' AND http_status = 429) AS quotesThrottled,
            sum(kind = 'quote' AND outcome = 'ok') AS quotesSucceeded,
            min((julianday(started_at) - 2440587.5) * 86400000.0) AS firstMs,
            max((julianday(started_at) - 2440587.5) * 86400000.0 + duration_ms) AS lastMs
       FROM attempts WHERE job_id = ?`,
  ).get(jobId);
  const durations = db.prepare(`SELECT duration_ms AS d FROM attempts WHERE job_id = ? AND kind = 'quote' AND http_status = 200`).all(jobId).map((r) => r.d);
  return { ...row, clientQuoteMedianMs: durations.length > 0 ? median(durations) : null };
}

/**
 * One point per second of the run: from run_samples when the run recorded them, else rebuilt from
 * the attempts (rows done and 429s per second; the limit, in-flight counts and pace then unknown).
 */
function readTimeline(db, jobId, runId, firstMs) {
  const hasSamples = db.prepare(`SELECT count(*) AS n FROM sqlite_master WHERE name = 'run_samples'`).get().n > 0;
  const samples = hasSamples ? db.prepare('SELECT * FROM run_samples WHERE run_id = ? ORDER BY elapsed_ms').all(runId) : [];
  if (samples.length > 0) {
    return {
      source: 'run_samples',
      points: samples.map((s, i) => {
        const seconds = Math.max(0.001, (s.elapsed_ms - (i === 0 ? 0 : samples[i - 1].elapsed_ms)) / 1000);
        return {
          t: s.elapsed_ms / 1000, limit: s.concurrency_limit, inFlight: s.in_flight, rowsPerS: s.rows_done / seconds, throttledPerS: s.throttled / seconds,
          pace: s.pace_rate ?? null, announced: s.announced_rate ?? null,
        };
      }),
    };
  }
  const rows = db.prepare(
    `SELECT CAST(((julianday(started_at) - 2440587.5) * 86400000.0 + duration_ms - ?) / 1000 AS INTEGER) AS second,
            sum(kind <> 'agent_validate' AND outcome IN ('ok', 'rejected')) AS done, sum(http_status = 429) AS throttled
       FROM attempts WHERE job_id = ? GROUP BY second ORDER BY second`,
  ).all(firstMs, jobId);
  return { source: 'attempts', points: rows.map((r) => ({ t: r.second + 1, limit: null, inFlight: 0, rowsPerS: r.done, throttledPerS: r.throttled, pace: null })) };
}

/** Seconds a perfect sender needs for `requests` under a cap schedule [[fromS, perS], …], starting `startS` after the schedule did. */
export function idealSeconds(schedule, requests, startS) {
  let left = requests;
  let t = startS;
  for (let i = 0; i < schedule.length; i += 1) {
    const [, cap] = schedule[i];
    const end = i + 1 < schedule.length ? schedule[i + 1][0] : Number.POSITIVE_INFINITY;
    if (t >= end) continue;
    const room = (end - t) * cap;
    if (left <= room) return t + left / cap - startS;
    left -= room;
    t = end;
  }
  return Number.NaN;
}

/** One `quote-batch run` of `rows` rows into its own ledger, and what its ledger says. */
async function runOnce(profile, { file, sandbox, dir, rows, extraRunArgs, label, n = 0 }) {
  const ledgerFile = join(dir, `ledger-${n}.db`);
  const result = await measureNode(
    [BIN, 'run', file, '--mapping', MAPPING, '--env', 'sandbox', '--base-url', sandbox.url, '--ledger', ledgerFile,
      '--concurrency', String(profile.concurrency), '--limit', String(rows), '--quiet', ...extraRunArgs],
    { timeoutS: profile.capS },
  );
  if (!existsSync(ledgerFile)) throw new Error(`partner ${label}: the run wrote no ledger (exit ${result.exitCode}):\n${result.stderr.slice(-2000)}`);
  const ledger = readLedger(ledgerFile);
  const db = new Database(ledgerFile, { readonly: true, fileMustExist: true });
  try {
    const attempts = readAttempts(db, ledger.job.id);
    const timeline = readTimeline(db, ledger.job.id, ledger.runs.at(-1).id, attempts.firstMs);
    const sends = db.prepare(
      `SELECT (julianday(started_at) - 2440587.5) * 86400000.0 AS atMs, http_status AS status, kind FROM attempts WHERE job_id = ?`,
    ).all(ledger.job.id);
    return { ledger, attempts, timeline, sends, result, windowS: (attempts.lastMs - attempts.firstMs) / 1000 };
  } finally {
    db.close();
  }
}

async function measureProfile(profile, { file, agentsFile, quick, extraRunArgs = [], label = profile.id, log }) {
  const rows = quick ? profile.rows.quick : profile.rows.full;
  const dir = createTempDir(`qb-bench-partner-${profile.id}-`);
  const sandbox = await startSandbox({ agentsFile, flags: profile.sandbox });
  try {
    const clients = profile.clients ?? 1;
    log(`partner ${label}: ${clients > 1 ? `${clients} runs ${profile.staggerS} s apart, ` : ''}run ${rows} rows, --concurrency ${profile.concurrency} ${extraRunArgs.join(' ')} against sandbox ${profile.sandbox.join(' ')}…`);
    // The schedule of (b) counts from the start or the last reset: reset right before the run.
    await sandbox.reset();
    const resetAtMs = Date.now();
    const runs = await Promise.all(Array.from({ length: clients }, async (_, n) => {
      await sleep(n * (profile.staggerS ?? 0) * 1000);
      return runOnce(profile, { file, sandbox, dir, rows, extraRunArgs, label, n });
    }));
    const stats = readSandboxStats(await sandbox.statsBody());
    return { rows, ...runs[0], runs, stats, resetAtMs };
  } finally {
    await sandbox.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The three runs' figures: together, and each one's share of the accepted requests while all of them ran. */
function sharedCapFigures(runs, cap) {
  const firstMs = Math.min(...runs.map((r) => r.attempts.firstMs));
  const lastMs = Math.max(...runs.map((r) => r.attempts.lastMs));
  const accepted = runs.reduce((sum, r) => sum + r.attempts.n - r.attempts.throttled, 0);
  const quotes = runs.reduce((sum, r) => sum + r.attempts.quotes, 0);
  const quotesThrottled = runs.reduce((sum, r) => sum + r.attempts.quotesThrottled, 0);
  // All run from a second after the last one's first request to a second before the first one's last.
  const from = Math.max(...runs.map((r) => r.attempts.firstMs)) + 1000;
  const to = Math.min(...runs.map((r) => r.attempts.lastMs)) - 1000;
  const inAll = runs.map((r) => r.sends.filter((s) => s.atMs >= from && s.atMs <= to && s.status !== 429 && s.status !== null).length);
  const total = inAll.reduce((a, b) => a + b, 0);
  return {
    ratio: accepted / ((lastMs - firstMs) / 1000) / cap, quoteShare: quotes > 0 ? quotesThrottled / quotes : null,
    shares: inAll.map((n) => (total > 0 ? n / total : null)), allRunS: (to - from) / 1000,
    allRunRatio: to > from ? total / ((to - from) / 1000) / cap : null,
  };
}

/** The figures of one profile, against the issue's targets. */
function evaluate(profile, m, addFigure) {
  const quoteShare = m.attempts.quotes > 0 ? m.attempts.quotesThrottled / m.attempts.quotes : null;
  const accepted = m.attempts.n - m.attempts.throttled;
  const note = `${m.ledger.rows} rows (${JSON.stringify(m.ledger.states)}), ${m.attempts.n} attempts, ${m.attempts.throttled} answered 429, `
    + `sending window ${round(m.windowS, 1)} s${m.result.timedOut ? ' (time cap hit)' : ''}; timeline from ${m.timeline.source}`;
  const id = `partner.${profile.id}`;
  switch (profile.id) {
    case 'a':
      addFigure({ id: `${id}.capRatio`, label: 'partner (a): accepted requests/s ÷ cap 40', value: accepted / m.windowS / 40, digits: 3, target: { op: '>=', value: 0.95 }, note });
      addFigure({ id: `${id}.throttledShare`, label: 'partner (a): share of quote requests answered 429', value: quoteShare, digits: 4, target: { op: '<=', value: 0.03 } });
      break;
    case 'b': {
      const startS = (m.attempts.firstMs - m.resetAtMs) / 1000;
      const ideal = idealSeconds(profile.schedule, accepted, startS);
      addFigure({ id: `${id}.idealRatio`, label: 'partner (b): ideal time ÷ actual (cap 40 → 20/s)', value: ideal / m.windowS, digits: 3, target: { op: '>=', value: 0.9 },
        note: `${note}; ideal ${round(ideal, 1)} s for ${accepted} accepted requests from ${round(startS, 2)} s after the reset` });
      addFigure({ id: `${id}.throttledShare`, label: 'partner (b): share of quote requests answered 429', value: quoteShare, digits: 4, target: { op: '<=', value: 0.05 } });
      break;
    }
    case 'c': {
      const p50 = m.stats.quoteLatencyMs?.p50 ?? null;
      addFigure({ id: `${id}.capacityRatio`, label: 'partner (c): quotes/s ÷ capacity 80', value: m.attempts.quotesSucceeded / m.windowS / 80, digits: 3, target: { op: '>=', value: 0.9 }, note });
      addFigure({ id: `${id}.partnerMedianMs`, label: 'partner (c): partner median latency, queue included', value: p50, unit: 'ms', target: { op: '<=', value: 300 },
        note: `client-side median of quote attempts: ${round(m.attempts.clientQuoteMedianMs, 1)} ms` });
      break;
    }
    case 'd':
      addFigure({ id: `${id}.ceilingRatio`, label: 'partner (d): rows/s end to end ÷ 640 (no limit, 50 ms, c=32)', value: m.ledger.rows / m.result.wallS / 640, digits: 3, target: { op: '>=', value: 0.9 }, note });
      break;
    case 'leaky': {
      const early = m.sends.filter((s) => s.kind === 'quote' && s.status === 429 && s.atMs < m.attempts.firstMs + 2000).length;
      addFigure({ id: `${id}.rateRatio`, label: 'partner leaky: accepted requests/s ÷ 10 (burst 5, HTML 429, no Retry-After)', value: accepted / m.windowS / 10, digits: 3, target: { op: '>=', value: 0.95 }, note });
      addFigure({ id: `${id}.throttledShare`, label: 'partner leaky: share of quote requests answered 429', value: quoteShare, digits: 4, target: { op: '<=', value: 0.03 },
        note: `${early} of them sent in the first 2 s` });
      break;
    }
    case 'announced':
    case 'announced-liar':
      evaluateAnnounced(profile, m, addFigure, note);
      break;
    case 'three': {
      const f = sharedCapFigures(m.runs, 40);
      const runs = m.runs.map((r) => `${r.ledger.rows} rows ${JSON.stringify(r.ledger.states)} in ${round(r.windowS, 1)} s`).join('; ');
      // "Together" is while all three run (docs/adaptive.md, "Three runs sharing a cap"); the whole span
      // also counts the first run alone at the start and the last one alone at the end, not a target.
      addFigure({ id: `${id}.allRunRatio`, label: 'partner three: accepted requests/s ÷ cap 40 while all three run', value: f.allRunRatio, digits: 3, target: { op: '>=', value: 0.95 },
        note: `over ${round(f.allRunS, 1)} s` });
      addFigure({ id: `${id}.capRatio`, label: 'partner three: accepted requests/s of the three ÷ cap 40, first request to last answer', value: f.ratio, digits: 3, note: runs });
      addFigure({ id: `${id}.throttledShare`, label: 'partner three: share of quote requests answered 429', value: f.quoteShare, digits: 4, target: { op: '<=', value: 0.05 } });
      addFigure({ id: `${id}.minShare`, label: 'partner three: smallest share of the accepted requests while all three run', value: Math.min(...f.shares), digits: 3, target: { op: '>=', value: 0.2 },
        note: `shares ${f.shares.map((s) => round(s, 3)).join(' / ')} over ${round(f.allRunS, 1)} s` });
      addFigure({ id: `${id}.maxShare`, label: 'partner three: largest share of the accepted requests while all three run', value: Math.max(...f.shares), digits: 3, target: { op: '<=', value: 0.5 } });
      break;
    }
  }
}

/**
 * Issue 34: the share of 40/s accepted, the share of quotes the partner answered 429 (its own count)
 * and whether the run said it distrusts what the partner announces. An honest announcement must not
 * be distrusted; one of 2.5 times the cap must be.
 */
function evaluateAnnounced(profile, m, addFigure, note) {
  const v = m.variant;
  const id = `partner.${profile.id}.${v.id}`;
  const name = profile.id === 'announced-liar' ? 'partner announced 2.5× (ietf)' : `partner announced ${v.id}`;
  const accepted = m.attempts.n - m.attempts.throttled;
  const quote = m.stats.operations?.quote ?? { received: 0, statuses: {} };
  const partnerShare = quote.received > 0 ? (quote.statuses?.['429'] ?? 0) / quote.received : null;
  const warned = /that limit is not kept to/.test(m.result.stderr);
  const paced = m.timeline.points.filter((p) => p.announced !== null && p.pace !== null && Math.abs(p.pace - p.announced) < 0.01).length;
  const details = `${note}; partner: ${quote.received} quotes received, ${quote.statuses?.['429'] ?? 0} answered 429 (faults.rpsCapped ${m.stats.faults?.rpsCapped ?? '?'}), `
    + `client: ${m.attempts.quotesThrottled} of ${m.attempts.quotes} quote attempts 429; paced at the announced rate in ${paced} of ${m.timeline.points.length} s; exit ${m.result.exitCode}`;
  const honest = profile.id === 'announced';
  addFigure({ id: `${id}.capRatio`, label: `${name}: accepted requests/s ÷ cap 40`, value: accepted / m.windowS / 40, digits: 3,
    target: v.id === 'none' ? undefined : { op: '>=', value: honest ? 0.95 : 0.9 }, note: details });
  addFigure({ id: `${id}.throttledShare`, label: `${name}: share of quotes answered 429 (the partner's count)`, value: partnerShare, digits: 4,
    target: v.id === 'none' ? undefined : { op: '<=', value: honest ? 0.01 : 0.05 } });
  if (v.id !== 'none') {
    addFigure({ id: `${id}.distrusted`, label: `${name}: the run warned the limit is not kept to (1 yes, 0 no)`, value: warned ? 1 : 0,
      target: { op: honest ? '<=' : '>=', value: honest ? 0 : 1 },
      note: warned ? (m.result.stderr.split('\n').find((l) => /not kept to/.test(l)) ?? '').slice(0, 400) : undefined });
  }
}

/** Writes the SVG charts and renders them to PNG with headless Chromium (skipped, with a note, without it). */
async function writeCharts(charts, log) {
  mkdirSync(RESULTS, { recursive: true });
  for (const { id, svg } of charts) writeFileSync(join(RESULTS, `partner-${id}.svg`), svg);
  if (!existsSync(CHROMIUM)) {
    log(`partner: ${CHROMIUM} not found, charts written as SVG only`);
    return;
  }
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
  try {
    const page = await browser.newPage({ viewport: { width: 760, height: 448 } });
    for (const { id, svg } of charts) {
      await page.setContent(`<!doctype html><html><body style="margin:0">${svg}</body></html>`);
      await page.locator('svg').screenshot({ path: join(RESULTS, `partner-${id}.png`) });
    }
  } finally {
    await browser.close();
  }
  log(`partner: charts in ${relative(ROOT, RESULTS)}/partner-*.svg and .png`);
}

/** Pairs of runs (adaptive, fixed) the flaky profile is measured in. */
const FLAKY_PAIRS = 3;

/** The scenario: every profile in turn, its figures into `addFigure`, its details into `details.partner`. */
export async function benchPartner({ file, agentsFile, quick, addFigure, details, log }) {
  const charts = [];
  details.partner = {};
  // QB_PARTNER_PROFILES=leaky,three runs only those profiles.
  const wanted = process.env.QB_PARTNER_PROFILES?.split(',').filter(Boolean);
  // A profile with variants (the same partner announcing its limit in each style) measures each in turn.
  const measurements = PROFILES.filter((p) => wanted === undefined || wanted.includes(p.id)).flatMap((p) => (p.variants === undefined
    ? [{ profile: p, key: p.id }]
    : p.variants.map((variant) => ({ profile: { ...p, sandbox: [...p.sandbox, ...variant.flags], title: `${p.title} (${variant.id})` }, key: `${p.id}-${variant.id}`, variant }))));
  for (const { profile, key, variant } of measurements) {
    const m = await measureProfile(profile, { file, agentsFile, quick, log, label: key });
    m.variant = variant;
    evaluate(profile, m, addFigure);
    const entry = {
      rows: m.rows, sandboxFlags: profile.sandbox, concurrency: profile.concurrency, states: m.ledger.states,
      attempts: m.attempts, windowS: round(m.windowS, 2), wallS: round(m.result.wallS, 2), exitCode: m.result.exitCode, timedOut: m.result.timedOut,
      sandbox: { operations: m.stats.operations, quoteLatencyMs: m.stats.quoteLatencyMs, perSecond: m.stats.perSecond },
      timeline: m.timeline,
    };
    if (profile.id === 'd' || profile.id === 'flaky') {
      // The same run without adapting: adapting must not cost a partner that does not limit us.
      const fixed = await measureProfile(profile, { file, agentsFile, quick, extraRunArgs: ['--no-adaptive'], label: `${profile.id} (--no-adaptive)`, log });
      const adaptiveRate = m.ledger.rows / m.result.wallS;
      const fixedRate = fixed.ledger.rows / fixed.result.wallS;
      const runs = `${round(adaptiveRate, 1)} vs ${round(fixedRate, 1)} rows/s, process start to exit (exit codes ${m.result.exitCode} / ${fixed.result.exitCode}; `
        + `${JSON.stringify(m.ledger.states)} / ${JSON.stringify(fixed.ledger.states)})`;
      if (profile.id === 'd') {
        addFigure({ id: 'partner.d.adaptiveVsFixed', label: 'partner (d): rows/s --adaptive ÷ --no-adaptive', value: adaptiveRate / fixedRate, digits: 3, note: runs });
      } else {
        // A run of 2,000 rows against random faults ends on its last retries' back-off: one pair's ratio
        // varied 0.85–1.2 on a quiet machine. Three pairs, interleaved, and their median.
        const pairs = [[m, fixed]];
        for (let n = 1; n < FLAKY_PAIRS; n += 1) {
          const again = await measureProfile(profile, { file, agentsFile, quick, label: `${profile.id} (pair ${n + 1})`, log });
          const againFixed = await measureProfile(profile, { file, agentsFile, quick, extraRunArgs: ['--no-adaptive'], label: `${profile.id} (pair ${n + 1}, --no-adaptive)`, log });
          pairs.push([again, againFixed]);
        }
        const ratios = pairs.map(([a, f]) => a.result.wallS / f.result.wallS);
        addFigure({ id: 'partner.flaky.timeVsFixed', label: `partner flaky: --adaptive time ÷ --no-adaptive time (median of ${pairs.length} pairs)`, value: median(ratios), digits: 3, target: { op: '<=', value: 1.2 },
          note: `pairs ${pairs.map(([a, f]) => `${round(a.result.wallS, 2)} vs ${round(f.result.wallS, 2)} s`).join(', ')} (ratios ${ratios.map((r) => round(r, 3)).join(', ')}); first pair ${runs}` });
      }
      entry.noAdaptive = { states: fixed.ledger.states, wallS: round(fixed.result.wallS, 2), exitCode: fixed.result.exitCode };
    }
    if (m.runs.length > 1) entry.runs = m.runs.map((r) => ({ states: r.ledger.states, attempts: r.attempts, windowS: round(r.windowS, 2), exitCode: r.result.exitCode }));
    details.partner[key] = entry;
    charts.push({ id: key, svg: renderTimelineChart({ title: profile.title, points: m.timeline.points, reference: profile.reference }) });
  }
  await writeCharts(charts, log);
}
