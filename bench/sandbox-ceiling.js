#!/usr/bin/env node
// The sandbox's own ceiling: requests/s it serves at 64 concurrent keep-alive connections with no
// latency, for the validate and the quote operations. The sandbox runs as its own process
// (`node bin/quote-batch.js sandbox --port 0`); the load comes from raw HTTP/1.1 over `node:net`
// (no HTTP client library: a client library costs more CPU per request than the server does).
//
//   node bench/sandbox-ceiling.js [--seconds 10] [--connections 64]
//
// Writes bench/results/sandbox-ceiling.json. Also reports the sandbox process's CPU use: if it is
// well under one core while the load generator is saturated, the figure is the generator's limit,
// not the sandbox's.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const BIN = process.env.QUOTE_BATCH_BIN ?? join(ROOT, 'bin', 'quote-batch.js');
const args = process.argv.slice(2);
const flag = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? Number(args[i + 1]) : fallback;
};
const SECONDS = flag('--seconds', 10);
const CONNECTIONS = flag('--connections', 64);
const WARMUP_SECONDS = 1;
const KEY = 'sandbox-key';
const CLOCK_TICKS = 100; // USER_HZ on Linux

const QUOTE_BODY = JSON.stringify({
  channel: { channel_id: 'bench', agent_id: 'xyz-100200300', integration_type: 'direct' },
  application: {
    drivers: [{
      name: { first_name: 'Bench', last_name: 'Mark' }, dob: '1988-04-12', gender: 'female', marital_status: 'single',
      contact_info: { phone: '5550100123', email: 'bench@example.com' }, relation_to_pni: 'self',
      address: { address_line_1: '1 Example Way', city: 'Austin', state: 'TX', zip: '73301', country: 'US' },
      residence: { type: 'own_home', length_in_months: 48 }, education: 'bachelor',
      occupation: { code: '010', description: 'Engineer' },
      driver_license: { id: 'D0000001', state: 'TX', years_licensed: '15', type: 'standard', status: 'active' },
      student_profile: { is_good_student: false, is_distant_student: false },
      incident_history: [{ code: 'SPD', incident_date: '2024-05-01', is_at_fault: true }],
      prior_insurance: { effective_date: '2025-01-01', expiration_date: '2026-01-01', carrier: 'Example Mutual', bi_coverage: '50/100' },
      credit_rating: 'good', had_driver_training: false,
    }],
    vehicles: [{
      vin: '1HGCM82633A004352', make: 'Honda', model: 'Accord', year: 2019,
      usage: { primary_use: 'commute', annual_mileage: 12000 }, ownership: { type: 'owned', length_in_months: 24 }, is_ride_sharing: false,
    }],
    coverage: {
      policy_coverage: { bi: '50/100', um: '50/100', uim: '50/100', pd: '50', umpd: '25', med: '5000_per_person' },
      vehicle_coverage: [{ coll: '500_ded', comp: '500_ded', rent: '30_per_day_900_max', tow: true, loan_payoff: true, full_glass: false, acpe: 0, umpd: '100' }],
    },
    effective_date: '2026-03-01',
  },
  tracking: { click_id: 'bench-click', traffic_source: 'search', submission_url: 'https://leads.example.com/form', consumer_source_ip: '192.0.2.10' },
  pricing: { lead_price: 12.5, bid_price: 10, currency: 'USD', pricing_model: 'cpl', pricing_source: 'auction' },
  compliance: { tcpa_consent: true, consent_timestamp: '2026-02-20T18:04:05Z' },
});
const VALIDATE_BODY = JSON.stringify({ email: 'bench.agent@example.com' });

function rawRequest(port, path, body) {
  return Buffer.from(
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
      `x-api-key: ${KEY}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: keep-alive\r\n\r\n${body}`,
  );
}

function startSandbox(agentsFile) {
  const child = spawn(process.execPath, [BIN, 'sandbox', '--port', '0', '--agents', agentsFile], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, QUOTE_BATCH_API_KEY: '' },
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`sandbox did not start: ${stderr}`)), 30_000);
    child.on('exit', (code) => reject(new Error(`sandbox exited with ${code}: ${stderr}`)));
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      const match = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(stdout);
      if (match) {
        clearTimeout(timer);
        resolve({ child, port: Number(match[1]) });
      }
    });
  });
}

/** CPU seconds (user + system) the process has used so far, from /proc (Linux only). */
function cpuSeconds(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}

/** One keep-alive connection sending `request` again as soon as the previous answer is complete. */
function runConnection(port, request, state) {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    let buffer = Buffer.alloc(0);
    let sentAt = 0n;
    const send = () => {
      if (state.stop) {
        socket.end();
        resolve();
        return;
      }
      sentAt = process.hrtime.bigint();
      socket.write(request);
    };
    socket.on('connect', send);
    socket.on('error', (error) => {
      state.errors.push(error.code ?? error.message);
      resolve();
    });
    socket.on('data', (chunk) => {
      buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
      for (;;) {
        const headerEnd = buffer.indexOf('\r\n\r\n');
        if (headerEnd < 0) return;
        const head = buffer.toString('latin1', 0, headerEnd);
        const lengthMatch = /content-length: *(\d+)/i.exec(head);
        const total = headerEnd + 4 + (lengthMatch ? Number(lengthMatch[1]) : 0);
        if (buffer.length < total) return;
        const status = head.slice(9, 12);
        buffer = buffer.subarray(total);
        if (state.measuring) {
          state.count += 1;
          state.statuses[status] = (state.statuses[status] ?? 0) + 1;
          if (state.count % 16 === 0) state.latencies.push(Number(process.hrtime.bigint() - sentAt) / 1e6);
        }
        send();
      }
    });
  });
}

async function measure(port, pid, operation, path, body) {
  const request = rawRequest(port, path, body);
  const state = { stop: false, measuring: false, count: 0, statuses: {}, latencies: [], errors: [] };
  const connections = Array.from({ length: CONNECTIONS }, () => runConnection(port, request, state));
  await new Promise((resolve) => setTimeout(resolve, WARMUP_SECONDS * 1000));
  state.measuring = true;
  const started = process.hrtime.bigint();
  const cpuStart = cpuSeconds(pid);
  const ownStart = process.cpuUsage();
  await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
  state.measuring = false;
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const sandboxCpu = (cpuSeconds(pid) - cpuStart) / seconds;
  const own = process.cpuUsage(ownStart);
  const generatorCpu = (own.user + own.system) / 1e6 / seconds;
  state.stop = true;
  await Promise.all(connections);
  state.latencies.sort((a, b) => a - b);
  const pct = (p) => state.latencies.length === 0 ? null : Number(state.latencies[Math.min(state.latencies.length - 1, Math.floor(p * state.latencies.length))].toFixed(2));
  return {
    operation,
    requests: state.count,
    seconds: Number(seconds.toFixed(2)),
    requestsPerSecond: Math.round(state.count / seconds),
    latencyMs: { p50: pct(0.5), p99: pct(0.99) },
    statuses: state.statuses,
    connectionErrors: state.errors.length,
    // Shares of one core: ~1.0 means that process was saturated.
    sandboxCpuCores: Number(sandboxCpu.toFixed(2)),
    // Less sensitive to other processes on the machine than requests/s: the ceiling of one full core.
    requestsPerSandboxCpuSecond: Number.isFinite(sandboxCpu) && sandboxCpu > 0 ? Math.round(state.count / seconds / sandboxCpu) : null,
    loadGeneratorCpuCores: Number(generatorCpu.toFixed(2)),
  };
}

async function main() {
  const loadBefore = loadavg()[0];
  if (loadBefore > 1) {
    console.warn(`warning: load average ${loadBefore.toFixed(2)} before the run: other processes share the CPUs, the figures will be low`);
  }
  const dir = mkdtempSync(join(tmpdir(), 'quote-batch-bench-'));
  const agentsFile = join(dir, 'agents.csv');
  writeFileSync(agentsFile, 'email,agent_id,eligible\nbench.agent@example.com,xyz-100200300,true\n');
  const { child, port } = await startSandbox(agentsFile);
  try {
    const phases = [];
    for (const [operation, path, body] of [
      ['validate', '/account/v1/agent/validate', VALIDATE_BODY],
      ['quote', '/partner/v2/policy/quote', QUOTE_BODY],
    ]) {
      const result = await measure(port, child.pid, operation, path, body);
      phases.push(result);
      console.log(
        `${operation}: ${result.requestsPerSecond} requests/s over ${result.seconds}s (${CONNECTIONS} connections; ` +
          `p50 ${result.latencyMs.p50} ms, p99 ${result.latencyMs.p99} ms; statuses ${JSON.stringify(result.statuses)}; ` +
          `sandbox CPU ${result.sandboxCpuCores} core = ${result.requestsPerSandboxCpuSecond} requests per CPU-second, ` +
          `load generator CPU ${result.loadGeneratorCpuCores} core)`,
      );
    }
    const limitedBy = phases.map((p) =>
      p.loadGeneratorCpuCores >= 0.9 && p.sandboxCpuCores < 0.9 ? 'load generator' : p.sandboxCpuCores >= 0.9 ? 'sandbox' : 'unclear');
    const result = {
      benchmark: 'sandbox-ceiling',
      date: new Date().toISOString(),
      node: process.version,
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? null,
      connections: CONNECTIONS,
      latencyInjected: 0,
      // Other processes on the machine lower the figures; a quiet 2-core box has a 1-minute load under 1.
      loadAverage1mBefore: Number(loadBefore.toFixed(2)),
      loadAverage1mAfter: Number(loadavg()[0].toFixed(2)),
      loadGenerator: 'bench/sandbox-ceiling.js: raw HTTP/1.1 keep-alive over node:net, one request in flight per connection',
      phases: phases.map((p, i) => ({ ...p, limitedBy: limitedBy[i] })),
    };
    mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
    writeFileSync(join(ROOT, 'bench', 'results', 'sandbox-ceiling.json'), `${JSON.stringify(result, null, 2)}\n`);
    console.log('wrote bench/results/sandbox-ceiling.json');
  } finally {
    child.removeAllListeners('exit');
    child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
