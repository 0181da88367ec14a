#!/usr/bin/env node
// Writes a realistic 100-column lead export for the benchmarks, plus the matching agents file:
//
//   node bench/generate-leads.js --rows 100000 [--out bench/data] [--name leads-100k.csv] [--seed 7]
//
// Layout (exactly 100 columns): 22 lead-level columns, 2 drivers × 27 columns (incl. 2 incidents
// each), 2 vehicles × 12 columns. Every row is valid against bench/mappings/leads-100.yaml and is
// accepted by the sandbox (supported states, eligible vehicles); click ids are unique; agent
// e-mails come from a fixed pool of 20 (all known to the sandbox through the agents file written
// beside the leads). Optional groups are present in realistic shares (driver 2 in ~55% of rows,
// vehicle 2 in ~45%, incidents in ~25% of drivers), so the mapper sees both present and empty groups.
//
// Deterministic (seeded). Streams its output, so 1M rows (~0.75 GB) need little memory.
// Made-up people only: names from short lists, phones in 555-01xx, e-mails at example.com,
// IPs in documentation ranges.
import { createWriteStream, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
// The sandbox's seeded PRNG (mulberry32); bench scripts run after `npm run build`.
import { createRandom } from '../dist/sandbox/faults.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

export const AGENT_COUNT = 20;
const FIRST = ['James', 'Robert', 'Miguel', 'Wei', 'Daniel', 'Omar', 'Liam', 'Noah', 'Maria', 'Linda', 'Aisha', 'Sofia',
  'Emma', 'Olivia', 'Grace', 'Hana'];
const MIDDLE = ['A', 'J', 'Lee', 'Marie', 'R', ''];
const LAST = ['Testerson', 'Sampleton', 'Fakeman', 'Doe', 'Roe', 'Placeholder', 'Exampleton', 'Mockridge', 'Dummer', 'Benchley'];
const PLACES = [
  ['TX', 'Austin', '787'], ['OH', 'Columbus', '432'], ['GA', 'Atlanta', '303'], ['NC', 'Raleigh', '276'],
  ['AZ', 'Phoenix', '850'], ['CO', 'Denver', '802'], ['PA', 'Pittsburgh', '152'], ['IL', 'Springfield', '627'],
  ['FL', 'Tampa', '336'], ['MI', 'Lansing', '489'], ['WA', 'Spokane', '992'], ['TN', 'Nashville', '372'],
];
const STREETS = ['Maple Ave', 'Oak St', 'Elm Dr', 'Cedar Ln', 'Birch Rd', 'Pine Ct', 'Willow Way', 'Aspen Pl'];
const CARS = [['Toyota', 'Camry'], ['Honda', 'Civic'], ['Ford', 'F-150'], ['Chevrolet', 'Malibu'], ['Subaru', 'Outback'],
  ['Hyundai', 'Elantra'], ['Nissan', 'Rogue'], ['Kia', 'Soul'], ['Mazda', 'CX-5'], ['Jeep', 'Wrangler']];
const CARRIERS = ['Sample Mutual', 'Example Casualty', 'Placeholder Insurance Co', ''];
const OCCUPATIONS = [['010', 'Engineer'], ['020', 'Teacher'], ['110', 'Nurse'], ['200', 'Clerk'], ['310', 'Driver'], ['999', 'Other']];
const VIN_CHARS = 'ABCDEFGHJKLMNPRSTUVWXYZ0123456789';
const USER_AGENTS = ['Mozilla/5.0 (Windows NT 10.0; Win64; x64)', 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X)',
  'Mozilla/5.0 (X11; Linux x86_64)'];

export const LEAD_COLUMNS = [
  'lead_id', 'click_id', 'created_at', 'agent_email', 'address_line_1', 'address_line_2', 'city', 'state', 'zip',
  'residence_type', 'residence_months', 'effective_date', 'bi_limits', 'pd_limit', 'med_pay', 'tcpa_consent',
  'consent_ip', 'user_agent', 'traffic_source', 'campaign_id', 'landing_url', 'lead_price',
];
export const DRIVER_FIELDS = [
  'first_name', 'middle_name', 'last_name', 'dob', 'gender', 'marital', 'relation', 'phone', 'email', 'education',
  'credit_rating', 'occupation_code', 'occupation_desc', 'license_id', 'license_state', 'license_status',
  'years_licensed', 'good_student', 'driver_training', 'prior_carrier', 'prior_bi',
  'incident1_code', 'incident1_date', 'incident1_at_fault', 'incident2_code', 'incident2_date', 'incident2_at_fault',
];
export const VEHICLE_FIELDS = ['vin', 'year', 'make', 'model', 'use', 'annual_miles', 'ownership', 'ownership_months',
  'rideshare', 'coll_ded', 'comp_ded', 'tow'];
export const DRIVERS = 2;
export const VEHICLES = 2;

export const HEADER = [
  ...LEAD_COLUMNS,
  ...Array.from({ length: DRIVERS }, (_, i) => DRIVER_FIELDS.map((f) => `driver${i + 1}_${f}`)).flat(),
  ...Array.from({ length: VEHICLES }, (_, i) => VEHICLE_FIELDS.map((f) => `vehicle${i + 1}_${f}`)).flat(),
];
if (HEADER.length !== 100) throw new Error(`the bench layout must have 100 columns, has ${HEADER.length}`);

/** The pool of agent e-mails (all known and eligible in the agents file). */
export const AGENT_EMAILS = Array.from({ length: AGENT_COUNT }, (_, i) => `bench.agent${String(i + 1).padStart(2, '0')}@example.com`);


const pad = (n, w = 2) => String(n).padStart(w, '0');
const usDate = (y, m, d) => `${pad(m)}/${pad(d)}/${y}`;
const csvCell = (text) => (/[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text);

function createRowMaker(seed) {
  const random = createRandom(seed);
  const int = (min, max) => min + Math.floor(random() * (max - min + 1));
  const pick = (list) => list[Math.floor(random() * list.length)];
  const chance = (p) => random() < p;
  const hex = (n) => {
    let s = '';
    for (let i = 0; i < n; i += 1) s += '0123456789abcdef'[int(0, 15)];
    return s;
  };
  const vin = () => {
    let s = '';
    for (let i = 0; i < 17; i += 1) s += VIN_CHARS[int(0, VIN_CHARS.length - 1)];
    return s;
  };

  function driverCells(n, lastName, place, sex, relation, minAge, maxAge) {
    const age = int(minAge, maxAge);
    const first = pick(FIRST);
    const [occCode, occDesc] = pick(OCCUPATIONS);
    const cells = [
      first, pick(MIDDLE), lastName, usDate(2026 - age, int(1, 12), int(1, 28)), sex,
      relation === 'SELF' || relation === 'SPOUSE' ? pick(['S', 'M', 'M', 'D', 'W']) : 'S', relation,
      n === 1 || chance(0.4) ? `(${pick(['212', '312', '512', '614', '720'])}) 555-01${pad(int(0, 99))}` : '',
      n === 1 || chance(0.3) ? `${first}.${lastName}${int(1, 99)}@example.com`.toLowerCase() : '',
      pick(['HS', 'SC', 'BA', 'BA', 'MA', 'PHD']), pick(['excellent', 'good', 'good', 'fair', 'poor']), occCode, occDesc,
      `D${int(1000000, 9999999)}`, place[0], 'active', String(Math.max(0, age - 16 - int(0, 3))),
      age < 25 ? pick(['Y', 'N']) : '', pick(['Y', 'N', '']), pick(CARRIERS), pick(['25/50', '50/100', '100/300']),
    ];
    const incidents = age > 18 && chance(0.25) ? int(1, 2) : 0;
    for (let m = 0; m < 2; m += 1) {
      if (m < incidents) cells.push(pick(['ACC', 'SPD', 'SPD', 'MIN']), usDate(int(2019, 2025), int(1, 12), int(1, 28)), pick(['Y', 'N']));
      else cells.push('', '', '');
    }
    return cells;
  }

  function vehicleCells() {
    const [make, model] = pick(CARS);
    return [
      vin(), String(int(1998, 2025)), make, model, pick(['COMMUTE', 'COMMUTE', 'PLEASURE', 'BUSINESS']),
      pick(['5,000', '7,500', '10,000', '12,000', '15,000', '20,000']), pick(['OWN', 'FIN', 'LSE']), String(int(1, 120)),
      chance(0.1) ? 'Y' : 'N', pick(['250', '500', '1000', '']), pick(['250', '500', '1000']), pick(['Y', 'N']),
    ];
  }

  function secondDriverCells(last, place, sex) {
    return chance(0.8)
      ? driverCells(2, last, place, sex === 'M' ? 'F' : 'M', 'SPOUSE', 22, 75)
      : driverCells(2, last, place, pick(['M', 'F']), 'CHILD', 16, 21);
  }

  const emptyDriver = DRIVER_FIELDS.map(() => '');
  const emptyVehicle = VEHICLE_FIELDS.map(() => '');

  /** One CSV line (no line end) for data row `row` (1-based). */
  return (row) => {
    const place = pick(PLACES);
    const last = pick(LAST);
    const sex = pick(['M', 'F']);
    const created = new Date(Date.UTC(2026, 2, 1, 12) + row * 2_017);
    const createdText = `${created.getUTCFullYear()}-${pad(created.getUTCMonth() + 1)}-${pad(created.getUTCDate())} ` +
      `${pad(created.getUTCHours())}:${pad(created.getUTCMinutes())}:${pad(created.getUTCSeconds())}`;
    const cells = [
      `${hex(8)}-${hex(4)}-4${hex(3)}-${'89ab'[int(0, 3)]}${hex(3)}-${hex(12)}`,
      // Unique by construction: the row number, plus random hex for realism.
      `clk_${row.toString(36).padStart(5, '0')}${hex(8)}`,
      createdText,
      AGENT_EMAILS[int(0, AGENT_COUNT - 1)],
      `${int(10, 9999)} ${pick(STREETS)}`,
      chance(0.2) ? `Apt ${int(1, 40)}, Bldg ${pick(['A', 'B', 'C'])}` : '',
      place[1], place[0], `${place[2]}${pad(int(0, 99))}`,
      pick(['OWN', 'OWN', 'RENT', 'CONDO']), String(int(3, 240)),
      usDate(2026, int(4, 6), int(1, 28)), pick(['25/50', '50/100', '100/300', '250/500']), pick(['25', '50', '100']),
      pick(['1000', '2000', '5000']), pick(['Y', 'Y', 'Y', 'N']),
      chance(0.5) ? `203.0.113.${int(1, 254)}` : `198.51.100.${int(1, 254)}`, pick(USER_AGENTS),
      pick(['google', 'bing', 'facebook', 'partner_site']), `CMP-${int(100, 120)}`,
      `https://quotes.example.com/auto?c=${int(1000, 9999)}`, pick(['8.50', '12.00', '14.75', '22.10']),
      ...driverCells(1, last, place, sex, 'SELF', 22, 75),
      ...(chance(0.55) ? secondDriverCells(last, place, sex) : emptyDriver),
      ...vehicleCells(),
      ...(chance(0.45) ? vehicleCells() : emptyVehicle),
    ];
    return cells.map(csvCell).join(',');
  };
}

/**
 * Writes `rows` leads to `file` (CSV, CRLF line ends) and resolves when the file is closed.
 * @param {{ rows: number, file: string, seed?: number }} options
 */
export async function generateLeads({ rows, file, seed = 20260314 }) {
  mkdirSync(dirname(file), { recursive: true });
  const makeRow = createRowMaker(seed);
  const out = createWriteStream(file);
  const write = (text) => (out.write(text) ? Promise.resolve() : new Promise((r) => out.once('drain', r)));
  await write(`${HEADER.join(',')}\r\n`);
  let chunk = '';
  for (let row = 1; row <= rows; row += 1) {
    chunk += `${makeRow(row)}\r\n`;
    if (chunk.length > 1 << 20) {
      await write(chunk);
      chunk = '';
    }
  }
  if (chunk !== '') await write(chunk);
  await new Promise((resolveClose, reject) => {
    out.on('error', reject);
    out.end(resolveClose);
  });
}

/** Writes the agents file the sandbox knows the pool from (`email,agent_id,eligible`). */
export function writeAgentsFile(file) {
  mkdirSync(dirname(file), { recursive: true });
  const lines = AGENT_EMAILS.map((email, i) => `${email},bch-${String(200001 + i)},true`);
  writeFileSync(file, `email,agent_id,eligible\n${lines.join('\n')}\n`);
}

const USAGE = `usage: node bench/generate-leads.js [--rows 10000] [--out bench/data] [--name leads-<rows>.csv] [--seed 20260314]
writes <out>/<name> (made-up leads, 100 columns) and <out>/agents.csv
`;
const OPTIONS = new Set(['--rows', '--out', '--name', '--seed']);

async function main() {
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(USAGE);
    return;
  }
  for (let i = 0; i < args.length; i += 2) {
    if (!OPTIONS.has(args[i]) || args[i + 1] === undefined) {
      process.stderr.write(`unknown or incomplete option ${JSON.stringify(args[i])}\n${USAGE}`);
      process.exitCode = 2;
      return;
    }
  }
  const option = (name, fallback) => {
    const i = args.indexOf(name);
    return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : fallback;
  };
  const rows = Number(option('--rows', '10000'));
  if (!Number.isInteger(rows) || rows < 1) throw new Error('--rows must be a positive integer');
  const out = resolve(option('--out', join(ROOT, 'bench', 'data')));
  const file = join(out, option('--name', `leads-${rows}.csv`));
  const started = performance.now();
  await generateLeads({ rows, file, seed: Number(option('--seed', '20260314')) });
  writeAgentsFile(join(out, 'agents.csv'));
  process.stdout.write(`wrote ${file} (${rows} rows, ${HEADER.length} columns) and ${join(out, 'agents.csv')} ` +
    `in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
}
