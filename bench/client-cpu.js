// CPU per request of the partner client, beside a bare got loop and a bare node:http loop sending
// the same bodies to the same sandbox at the same concurrency.
//
//   npm run build && node bench/client-cpu.js [requests=5000] [concurrency=64]
//
// The sandbox runs as its own process (`quote-batch sandbox --port 0`), so its CPU is not counted:
// process.cpuUsage() here is the caller's cost only (serialise, send, parse, classify, record).
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pLimit from 'p-limit';
import { createPartnerClient } from '../dist/partner/index.js';
import { createBareGot } from './_bare-got.js';
import { median } from './_stats.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const REQUESTS = Number(process.argv[2] ?? 5000);
const CONCURRENCY = Number(process.argv[3] ?? 64);
const ROUNDS = 3;
const WARMUP = 300;
const API_KEY = 'bench-key-0c1d';

function makeBody(i) {
  return {
    channel: { channel_id: 'chn-bench', integration_type: 'direct' },
    application: {
      drivers: [{
        name: { first_name: 'Casey', last_name: `Benchperson${i}` },
        dob: '1985-06-15', gender: 'male', marital_status: 'married', relation_to_pni: 'self',
        contact_info: { phone: '5550100999', email: `casey${i}@example.test` },
        address: { address_line_1: '9 Sample Road', city: 'Columbus', state: 'OH', zip: '43004', country: 'US' },
        residence: { type: 'own_home', length_in_months: 48 },
        driver_license: { id: `D${String(i).padStart(8, '0')}`, state: 'OH', years_licensed: '15', status: 'active' },
      }],
      vehicles: [{
        vin: '1HGCM82633A004352', make: 'Honda', model: 'Accord', year: 2017,
        usage: { primary_use: 'commute', annual_mileage: 11000 }, ownership: { type: 'owned', length_in_months: 30 },
      }],
      coverage: {
        policy_coverage: { bi: '50/100', pd: '50000', med: '5000_per_person' },
        vehicle_coverage: [{ coll: '500_ded', comp: '500_ded', rent: '30_per_day_900_max', tow: true }],
      },
      effective_date: '2026-12-01',
    },
    tracking: { click_id: `bench-click-${i}`, traffic_source: 'bench' },
    pricing: { lead_price: 12.5, bid_price: 10, currency: 'USD', pricing_model: 'cpl' },
    compliance: { tcpa_consent: true, consent_timestamp: '2026-11-20T18:04:05Z' },
  };
}

async function startSandboxProcess() {
  const child = spawn(process.execPath, [join(ROOT, 'bin', 'quote-batch.js'), 'sandbox', '--port', '0'], {
    env: { ...process.env, QUOTE_BATCH_API_KEY: API_KEY, NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`sandbox did not start in 15 s:\n${output}`)), 15_000);
    const onData = (chunk) => {
      output += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`sandbox exited with ${code}:\n${output}`)));
  });
  return { url, stop: () => new Promise((resolve) => { child.once('exit', resolve); child.kill('SIGTERM'); }) };
}

/** Sends `bodies` with `send` at CONCURRENCY; returns CPU µs per request and wall time. */
async function measure(send, bodies) {
  const limit = pLimit(CONCURRENCY);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const results = await Promise.all(bodies.map((body) => limit(() => send(body))));
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const failures = results.filter((ok) => !ok).length;
  if (failures > 0) throw new Error(`${failures} requests did not succeed`);
  return { cpuUsPerRequest: (cpu.user + cpu.system) / bodies.length, wallMs, requestsPerSecond: (bodies.length * 1000) / wallMs };
}


async function main() {
  const sandbox = await startSandboxProcess();
  const quoteUrl = `${sandbox.url}/partner/v2/policy/quote`;
  try {
    const client = createPartnerClient({ baseUrl: sandbox.url, apiKey: API_KEY, concurrency: CONCURRENCY });
    const { client: bare, agent: gotAgent } = createBareGot({ apiKey: API_KEY, concurrency: CONCURRENCY });
    const httpAgent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY, maxFreeSockets: CONCURRENCY });
    const target = new URL(quoteUrl);

    const senders = {
      // What the pipeline calls: gates, got, JSON.parse, zod parse of the answer, classification.
      client: async (body) => (await client.submit('quote', body)).kind === 'ok',
      // The same request through got with nothing around it.
      got: async (body) => {
        const response = await bare.post(quoteUrl, { body: JSON.stringify(body) });
        JSON.parse(response.body);
        return response.statusCode === 200;
      },
      // The floor: node:http, no library.
      'node:http': (body) =>
        new Promise((resolve, reject) => {
          const payload = JSON.stringify(body);
          const req = http.request(
            {
              agent: httpAgent, host: target.hostname, port: target.port, path: target.pathname, method: 'POST',
              headers: { 'x-api-key': API_KEY, 'content-type': 'application/json', accept: 'application/json', 'content-length': Buffer.byteLength(payload) },
            },
            (res) => {
              let text = '';
              res.setEncoding('utf8');
              res.on('data', (chunk) => { text += chunk; });
              res.on('end', () => {
                JSON.parse(text);
                resolve(res.statusCode === 200);
              });
            },
          );
          req.on('error', reject);
          req.end(payload);
        }),
    };

    let counter = 0;
    const nextBodies = (n) => Array.from({ length: n }, () => makeBody(counter++));
    for (const send of Object.values(senders)) await measure(send, nextBodies(WARMUP));

    const samples = Object.fromEntries(Object.keys(senders).map((name) => [name, []]));
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const [name, send] of Object.entries(senders)) samples[name].push(await measure(send, nextBodies(REQUESTS)));
    }
    client.close();
    gotAgent.destroy();
    httpAgent.destroy();

    const summary = Object.fromEntries(
      Object.entries(samples).map(([name, runs]) => [
        name,
        {
          cpuUsPerRequest: Math.round(median(runs.map((r) => r.cpuUsPerRequest))),
          requestsPerSecond: Math.round(median(runs.map((r) => r.requestsPerSecond))),
          rounds: runs.map((r) => ({ cpuUsPerRequest: Math.round(r.cpuUsPerRequest), wallMs: Math.round(r.wallMs) })),
        },
      ]),
    );
    const result = {
      benchmark: 'client-cpu',
      date: new Date().toISOString(),
      node: process.version,
      cpu: cpus()[0]?.model ?? 'unknown',
      cores: cpus().length,
      requests: REQUESTS,
      concurrency: CONCURRENCY,
      rounds: ROUNDS,
      note: 'CPU time (user+system) of this process per request, median of rounds; the sandbox runs in another process',
      results: summary,
      clientOverheadOverGotUs: summary.client.cpuUsPerRequest - summary.got.cpuUsPerRequest,
    };
    mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
    writeFileSync(join(ROOT, 'bench', 'results', 'client-cpu.json'), `${JSON.stringify(result, null, 2)}\n`);
    console.log(`client CPU per request (${REQUESTS} requests × ${ROUNDS} rounds, concurrency ${CONCURRENCY}, ${result.node}):`);
    for (const [name, s] of Object.entries(summary)) {
      console.log(`  ${name.padEnd(10)} ${String(s.cpuUsPerRequest).padStart(6)} µs CPU/request   ${String(s.requestsPerSecond).padStart(6)} requests/s`);
    }
    console.log(`  client overhead over bare got: ${result.clientOverheadOverGotUs} µs/request`);
    console.log('written bench/results/client-cpu.json');
  } finally {
    await sandbox.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
