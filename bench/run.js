#!/usr/bin/env node
// The benchmark suite of quote-batch (`npm run bench` = build, then this script).
//
//   node bench/run.js [--quick] [--only latency,cpu,offline,memory,resume,agents,partner,workers] [--out file.json]
//
// Generates 100-column lead files (bench/generate-leads.js; cached in bench/data/, gitignored) of
// three sizes — 10k, 100k and 1M rows (--quick: 2k, 20k, 100k) — and measures, every quote-batch
// command as its own process (`node bin/quote-batch.js …`, timed by GNU time: wall, CPU, peak RSS)
// against the sandbox in another process (`quote-batch sandbox`, fresh for each scenario):
//
//   latency  run, concurrency 32, sandbox latency 50 ms: rows/s against the ceiling 32/0.05 = 640
//   cpu      run, concurrency 64, no latency: rows/s and CPU per row, beside bench/got-loop.js
//            (bare got, the same bodies, the same concurrency) run before and after it
//   offline  check: rows/s beside csv-parse alone (bench/parse-only.js), same file, median of interleaved rounds
//   memory   peak RSS of check over the large file and over the medium one; peak RSS of run over
//            the large file (bounded by a time cap: the rows it got through are reported) and its
//            RSS when it had recorded `medium` rows vs at the end
//   resume   a job of the medium file left 90% done (run --limit), then the resuming run: rows
//            skipped per second until its first quote request
//   agents   agent validation calls per distinct agent e-mail (from the sandbox's counters)
//   partner  adaptive concurrency against a partner that limits us: an unknown rate cap, a cap
//            that drops, a worker pool with a queue, no limit (bench/partner.js; charts of each
//            run's timeline in bench/results/partner-*.svg and .png)
//   workers  1, 2 and 4 workers on one job with the PostgreSQL ledger against a 40/s cap and a
//            partner of capacity 16 × 200 ms; one worker on SQLite beside one on PostgreSQL
//            (bench/workers.js)
//
// Prints a table (figure, value, target, met?) and writes bench/results/latest.json (a full run
// of every scenario) or bench/data/results-<mode>.json (--quick / --only), with the machine's
// description and load average: the machine may be shared, so read ratios measured in one run.
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { loadavg } from 'node:os';
import { join, relative } from 'node:path';
import {
  BIN, ROOT, createRowProbe, createTempDir, describeMachine, measureNode, readLedger, round, startSandbox,
} from './_lib.js';
import { generateLeads, writeAgentsFile } from './generate-leads.js';
import { benchPartner } from './partner.js';
import { benchWorkers } from './workers.js';
import { median } from './_stats.js';

const SCENARIOS = ['latency', 'cpu', 'offline', 'memory', 'resume', 'agents', 'partner', 'workers'];
const args = process.argv.slice(2);
const option = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const QUICK = args.includes('--quick');
const ONLY = option('--only')?.split(',').map((s) => s.trim()).filter(Boolean);
for (const name of ONLY ?? []) {
  if (!SCENARIOS.includes(name)) throw new Error(`unknown scenario "${name}" (known: ${SCENARIOS.join(', ')})`);
}
const selected = (name) => ONLY === undefined || ONLY.includes(name);

const DATA = join(ROOT, 'bench', 'data');
const MAPPING = join(ROOT, 'bench', 'mappings', 'leads-100.yaml');
const AGENTS = join(DATA, 'agents.csv');
const SIZES = QUICK ? { small: 2_000, medium: 20_000, large: 100_000 } : { small: 10_000, medium: 100_000, large: 1_000_000 };
/** Rows of the CPU-bound comparison (the first rows of the medium file). */
const CPU_ROWS = QUICK ? 5_000 : 20_000;
/** Time caps in seconds: a slow build must not stall the suite; a capped figure says so. */
const CAP = QUICK
  ? { latency: 120, cpu: 150, check: 300, memoryRun: 90, resumePrep: 180, resume: 180 }
  : { latency: 180, cpu: 180, check: 900, memoryRun: 300, resumePrep: 300, resume: 120 };
const LATENCY = { concurrency: 32, latencyMs: 50 };
const CPU_CONCURRENCY = 64;
const SEED = 20260314;

const log = (message) => process.stderr.write(`[bench] ${message}\n`);
const seconds = (s) => `${s.toFixed(1)} s`;
const mb = (value) => `${round(value, 1)} MB`;

// ------------------------------------------------------------------------------------------------
// Data

function generatorVersion() {
  return createHash('sha256').update(readFileSync(join(ROOT, 'bench', 'generate-leads.js'))).digest('hex').slice(0, 12);
}

/** The lead file of `rows` rows, generated once per generator version and kept in bench/data/. */
async function ensureLeads(rows) {
  const file = join(DATA, `leads-${rows}.csv`);
  const metaFile = `${file}.meta.json`;
  const meta = { rows, seed: SEED, generator: generatorVersion() };
  if (existsSync(file) && existsSync(metaFile) && readFileSync(metaFile, 'utf8') === JSON.stringify(meta)) return file;
  log(`generating ${relative(ROOT, file)} (${rows} rows)…`);
  const t0 = performance.now();
  await generateLeads({ rows, file, seed: SEED });
  writeFileSync(metaFile, JSON.stringify(meta));
  log(`  done in ${seconds((performance.now() - t0) / 1000)} (${mb(statSync(file).size / 2 ** 20)})`);
  return file;
}

/**
 * A fingerprint of dist/ (names, sizes, modification times): the suite measures whatever is built,
 * and on a shared checkout a rebuild during the suite would mix two versions in one results file.
 */
function fingerprintDist() {
  const hash = createHash('sha256');
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.js')) {
        const stat = statSync(path);
        hash.update(`${relative(ROOT, path)} ${stat.size} ${stat.mtimeMs}\n`);
      }
    }
  };
  walk(join(ROOT, 'dist'));
  return hash.digest('hex').slice(0, 12);
}

// ------------------------------------------------------------------------------------------------
// Measuring

const figures = [];
const details = {};

/** Records one figure of the table; `target` is `{ op: '>=' | '<=' | '==', value }` or undefined. */
function addFigure({ id, label, value, unit = '', digits = 0, target, note }) {
  const met = target === undefined || value === null || value === undefined ? null
    : target.op === '>=' ? value >= target.value
      : target.op === '<=' ? value <= target.value
        : value === target.value;
  figures.push({ id, label, value: value === null || value === undefined ? null : round(value, digits), unit, target, met, note });
}

/** `quote-batch run` against the sandbox process at `baseUrl` (--quiet: no progress output). */
function runArgs(file, ledger, baseUrl, concurrency, extra = ['--quiet']) {
  return [BIN, 'run', file, '--mapping', MAPPING, '--env', 'sandbox', '--base-url', baseUrl, '--ledger', ledger,
    '--concurrency', String(concurrency), ...extra];
}

/** Rows that reached a final state (not pending / in flight). */
const finalRows = (ledger) => ledger.rows - (ledger.states.pending ?? 0) - (ledger.states.in_flight ?? 0);

/** The quote attempts of one run: count and window (first start → last end), in ms since the epoch. */
function quoteWindow(ledger, runId) {
  const w = ledger.windows.find((x) => x.run_id === runId && x.kind === 'quote');
  if (w === undefined) return undefined;
  const first = Date.parse(w.first_start);
  return { quotes: w.n, firstStartMs: first, lastEndMs: w.last_end_ms, seconds: (w.last_end_ms - first) / 1000 };
}

function summarizeProcess(result) {
  return {
    exitCode: result.exitCode,
    timedOut: result.timedOut,
    wallS: round(result.wallS, 2),
    cpuS: round(result.cpuS, 2),
    peakRssMb: round(result.peakRssMb, 1),
    measuredWith: result.measuredWith,
    stderrTail: result.stderr.trim().split('\n').slice(-3).join('\n') || undefined,
  };
}

function parseJsonLine(text, what) {
  try {
    return JSON.parse(text.trim().split('\n').at(-1));
  } catch {
    throw new Error(`${what} printed no JSON result:\n${text}`);
  }
}

const agentRuns = [];

async function withSandbox(options, work) {
  const sandbox = await startSandbox({ agentsFile: AGENTS, ...options });
  try {
    return await work(sandbox);
  } finally {
    await sandbox.stop();
  }
}

// ------------------------------------------------------------------------------------------------
// Scenarios

async function benchLatency(files) {
  const ceiling = LATENCY.concurrency / (LATENCY.latencyMs / 1000);
  const dir = createTempDir('qb-bench-latency-');
  try {
    await withSandbox({ latencyMs: LATENCY.latencyMs }, async (sandbox) => {
      log(`latency: run ${SIZES.small} rows, concurrency ${LATENCY.concurrency}, sandbox latency ${LATENCY.latencyMs} ms…`);
      const ledgerFile = join(dir, 'ledger.db');
      const result = await measureNode(runArgs(files.small, ledgerFile, sandbox.url, LATENCY.concurrency), {
        timeoutS: CAP.latency,
      });
      const ledger = readLedger(ledgerFile);
      const stats = await sandbox.stats();
      const rows = finalRows(ledger);
      const window = quoteWindow(ledger, ledger.runs.at(-1).id);
      const rate = rows / result.wallS;
      const steady = window ? window.quotes / window.seconds : null;
      agentRuns.push({ scenario: 'latency', validateCalls: stats.operations.validate.received, distinctEmails: ledger.distinctAgents });
      // The same rows through the bare got loop at the same concurrency: how near the ceiling a
      // client with no ledger, mapping or validation gets on this machine.
      log(`latency: bare got loop, ${rows} requests, concurrency ${LATENCY.concurrency}…`);
      const bare = await measureNode(
        [join(ROOT, 'bench', 'got-loop.js'), files.small, '--mapping', MAPPING, '--base-url', sandbox.url, '--agents', AGENTS,
          '--limit', String(rows), '--concurrency', String(LATENCY.concurrency)],
        { timeoutS: CAP.latency },
      );
      const bareOut = parseJsonLine(bare.stdout, 'bench/got-loop.js');
      const bareRate = bareOut.requests / bareOut.seconds;
      details.latency = {
        gotLoop: { rowsPerS: round(bareRate, 1), ratioToCeiling: round(bareRate / ceiling, 3), cpuMsPerRequest: round((bareOut.cpuSeconds / bareOut.requests) * 1000, 3) },
        rows, states: ledger.states, ceilingRowsPerS: ceiling, ...LATENCY,
        endToEndRowsPerS: round(rate, 1), sendingPhaseRowsPerS: round(steady, 1), sendingPhaseS: round(window?.seconds, 2),
        process: summarizeProcess(result), sandbox: stats.operations,
      };
      addFigure({
        id: 'latency.ratio', label: `latency-bound: rows/s ÷ ceiling ${ceiling} (c=${LATENCY.concurrency}, ${LATENCY.latencyMs} ms)`,
        value: rate / ceiling, digits: 3, target: { op: '>=', value: 0.9 },
        note: `${round(rate, 1)} rows/s over ${rows} rows, process start to exit${result.timedOut ? ' (time cap hit)' : ''}; sending phase alone ${round(steady, 1)} rows/s; ` +
          `bare got loop, same rows and concurrency: ${round(bareRate, 1)} rows/s = ${round(bareRate / ceiling, 3)} of the ceiling`,
      });
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function benchCpu(files) {
  const dir = createTempDir('qb-bench-cpu-');
  try {
    await withSandbox({}, async (sandbox) => {
      const gotLoop = async (label) => {
        log(`cpu: bare got loop (${label}), ${CPU_ROWS} requests, concurrency ${CPU_CONCURRENCY}…`);
        const sandboxCpu0 = sandbox.cpuSeconds();
        const result = await measureNode(
          [join(ROOT, 'bench', 'got-loop.js'), files.medium, '--mapping', MAPPING, '--base-url', sandbox.url, '--agents', AGENTS,
            '--limit', String(CPU_ROWS), '--concurrency', String(CPU_CONCURRENCY)],
          { timeoutS: CAP.cpu },
        );
        const out = parseJsonLine(result.stdout, 'bench/got-loop.js');
        if (out.statuses['200'] !== out.requests) throw new Error(`got loop: not every request succeeded: ${JSON.stringify(out)}`);
        return {
          requests: out.requests, sendSeconds: round(out.seconds, 2), rowsPerS: round(out.requests / out.seconds, 1),
          cpuMsPerRequest: round((out.cpuSeconds / out.requests) * 1000, 3),
          sandboxCpuCores: round((sandbox.cpuSeconds() - sandboxCpu0) / result.wallS, 2),
          process: summarizeProcess(result),
        };
      };
      const before = await gotLoop('before');
      await sandbox.reset();

      log(`cpu: quote-batch run, first ${CPU_ROWS} rows of ${SIZES.medium}, concurrency ${CPU_CONCURRENCY}, no latency…`);
      const ledgerFile = join(dir, 'ledger.db');
      const sandboxCpu0 = sandbox.cpuSeconds();
      const result = await measureNode(
        runArgs(files.medium, ledgerFile, sandbox.url, CPU_CONCURRENCY, ['--quiet', '--limit', String(CPU_ROWS)]),
        { timeoutS: CAP.cpu },
      );
      const sandboxCores = (sandbox.cpuSeconds() - sandboxCpu0) / result.wallS;
      const ledger = readLedger(ledgerFile);
      const stats = await sandbox.stats();
      agentRuns.push({ scenario: 'cpu', validateCalls: stats.operations.validate.received, distinctEmails: ledger.distinctAgents });
      const rows = finalRows(ledger);
      const window = quoteWindow(ledger, ledger.runs.at(-1).id);
      const rate = rows / result.wallS;
      await sandbox.reset();
      const after = await gotLoop('after');

      const gotRate = (before.rowsPerS + after.rowsPerS) / 2;
      const gotCpuMs = (before.cpuMsPerRequest + after.cpuMsPerRequest) / 2;
      const cpuMsPerRow = (result.cpuS / rows) * 1000;
      details.cpu = {
        rows, states: ledger.states, concurrency: CPU_CONCURRENCY,
        quoteBatch: {
          endToEndRowsPerS: round(rate, 1), sendingPhaseRowsPerS: round(window ? window.quotes / window.seconds : null, 1),
          cpuMsPerRow: round(cpuMsPerRow, 3), sandboxCpuCores: round(sandboxCores, 2), process: summarizeProcess(result),
        },
        gotLoop: { before, after, meanRowsPerS: round(gotRate, 1), meanCpuMsPerRequest: round(gotCpuMs, 3) },
        sandbox: stats.operations,
      };
      addFigure({
        id: 'cpu.ratio', label: `CPU-bound: quote-batch rows/s ÷ bare got loop (c=${CPU_CONCURRENCY}, no latency)`,
        value: rate / gotRate, digits: 3, target: { op: '>=', value: 0.6 },
        note: `${round(rate, 1)} vs ${round(gotRate, 1)} rows/s over ${rows} rows${result.timedOut ? ' (time cap hit)' : ''}; quote-batch: process start to exit, got: send loop only (mean of a run before and after)`,
      });
      addFigure({
        id: 'cpu.quoteBatchCpuMsPerRow', label: 'CPU-bound: quote-batch CPU per row (user+sys, whole process)',
        value: cpuMsPerRow, unit: 'ms', digits: 3, note: `bare got loop: ${round(gotCpuMs, 3)} ms per request (send loop only)`,
      });
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function measureCheck(file, rows, timeoutS) {
  const result = await measureNode([BIN, 'check', file, '--mapping', MAPPING], { timeoutS });
  const match = /(\d[\d,]*) rows in/.exec(result.stdout);
  const checked = match ? Number(match[1].replaceAll(',', '')) : null;
  if (!result.timedOut && checked !== rows) throw new Error(`check reported ${checked} rows, expected ${rows}:\n${result.stdout}\n${result.stderr}`);
  if (!result.timedOut && result.exitCode !== 0) throw new Error(`check exited ${result.exitCode} (every row should be valid):\n${result.stdout}`);
  return { rows: checked, rowsPerS: checked === null ? null : round(checked / result.wallS, 1), cpuUsPerRow: checked ? round((result.cpuS / checked) * 1e6, 1) : null, process: summarizeProcess(result), result };
}

async function measureParse(file, mode) {
  const result = await measureNode([join(ROOT, 'bench', 'parse-only.js'), file, '--records', mode]);
  const out = parseJsonLine(result.stdout, 'bench/parse-only.js');
  return { records: out.records, rowsPerS: round(out.records / result.wallS, 1), cpuUsPerRow: round((result.cpuS / out.records) * 1e6, 1), process: summarizeProcess(result) };
}

let mediumCheck;

/** Rounds of (parse-only, check) in the offline scenario: the machine is shared, so rounds alternate. */
const OFFLINE_ROUNDS = QUICK ? 2 : 3;


async function benchOffline(files) {
  const parses = [];
  const checks = [];
  for (let n = 1; n <= OFFLINE_ROUNDS; n += 1) {
    log(`offline ${n}/${OFFLINE_ROUNDS}: csv-parse alone (records as objects) over ${SIZES.medium} rows…`);
    parses.push(await measureParse(files.medium, 'objects'));
    log(`offline ${n}/${OFFLINE_ROUNDS}: quote-batch check over ${SIZES.medium} rows…`);
    checks.push(await measureCheck(files.medium, SIZES.medium, CAP.check));
  }
  log('offline: csv-parse alone, records as arrays…');
  const parseArrays = await measureParse(files.medium, 'arrays');
  // The memory scenario compares against this run's RSS: the first, not a chosen one.
  mediumCheck = checks[0];
  const perRound = checks.map((c, i) => round(c.rowsPerS / parses[i].rowsPerS, 3));
  const perRoundCpu = checks.map((c, i) => round(parses[i].cpuUsPerRow / c.cpuUsPerRow, 3));
  const ratio = median(perRound);
  const best = round(Math.max(...checks.map((c) => c.rowsPerS)) / Math.max(...parses.map((p) => p.rowsPerS)), 3);
  details.offline = {
    rows: SIZES.medium, rounds: OFFLINE_ROUNDS,
    checks: checks.map((c) => ({ ...c, result: undefined })), parseOnlyObjects: parses, parseOnlyArrays: parseArrays,
    ratioWall: ratio, ratioWallPerRound: perRound, ratioWallBestOfEach: best,
    ratioCpu: median(perRoundCpu), ratioCpuPerRound: perRoundCpu,
    ratioWallVsArrays: round(median(checks.map((c) => c.rowsPerS)) / parseArrays.rowsPerS, 3),
  };
  addFigure({
    id: 'offline.ratio', label: 'offline: check rows/s ÷ csv-parse parse-only rows/s',
    value: ratio, digits: 3, target: { op: '>=', value: 0.7 },
    note: `median of ${OFFLINE_ROUNDS} interleaved rounds over ${SIZES.medium} rows (whole processes; csv-parse columns: true): ` +
      `per round ${perRound.join(', ')}; best of each ${best}; by CPU per row ${details.offline.ratioCpu}; vs csv-parse arrays ${details.offline.ratioWallVsArrays}`,
  });
}

async function benchMemory(files) {
  log(`memory: quote-batch check over ${SIZES.large} rows…`);
  const large = await measureCheck(files.large, SIZES.large, CAP.check);
  if (mediumCheck === undefined) {
    log(`memory: quote-batch check over ${SIZES.medium} rows…`);
    mediumCheck = await measureCheck(files.medium, SIZES.medium, CAP.check);
  }
  details.memoryCheck = {
    large: { ...large, result: undefined }, medium: { ...mediumCheck, result: undefined },
    rssSamplesLarge: large.result.samples.filter((_, i) => i % 10 === 0),
  };
  addFigure({
    id: 'memory.checkPeakRssMb', label: `memory: check peak RSS over ${SIZES.large} rows`,
    value: large.result.peakRssMb, unit: 'MB', digits: 1, target: { op: '<=', value: 200 },
    note: `${large.rowsPerS} rows/s${large.result.timedOut ? ' (time cap hit: not every row read)' : ''}`,
  });
  addFigure({
    id: 'memory.checkGrowth', label: `memory: check peak RSS ${SIZES.large} rows ÷ ${SIZES.medium} rows`,
    value: large.result.peakRssMb / mediumCheck.result.peakRssMb, digits: 3, target: { op: '<=', value: 1.25 },
    note: `${mb(large.result.peakRssMb)} vs ${mb(mediumCheck.result.peakRssMb)}`,
  });

  const dir = createTempDir('qb-bench-memory-');
  try {
    await withSandbox({}, async (sandbox) => {
      log(`memory: quote-batch run over the ${SIZES.large}-row file, concurrency ${CPU_CONCURRENCY}, no latency, stopped after ${CAP.memoryRun} s at most…`);
      const ledgerFile = join(dir, 'ledger.db');
      const probe = createRowProbe(ledgerFile);
      const result = await measureNode(runArgs(files.large, ledgerFile, sandbox.url, CPU_CONCURRENCY), {
        timeoutS: CAP.memoryRun, sampleMs: 1000, probe,
      });
      const ledger = readLedger(ledgerFile);
      const rows = finalRows(ledger);
      const mark = SIZES.medium;
      const atMark = result.samples.find((s) => s.probe !== null && s.probe !== undefined && s.probe >= mark);
      details.memoryRun = {
        rowsRecorded: ledger.rows, rowsFinal: rows, states: ledger.states, rowsPerS: round(rows / result.wallS, 1),
        ledgerMb: round(statSync(ledgerFile).size / 2 ** 20, 1), process: summarizeProcess(result),
        peakRssMbAtMark: atMark?.peakMb ?? null, markRows: mark,
        rssSamples: result.samples.filter((_, i) => i % 5 === 0),
      };
      const portion = rows >= SIZES.large ? `all ${SIZES.large} rows` : `the first ${rows} of ${SIZES.large} rows (stopped by the ${CAP.memoryRun} s cap)`;
      addFigure({
        id: 'memory.runPeakRssMb', label: 'memory: run peak RSS over the large file',
        value: result.peakRssMb, unit: 'MB', digits: 1, target: { op: '<=', value: 200 }, note: portion,
      });
      addFigure({
        id: 'memory.runGrowth', label: `memory: run peak RSS at the end ÷ when ${mark} rows were recorded`,
        value: atMark ? result.peakRssMb / atMark.peakMb : null, digits: 3, target: { op: '<=', value: 1.25 },
        note: atMark ? `${mb(result.peakRssMb)} after ${rows} rows vs ${mb(atMark.peakMb)} at ${atMark.probe} rows` : `the run did not reach ${mark} rows within the cap (${rows} rows)`,
      });
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function benchResume(files) {
  const dir = createTempDir('qb-bench-resume-');
  const prepRows = Math.round(SIZES.medium * 0.9);
  try {
    await withSandbox({}, async (sandbox) => {
      const ledgerFile = join(dir, 'ledger.db');
      log(`resume: preparing a job of ${SIZES.medium} rows, ${prepRows} of them done (run --limit ${prepRows})…`);
      const prep = await measureNode(runArgs(files.medium, ledgerFile, sandbox.url, CPU_CONCURRENCY, ['--quiet', '--limit', String(prepRows)]), { timeoutS: CAP.resumePrep });
      const before = readLedger(ledgerFile);
      const done = finalRows(before);

      log(`resume: resuming (${done} rows already final)…`);
      // --json-log (not --quiet): its "skipping rows … (reading from line N)" line says whether it seeked.
      const result = await measureNode(runArgs(files.medium, ledgerFile, sandbox.url, CPU_CONCURRENCY, ['--json-log']), { timeoutS: CAP.resume });
      const after = readLedger(ledgerFile);
      const run = after.runs.at(-1);
      const window = quoteWindow(after, run.id);
      const toFirstSendS = window ? (window.firstStartMs - result.startedAt) / 1000 : null;

      // Only a completed job gives a no-op rerun: start-up, job identity (hash of the input), ledger.
      let again;
      if (after.job.status === 'completed') {
        log('resume: running the completed job again (the fixed cost: start-up, job identity, ledger)…');
        again = await measureNode(runArgs(files.medium, ledgerFile, sandbox.url, CPU_CONCURRENCY), { timeoutS: 120 });
      }
      const stats = await sandbox.stats();
      const skipRate = toFirstSendS ? done / toFirstSendS : null;
      const netS = toFirstSendS === null || again === undefined ? null : toFirstSendS - again.wallS;
      const seekLine = /skipping rows[^"\n]*/.exec(result.stderr)?.[0] ?? null;
      details.resume = {
        rows: SIZES.medium, prepLimit: prepRows, doneBeforeResume: done, statesBeforeResume: before.states,
        prep: { ...summarizeProcess(prep), rowsPerS: round(done / prep.wallS, 1) },
        resume: { ...summarizeProcess(result), timeToFirstSendS: round(toFirstSendS, 3), sentInResume: window?.quotes ?? 0, sendingPhaseS: round(window?.seconds, 2), statesAfter: after.states, jobStatus: after.job.status },
        completedJobRerun: again === undefined ? null : summarizeProcess(again),
        resumeLog: seekLine, usedByteOffset: seekLine !== null && /reading from line/.test(seekLine),
        validateCallsAcrossTheThreeRuns: stats.operations.validate.received,
        skipRowsPerS: round(skipRate, 0), skipRowsPerSNetOfFixedCost: netS !== null && netS > 0 ? round(done / netS, 0) : null,
      };
      addFigure({
        id: 'resume.skipRowsPerS', label: `resume: rows skipped per second (${done} done rows of ${SIZES.medium})`,
        value: skipRate, unit: 'rows/s', target: { op: '>=', value: 50_000 },
        note: toFirstSendS === null ? 'the resumed run sent nothing'
          : `${round(toFirstSendS, 2)} s from process start to the first quote of the remaining rows` +
            `${details.resume.usedByteOffset ? ' (resumed by byte offset)' : ''}` +
            (again === undefined ? `; the job did not complete within the ${CAP.resume} s cap` : `; a no-op rerun of the completed job takes ${round(again.wallS, 2)} s`) +
            (prep.timedOut ? `; preparing stopped at the ${CAP.resumePrep} s cap, so ${done} rows (not ${prepRows}) were done` : ''),
      });
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function benchAgents(files) {
  if (agentRuns.length === 0) {
    const dir = createTempDir('qb-bench-agents-');
    try {
      await withSandbox({}, async (sandbox) => {
        log(`agents: run ${SIZES.small} rows…`);
        const ledgerFile = join(dir, 'ledger.db');
        await measureNode(runArgs(files.small, ledgerFile, sandbox.url, CPU_CONCURRENCY), { timeoutS: CAP.cpu });
        const ledger = readLedger(ledgerFile);
        const stats = await sandbox.stats();
        agentRuns.push({ scenario: 'agents', validateCalls: stats.operations.validate.received, distinctEmails: ledger.distinctAgents });
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const ratios = agentRuns.map((r) => r.validateCalls / r.distinctEmails);
  const worst = ratios.reduce((a, b) => (Math.abs(b - 1) > Math.abs(a - 1) ? b : a), 1);
  details.agents = { runs: agentRuns };
  addFigure({
    id: 'agents.callsPerEmail', label: 'agents: validation calls per distinct agent e-mail',
    value: worst, digits: 3, target: { op: '==', value: 1 },
    note: agentRuns.map((r) => `${r.scenario}: ${r.validateCalls} calls / ${r.distinctEmails} e-mails`).join('; '),
  });
}

// ------------------------------------------------------------------------------------------------

function formatValue(f) {
  if (f.value === null) return 'n/a';
  return `${f.value.toLocaleString('en-US')}${f.unit ? ` ${f.unit}` : ''}`;
}

function printTable() {
  const rows = figures.map((f) => [
    f.label, formatValue(f), f.target ? `${f.target.op} ${f.target.value.toLocaleString('en-US')}` : '', f.met === null ? '' : f.met ? 'yes' : 'NO',
  ]);
  const head = ['figure', 'value', 'target', 'met?'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells) => cells.map((c, i) => (i === 1 ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ').trimEnd();
  console.log(line(head));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) console.log(line(r));
  console.log('');
  for (const f of figures) if (f.note) console.log(`  ${f.id}: ${f.note}`);
}

async function main() {
  const startedAt = new Date();
  const machine = describeMachine();
  if (machine.loadAverageAtStart[0] > 0.5) {
    log(`note: load average ${machine.loadAverageAtStart[0]} at start: other processes share the ${machine.cpus} CPUs; compare ratios, not absolute rates`);
  }
  mkdirSync(DATA, { recursive: true });
  writeAgentsFile(AGENTS);
  const files = {};
  for (const [name, rows] of Object.entries(SIZES)) {
    const needed = name === 'small' ? selected('latency') || selected('partner') || (selected('agents') && !selected('cpu'))
      : name === 'medium' && selected('workers') ? true
      : name === 'medium' ? selected('cpu') || selected('offline') || selected('memory') || selected('resume')
        : selected('memory');
    if (needed) files[name] = await ensureLeads(rows);
  }

  const distBuilds = [];
  const steps = {
    latency: benchLatency, cpu: benchCpu, offline: benchOffline, memory: benchMemory, resume: benchResume, agents: benchAgents,
    partner: (files) => benchPartner({ file: files.small, agentsFile: AGENTS, quick: QUICK, addFigure, details, log }),
    workers: (files) => benchWorkers({ file: files.medium, agentsFile: AGENTS, quick: QUICK, addFigure, details, log }),
  };
  for (const name of SCENARIOS) {
    if (!selected(name)) continue;
    const t0 = performance.now();
    const before = fingerprintDist();
    await steps[name](files);
    const after = fingerprintDist();
    distBuilds.push({ scenario: name, before, after });
    if (before !== after) log(`warning: dist/ was rebuilt during the ${name} scenario: its figures may mix two builds`);
    log(`${name}: ${seconds((performance.now() - t0) / 1000)}`);
  }
  const builds = new Set(distBuilds.flatMap((b) => [b.before, b.after]));

  const finishedAt = new Date();
  const results = {
    benchmark: 'quote-batch bench/run.js',
    mode: QUICK ? 'quick' : 'full',
    scenarios: ONLY ?? SCENARIOS,
    startedAt: startedAt.toISOString(),
    durationS: round((finishedAt - startedAt) / 1000, 1),
    machine: { ...machine, loadAverageAtEnd: loadavg().map((n) => round(n, 2)) },
    sizes: SIZES,
    inputColumns: 100,
    // One fingerprint means every scenario measured the same build of dist/.
    distBuilds: builds.size === 1 ? [...builds] : distBuilds,
    figures,
    details,
  };
  const out = option('--out') ?? (QUICK || ONLY !== undefined
    ? join(DATA, `results-${QUICK ? 'quick' : 'full'}${ONLY ? `-${ONLY.join('-')}` : ''}.json`)
    : join(ROOT, 'bench', 'results', 'latest.json'));
  mkdirSync(join(out, '..'), { recursive: true });
  writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`);

  console.log('');
  console.log(`quote-batch benchmarks (${results.mode}; ${machine.cpus}× ${machine.cpuModel}, ${machine.memoryTotalMb} MB, node ${machine.node}, ` +
    `load ${machine.loadAverageAtStart[0]} → ${results.machine.loadAverageAtEnd[0]}, ${seconds(results.durationS)})`);
  printTable();
  if (builds.size > 1) console.log('\nwarning: dist/ changed during the suite (see distBuilds in the results): the figures mix builds');
  console.log(`\nwrote ${relative(ROOT, out)}`);
  if (figures.some((f) => f.met === false)) process.exitCode = 1;
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 2;
});
