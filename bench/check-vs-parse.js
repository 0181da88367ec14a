// Rate of `quote-batch check` (read + map + validate every row) against csv-parse's parse-only
// rate on the same file, in one process, rounds alternating so both see the same machine load.
//
//   npm run build && node bench/check-vs-parse.js [--rounds 3] [--rows 20000] [--case input.csv=mapping.yaml ...]
//
// Without --case it measures the 100-column lead file when bench/generate-leads.js and
// bench/mappings/leads-100.yaml exist (the target: ratio ≥ 0.70), and the 135-column sample
// export (samples/generate.mjs) with mappings/example-csv.yaml. Generated files are cached in
// bench/data/. CPU time (process.cpuUsage) is reported beside wall time because the machine is
// shared: the CPU ratio is the one to trust when the load changes between rounds.
//
// Phases per round: parse (csv-parse, columns: true), read (our input reader alone), check
// (checkInput, the code path of the `check` command). Prints JSON.
import { execFileSync } from 'node:child_process';
import { createReadStream, existsSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'csv-parse';
import { openInput } from '../dist/input/index.js';
import { checkInput, loadMapping, resolveInputOptions } from '../dist/mapping/index.js';
import { median } from './_stats.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const DATA = join(ROOT, 'bench', 'data');

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : fallback;
};
const ROUNDS = Number(option('--rounds', '3'));
const ROWS = Number(option('--rows', '20000'));

function defaultCases() {
  const cases = [];
  const leadsMapping = join(ROOT, 'bench', 'mappings', 'leads-100.yaml');
  const leadsGenerator = join(ROOT, 'bench', 'generate-leads.js');
  if (existsSync(leadsMapping) && existsSync(leadsGenerator)) {
    const name = `bench-leads-100-${ROWS}.csv`;
    if (!existsSync(join(DATA, name))) {
      execFileSync(process.execPath, [leadsGenerator, '--rows', String(ROWS), '--out', DATA, '--name', name], { stdio: ['ignore', 'ignore', 'inherit'] });
    }
    cases.push({ name: 'leads-100 (100 columns)', input: join(DATA, name), mapping: leadsMapping });
  }
  const sampleDir = join(DATA, `sample-${ROWS}`);
  const sample = join(sampleDir, 'leads.csv');
  if (!existsSync(sample)) {
    mkdirSync(sampleDir, { recursive: true });
    execFileSync(process.execPath, [join(ROOT, 'samples', 'generate.mjs'), '--rows', String(ROWS), '--out', sampleDir], { stdio: 'ignore' });
  }
  cases.push({ name: 'example-csv (135 columns)', input: sample, mapping: join(ROOT, 'mappings', 'example-csv.yaml') });
  return cases;
}

function givenCases() {
  const cases = [];
  args.forEach((arg, i) => {
    if (arg !== '--case') return;
    const [input, mapping] = (args[i + 1] ?? '').split('=');
    if (input === undefined || mapping === undefined) throw new Error('--case needs input.csv=mapping.yaml');
    cases.push({ name: input, input, mapping });
  });
  return cases;
}

/** Runs `work` and returns its rows with wall and CPU milliseconds. */
async function measure(work) {
  globalThis.gc?.();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const rows = await work();
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { rows, wallMs, cpuMs: (cpu.user + cpu.system) / 1000 };
}

async function parseOnly(file) {
  let rows = 0;
  for await (const record of createReadStream(file).pipe(parse({ columns: true, bom: true, relax_column_count: true }))) {
    if (record !== undefined) rows += 1;
  }
  return rows;
}

async function readOnly(file, mapping) {
  const reader = await openInput(file, resolveInputOptions(file, mapping));
  let rows = 0;
  for await (const item of reader) if (item !== undefined) rows += 1;
  return rows;
}

async function checkAll(file, mapping) {
  const summary = await checkInput(file, mapping, {});
  return summary.rows;
}


async function runCase(c) {
  const mapping = await loadMapping(c.mapping);
  const phases = { parse: [], read: [], check: [] };
  // One untimed pass of each warms the JIT and the file cache.
  await parseOnly(c.input);
  await checkAll(c.input, mapping);
  for (let round = 0; round < ROUNDS; round += 1) {
    phases.parse.push(await measure(() => parseOnly(c.input)));
    phases.read.push(await measure(() => readOnly(c.input, mapping)));
    phases.check.push(await measure(() => checkAll(c.input, mapping)));
  }
  const summary = {};
  for (const [name, runs] of Object.entries(phases)) {
    const rows = runs[0].rows;
    summary[name] = {
      rows,
      usPerRowCpu: round1(median(runs.map((r) => (r.cpuMs * 1000) / r.rows))),
      usPerRowWall: round1(median(runs.map((r) => (r.wallMs * 1000) / r.rows))),
      rowsPerSecCpu: Math.round(median(runs.map((r) => (r.rows * 1000) / r.cpuMs))),
      rowsPerSecWall: Math.round(median(runs.map((r) => (r.rows * 1000) / r.wallMs))),
    };
  }
  // Per round, then the median: both phases of a round ran under the same load.
  const ratio = (key) => round3(median(phases.check.map((r, i) => phases.parse[i][key] / r[key])));
  return {
    case: c.name,
    input: c.input,
    mapping: c.mapping,
    rounds: ROUNDS,
    ...summary,
    mapValidateUsPerRowCpu: round1(summary.check.usPerRowCpu - summary.read.usPerRowCpu),
    checkToParseRatioCpu: ratio('cpuMs'),
    checkToParseRatioWall: ratio('wallMs'),
  };
}

const round1 = (x) => Math.round(x * 10) / 10;
const round3 = (x) => Math.round(x * 1000) / 1000;

const cases = givenCases();
const results = [];
for (const c of cases.length > 0 ? cases : defaultCases()) results.push(await runCase(c));
process.stdout.write(`${JSON.stringify({ node: process.version, results }, null, 2)}\n`);
