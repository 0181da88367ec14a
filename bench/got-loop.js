#!/usr/bin/env node
// A bare got loop: the first N rows of a lead file, mapped with quote-batch's mapping (before
// the clock starts), sent as quote requests at a fixed concurrency with nothing around them — no
// ledger, no agent validation, no retries, no schema check of the answer. The yardstick of the
// CPU-bound benchmark: quote-batch's rows/s is compared with this loop's, same bodies, same
// sandbox, same concurrency.
//
//   npm run build && node bench/got-loop.js <leads.csv> --mapping <yaml> --base-url <url> \
//     [--agents bench/data/agents.csv] [--limit N] [--concurrency 64] [--api-key sandbox-key]
//
// Per request: JSON.stringify the body, POST it through got (keep-alive agent, one socket per slot),
// JSON.parse the answer. Prints one JSON line: requests, statuses, send-phase wall seconds and
// CPU seconds of this process during the send phase (the mapping beforehand is not counted).
import { readFileSync } from 'node:fs';
import pLimit from 'p-limit';
import { createBareGot } from './_bare-got.js';
import { openInput } from '../dist/input/index.js';
import { loadMapping, resolveInputOptions } from '../dist/mapping/index.js';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : fallback;
};
const input = args[0];
const mappingFile = option('--mapping');
const baseUrl = option('--base-url');
if (input === undefined || mappingFile === undefined || baseUrl === undefined) {
  console.error('usage: node bench/got-loop.js <leads.csv> --mapping <yaml> --base-url <url> [--limit N] [--concurrency 64]');
  process.exit(2);
}
const limit = Number(option('--limit', 'Infinity'));
const concurrency = Number(option('--concurrency', '64'));
const apiKey = option('--api-key', 'sandbox-key');
const agentsFile = option('--agents');

/** email → agent id, as the agents file gives it (what validation would return). */
function readAgentIds(file) {
  const ids = new Map();
  if (file === undefined) return ids;
  for (const line of readFileSync(file, 'utf8').split(/\r?\n/).slice(1)) {
    const [email, agentId] = line.split(',');
    if (email && agentId) ids.set(email.trim().toLowerCase(), agentId.trim());
  }
  return ids;
}

async function buildBodies() {
  const mapping = await loadMapping(mappingFile);
  const agentIds = readAgentIds(agentsFile);
  const reader = await openInput(input, resolveInputOptions(input, mapping));
  if (reader.columns !== null) mapping.checkColumns(reader.columns);
  const bodies = [];
  for await (const item of reader) {
    if (bodies.length >= limit) break;
    if (item.kind !== 'record') continue;
    const row = mapping.mapRow(item.record, item.rowNumber);
    if (row.errors.length > 0) continue;
    const agentId = row.agentEmail === null ? undefined : agentIds.get(row.agentEmail);
    if (agentId !== undefined) mapping.setAgentId(row.request, agentId);
    bodies.push(row.request);
  }
  await reader.close();
  return bodies;
}

const bodies = await buildBodies();
const { client, agent } = createBareGot({ apiKey, concurrency, prefixUrl: baseUrl });
const statuses = {};
let transportErrors = 0;
const slots = pLimit(concurrency);
const send = async (body) => {
  try {
    const response = await client.post('partner/v2/policy/quote', { body: JSON.stringify(body) });
    JSON.parse(response.body);
    statuses[response.statusCode] = (statuses[response.statusCode] ?? 0) + 1;
  } catch {
    transportErrors += 1;
  }
};

const cpu0 = process.cpuUsage();
const t0 = performance.now();
await Promise.all(bodies.map((body) => slots(() => send(body))));
const seconds = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
agent.destroy();
process.stdout.write(`${JSON.stringify({
  requests: bodies.length, concurrency, statuses, transportErrors, seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6,
})}\n`);
