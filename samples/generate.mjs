#!/usr/bin/env node
// Writes samples/leads.csv, samples/leads.ndjson and samples/agents.csv: the same made-up leads
// as a flat CSV export and as nested NDJSON. Deterministic (seeded), no dependencies.
//
//   node samples/generate.mjs                 # the committed samples (200 leads)
//   node samples/generate.mjs --rows 50000 --out /tmp/big   # bigger files for benchmarks
//
// Every person, phone number, VIN and e-mail is invented: names from a short list, phones in the
// 555-01xx range reserved for fiction, e-mails at example.com, IPs in documentation ranges.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : fallback;
};
const ROWS = Number(option('--rows', '200'));
const OUT = option('--out', dirname(fileURLToPath(import.meta.url)));
const SEED = Number(option('--seed', '20260314'));

// mulberry32: small, fast, good enough for made-up data.
let state = SEED >>> 0;
function random() {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const int = (min, max) => min + Math.floor(random() * (max - min + 1));
const pick = (list) => list[Math.floor(random() * list.length)];
const chance = (p) => random() < p;
const pad = (n, w = 2) => String(n).padStart(w, '0');
const hex = (n) => Array.from({ length: n }, () => '0123456789abcdef'[int(0, 15)]).join('');
const uuidLike = () => `${hex(8)}-${hex(4)}-4${hex(3)}-${'89ab'[int(0, 3)]}${hex(3)}-${hex(12)}`;
const usDate = (y, m, d) => `${pad(m)}/${pad(d)}/${y}`;

// ---------------------------------------------------------------------------------------------
// Reference lists

const AGENTS = [
  { email: 'dana.whitfield@example.com', agent_id: 'acm-100001', eligible: true },
  { email: 'marcus.lee@example.com', agent_id: 'acm-100002', eligible: true },
  { email: 'priya.nair@example.com', agent_id: 'acm-100003', eligible: true },
  { email: 'tom.okafor@example.com', agent_id: 'acm-100004', eligible: true },
  { email: 'elena.garcia@example.com', agent_id: 'acm-100005', eligible: true },
  { email: 'sam.porter@example.com', agent_id: 'acm-100006', eligible: true },
  { email: 'casey.hold@example.com', agent_id: 'acm-100007', eligible: false },
];
const ELIGIBLE = AGENTS.filter((a) => a.eligible).map((a) => a.email);
const INELIGIBLE_AGENT = 'casey.hold@example.com';
const UNKNOWN_AGENTS = ['temp.agent@example.com', 'former.agent@example.com'];

const FIRST = { M: ['James', 'Robert', 'Miguel', 'Wei', 'Daniel', 'Omar', 'Liam', 'Noah', 'Ethan', 'Samuel'],
  F: ['Maria', 'Linda', 'Aisha', 'Sofia', 'Emma', 'Olivia', 'Grace', 'Hana', 'Chloe', 'Nora'] };
const LAST = ['Testerson', 'Sampleton', 'Fakeman', 'Doe', 'Roe', 'Placeholder', 'Mockley', 'Dummer', 'Exampleton', 'Notreal'];
const PLACES = [
  ['TX', 'Austin', '787'], ['OH', 'Columbus', '432'], ['GA', 'Atlanta', '303'], ['NC', 'Raleigh', '276'],
  ['AZ', 'Phoenix', '850'], ['CO', 'Denver', '802'], ['PA', 'Pittsburgh', '152'], ['IL', 'Springfield', '627'],
  ['FL', 'Tampa', '336'], ['MI', 'Lansing', '489'], ['WA', 'Spokane', '992'], ['TN', 'Nashville', '372'],
];
const REJECTED_PLACES = { AK: ['AK', 'Anchorage', '995'], HI: ['HI', 'Honolulu', '968'], MA: ['MA', 'Worcester', '016'] };
const STREETS = ['Maple Ave', 'Oak St', 'Elm Dr', 'Cedar Ln', 'Birch Rd', 'Pine Ct', 'Willow Way', 'Aspen Pl'];
const CARS = [
  ['Toyota', 'Camry'], ['Honda', 'Civic'], ['Ford', 'F-150'], ['Chevrolet', 'Malibu'], ['Subaru', 'Outback'],
  ['Hyundai', 'Elantra'], ['Nissan', 'Rogue'], ['Kia', 'Soul'], ['Mazda', 'CX-5'], ['Jeep', 'Wrangler'],
];
const OLD_CARS = [['Ford', 'Pinto'], ['Chevrolet', 'Nova'], ['Volkswagen', 'Beetle']];
const CARRIERS = ['Sample Mutual', 'Example Casualty', 'Placeholder Insurance Co', ''];
const VIN_CHARS = 'ABCDEFGHJKLMNPRSTUVWXYZ0123456789';
const vin = () => Array.from({ length: 17 }, () => pick([...VIN_CHARS])).join('');

// ---------------------------------------------------------------------------------------------
// Special rows (1-based data rows, header excluded; the same in both files)

const BAD = {
  17: 'impossible date of birth: driver2_dob 13/45/1990',
  31: 'malformed phone: driver1_phone has 8 digits',
  48: 'missing required value: driver1_last_name is empty',
  64: 'bad VIN: vehicle1_vin has 16 characters',
  79: 'unknown required code: driver1_gender "X" is not in the value table',
  93: 'unreadable row: CSV has an extra field; NDJSON line is broken JSON',
  112: 'not an integer: vehicle2_year "20O8"',
  127: 'malformed agent e-mail: agent_email has no @',
  140: 'not a yes/no: tcpa_consent "maybe"',
};
const REJECTED = {
  23: 'state_not_supported: primary driver in AK',
  57: 'state_not_supported: primary driver in HI',
  101: 'state_not_supported: primary driver in MA',
  86: 'eligible_vehicle_not_found: every vehicle is older than 1981',
  150: 'eligible_vehicle_not_found: every vehicle is commercial',
};
const DUPLICATES = { 160: 12, 175: 40 };
const UNKNOWN_AGENT_ROWS = [9, 66, 133, 190];
const INELIGIBLE_AGENT_ROWS = [5, 71, 144, 188];
const MIXED_CASE_AGENT_ROWS = [14, 88];
const EMBEDDED_NEWLINE_ROW = 120;

// ---------------------------------------------------------------------------------------------
// Leads

function makePerson(sex, minAge, maxAge, last) {
  const age = int(minAge, maxAge);
  const first = pick(FIRST[sex]);
  return {
    first_name: first,
    last_name: last ?? pick(LAST),
    dob: usDate(2026 - age, int(1, 12), int(1, 28)),
    age,
    gender: sex,
  };
}

function makeDriver(person, relation, n) {
  const phoneTail = pad(int(0, 99));
  const incidents = [];
  const count = person.age > 18 && chance(0.3) ? int(1, 2) : 0;
  for (let m = 0; m < count; m += 1) {
    incidents.push({
      code: pick(['ACC', 'SPD', 'SPD', 'MIN', 'DUI']),
      date: usDate(int(2019, 2025), int(1, 12), int(1, 28)),
      at_fault: pick(['Y', 'N']),
    });
  }
  return {
    first_name: person.first_name,
    last_name: person.last_name,
    dob: person.dob,
    gender: person.gender,
    marital: relation === 'CHILD' ? 'S' : pick(['S', 'M', 'M', 'D', 'W']),
    relation,
    phone: n === 1 || chance(0.4) ? `(${pick(['212', '312', '512', '614', '720'])}) 555-01${phoneTail}` : '',
    email: n === 1 || chance(0.3) ? `${person.first_name}.${person.last_name}${int(1, 99)}@example.com`.toLowerCase() : '',
    education: pick(['HS', 'SC', 'BA', 'BA', 'MA', 'PHD']),
    occupation_code: pick(['010', '020', '110', '200', '310', '999']),
    license_state: '',
    years_licensed: String(Math.max(0, person.age - 16 - int(0, 3))),
    good_student: person.age < 25 ? pick(['Y', 'N']) : '',
    incidents,
  };
}

function makeVehicle() {
  const [make, model] = pick(CARS);
  return {
    vin: vin(),
    year: int(1998, 2025),
    make,
    model,
    use: pick(['COMMUTE', 'COMMUTE', 'PLEASURE', 'BUSINESS']),
    annual_miles: pick([5000, 7500, 10000, 12000, 15000, 20000]),
    ownership: pick(['OWN', 'FIN', 'LSE']),
    rideshare: chance(0.1) ? 'Y' : 'N',
    coll_ded: pick(['250', '500', '1000', '']),
    comp_ded: pick(['250', '500', '1000']),
    tow: pick(['Y', 'N']),
  };
}

function makeLead(row) {
  const place = row === 23 ? REJECTED_PLACES.AK : row === 57 ? REJECTED_PLACES.HI : row === 101 ? REJECTED_PLACES.MA : pick(PLACES);
  const sex = pick(['M', 'F']);
  const primary = makePerson(sex, 22, 75);
  const drivers = [makeDriver(primary, 'SELF', 1)];
  let driverCount = pick([1, 1, 2, 2, 2, 3, 4]);
  if (row === 17) driverCount = Math.max(driverCount, 2);
  if (driverCount >= 2) drivers.push(makeDriver(makePerson(sex === 'M' ? 'F' : 'M', 22, 75, primary.last_name), 'SPOUSE', 2));
  for (let n = 3; n <= driverCount; n += 1) drivers.push(makeDriver(makePerson(pick(['M', 'F']), 16, 20, primary.last_name), 'CHILD', n));
  for (const driver of drivers) driver.license_state = place[0];

  let vehicleCount = pick([1, 1, 2, 2, 3]);
  if (row === 112) vehicleCount = Math.max(vehicleCount, 2);
  const vehicles = Array.from({ length: vehicleCount }, makeVehicle);
  if (row === 86) {
    for (const v of vehicles) {
      [v.make, v.model] = pick(OLD_CARS);
      v.year = int(1968, 1979);
    }
  }
  if (row === 150) for (const v of vehicles) v.use = 'COMMERCIAL';

  let agent = pick(ELIGIBLE);
  if (UNKNOWN_AGENT_ROWS.includes(row)) agent = pick(UNKNOWN_AGENTS);
  if (INELIGIBLE_AGENT_ROWS.includes(row)) agent = INELIGIBLE_AGENT;
  if (MIXED_CASE_AGENT_ROWS.includes(row)) agent = ` ${agent.replace(/^./, (c) => c.toUpperCase()).replace('@example', '@Example')} `;

  const created = new Date(Date.UTC(2026, 2, 1, 12) + row * 3_517_000);
  const createdText = `${created.getUTCFullYear()}-${pad(created.getUTCMonth() + 1)}-${pad(created.getUTCDate())} ${pad(created.getUTCHours())}:${pad(created.getUTCMinutes())}:${pad(created.getUTCSeconds())}`;
  const lead = {
    lead_id: uuidLike(),
    click_id: `clk_${hex(12)}`,
    created_at: createdText,
    agent_email: agent,
    address_line_1: `${int(10, 9999)} ${pick(STREETS)}`,
    address_line_2: chance(0.2) ? `Apt ${int(1, 40)}, Bldg ${pick(['A', 'B', 'C'])}` : '',
    city: place[1],
    state: place[0],
    zip: `${place[2]}${pad(int(0, 99))}`,
    residence_type: pick(['OWN', 'OWN', 'RENT', 'CONDO']),
    residence_months: String(int(3, 240)),
    prior_carrier: pick(CARRIERS),
    prior_bi: pick(['25/50', '50/100', '100/300']),
    prior_expires: usDate(2026, int(4, 7), int(1, 28)),
    effective_date: usDate(2026, int(4, 6), int(1, 28)),
    bi_limits: pick(['25/50', '50/100', '100/300', '250/500']),
    pd_limit: pick(['25', '50', '100']),
    med_pay: pick(['1000', '2000', '5000']),
    tcpa_consent: pick(['Y', 'Y', 'Y', 'N']),
    consent_ip: chance(0.5) ? `203.0.113.${int(1, 254)}` : `198.51.100.${int(1, 254)}`,
    user_agent: pick(['Mozilla/5.0 (Windows NT 10.0; Win64; x64)', 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X)', 'Mozilla/5.0 (X11; Linux x86_64)']),
    traffic_source: pick(['google', 'bing', 'facebook', 'partner_site']),
    traffic_medium: pick(['cpc', 'organic', 'display']),
    campaign_id: `CMP-${int(100, 120)}`,
    landing_url: `https://quotes.example.com/auto?c=${int(1000, 9999)}`,
    lead_price: pick(['8.50', '12.00', '14.75', '22.10']),
    drivers,
    vehicles,
  };
  if (row === EMBEDDED_NEWLINE_ROW) lead.address_line_2 = 'Unit 5\nRear entrance, by the garage';

  // Deliberately bad rows: one defect each.
  if (row === 17) lead.drivers[1].dob = '13/45/1990';
  if (row === 31) lead.drivers[0].phone = '(212) 555-01';
  if (row === 48) lead.drivers[0].last_name = '';
  if (row === 64) lead.vehicles[0].vin = lead.vehicles[0].vin.slice(0, 16);
  if (row === 79) lead.drivers[0].gender = 'X';
  if (row === 112) lead.vehicles[1].year = '20O8';
  if (row === 127) lead.agent_email = 'dana.whitfield.example.com';
  if (row === 140) lead.tcpa_consent = 'maybe';
  return lead;
}

const leads = [];
for (let row = 1; row <= ROWS; row += 1) leads.push(makeLead(row));
for (const [dup, original] of Object.entries(DUPLICATES)) {
  if (Number(dup) <= ROWS) leads[Number(dup) - 1].click_id = leads[original - 1].click_id;
}

// ---------------------------------------------------------------------------------------------
// CSV: flat columns, driver{n}_*, driver{n}_incident{m}_*, vehicle{v}_*

const MAX_DRIVERS = 4;
const MAX_INCIDENTS = 2;
const MAX_VEHICLES = 3;
const LEAD_COLUMNS = [
  'lead_id', 'click_id', 'created_at', 'agent_email', 'address_line_1', 'address_line_2', 'city', 'state', 'zip',
  'residence_type', 'residence_months', 'prior_carrier', 'prior_bi', 'prior_expires', 'effective_date',
  'bi_limits', 'pd_limit', 'med_pay', 'tcpa_consent', 'consent_ip', 'user_agent', 'traffic_source',
  'traffic_medium', 'campaign_id', 'landing_url', 'lead_price',
];
const DRIVER_FIELDS = ['first_name', 'last_name', 'dob', 'gender', 'marital', 'relation', 'phone', 'email',
  'education', 'occupation_code', 'license_state', 'years_licensed', 'good_student'];
const INCIDENT_FIELDS = ['code', 'date', 'at_fault'];
const VEHICLE_FIELDS = ['vin', 'year', 'make', 'model', 'use', 'annual_miles', 'ownership', 'rideshare', 'coll_ded', 'comp_ded', 'tow'];

const header = [...LEAD_COLUMNS];
for (let n = 1; n <= MAX_DRIVERS; n += 1) {
  for (const f of DRIVER_FIELDS) header.push(`driver${n}_${f}`);
  for (let m = 1; m <= MAX_INCIDENTS; m += 1) for (const f of INCIDENT_FIELDS) header.push(`driver${n}_incident${m}_${f}`);
}
for (let v = 1; v <= MAX_VEHICLES; v += 1) for (const f of VEHICLE_FIELDS) header.push(`vehicle${v}_${f}`);

const csvCell = (value) => {
  const text = value === undefined || value === null ? '' : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
};
const thousands = (n) => (typeof n === 'number' ? n.toLocaleString('en-US') : n);

function toCsvRow(lead) {
  const cells = LEAD_COLUMNS.map((c) => lead[c]);
  for (let n = 0; n < MAX_DRIVERS; n += 1) {
    const d = lead.drivers[n];
    for (const f of DRIVER_FIELDS) cells.push(d?.[f] ?? '');
    for (let m = 0; m < MAX_INCIDENTS; m += 1) for (const f of INCIDENT_FIELDS) cells.push(d?.incidents[m]?.[f] ?? '');
  }
  for (let v = 0; v < MAX_VEHICLES; v += 1) {
    const veh = lead.vehicles[v];
    for (const f of VEHICLE_FIELDS) cells.push(f === 'annual_miles' ? thousands(veh?.[f] ?? '') : veh?.[f] ?? '');
  }
  return cells.map(csvCell).join(',');
}

const csvLines = [header.join(',')];
leads.forEach((lead, i) => {
  let line = toCsvRow(lead);
  if (i + 1 === 93) line += ',UNEXPECTED';
  csvLines.push(line);
});

// ---------------------------------------------------------------------------------------------
// NDJSON: the same leads, nested the way an API export would nest them

const orEmpty = (value) => (value === '' ? undefined : value);
function toNested(lead) {
  return {
    lead_id: lead.lead_id,
    click_id: lead.click_id,
    created_at: lead.created_at,
    agent: { email: lead.agent_email },
    contact: {
      address: { line1: lead.address_line_1, line2: orEmpty(lead.address_line_2), city: lead.city, state: lead.state, zip: lead.zip },
      residence: { type: lead.residence_type, months: Number(lead.residence_months) },
    },
    prior_insurance: { carrier: orEmpty(lead.prior_carrier), bi: lead.prior_bi, expires: lead.prior_expires },
    drivers: lead.drivers.map((d) => ({
      first_name: d.first_name,
      last_name: d.last_name,
      dob: d.dob,
      gender: d.gender,
      marital: d.marital,
      relation: d.relation,
      phone: orEmpty(d.phone),
      email: orEmpty(d.email),
      education: d.education,
      occupation_code: d.occupation_code,
      license: { state: d.license_state, years: d.years_licensed },
      good_student: orEmpty(d.good_student),
      incidents: d.incidents,
    })),
    vehicles: lead.vehicles.map((v) => ({
      vin: v.vin, year: v.year, make: v.make, model: v.model, use: v.use, annual_miles: v.annual_miles,
      ownership: v.ownership, rideshare: v.rideshare === 'Y',
      coverage: { coll_ded: orEmpty(v.coll_ded), comp_ded: v.comp_ded, tow: v.tow === 'Y' },
    })),
    policy: { effective_date: lead.effective_date, bi_limits: lead.bi_limits, pd_limit: lead.pd_limit, med_pay: lead.med_pay },
    consent: {
      tcpa: lead.tcpa_consent === 'Y' ? true : lead.tcpa_consent === 'N' ? false : lead.tcpa_consent,
      ip: lead.consent_ip, user_agent: lead.user_agent, landing_url: lead.landing_url,
    },
    marketing: { traffic_source: lead.traffic_source, traffic_medium: lead.traffic_medium, campaign_id: lead.campaign_id },
    pricing: { lead_price: Number(lead.lead_price), currency: 'USD' },
  };
}

const ndjsonLines = leads.map((lead, i) => {
  const line = JSON.stringify(toNested(lead));
  // Row 93: a line cut short, as a truncated export would leave it.
  return i + 1 === 93 ? line.slice(0, Math.floor(line.length / 2)) : line;
});

// ---------------------------------------------------------------------------------------------

mkdirSync(OUT, { recursive: true });
writeFileSync(join(OUT, 'leads.csv'), `${csvLines.join('\r\n')}\r\n`);
writeFileSync(join(OUT, 'leads.ndjson'), `${ndjsonLines.join('\n')}\n`);
writeFileSync(join(OUT, 'agents.csv'), `email,agent_id,eligible\n${AGENTS.map((a) => `${a.email},${a.agent_id},${a.eligible}`).join('\n')}\n`);

const within = (rows) => rows.filter((r) => Number(r) <= ROWS).map(Number);
const summary = {
  rows: ROWS,
  columns: header.length,
  invalid: Object.fromEntries(Object.entries(BAD).filter(([r]) => Number(r) <= ROWS)),
  rejected: Object.fromEntries(Object.entries(REJECTED).filter(([r]) => Number(r) <= ROWS)),
  duplicate: Object.fromEntries(Object.entries(DUPLICATES).filter(([r]) => Number(r) <= ROWS).map(([r, o]) => [r, `repeats the click_id of row ${o}`])),
  unknownAgent: within(UNKNOWN_AGENT_ROWS),
  ineligibleAgent: within(INELIGIBLE_AGENT_ROWS),
  embeddedNewline: within([EMBEDDED_NEWLINE_ROW]),
};
process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
