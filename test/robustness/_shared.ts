/**
 * What the robustness suites share: a canary API key and canary personal data that must never
 * appear in any output or ledger byte, the expected end state of the generated leads, and small
 * seeded helpers. The process, sandbox and ledger helpers themselves come from test/pipeline.
 */
import { existsSync, statSync } from 'node:fs';
import { expect } from 'vitest';
import { startSandbox, type SandboxFaults, type SandboxHandle } from '../../src/sandbox/index.js';
import type { CliResult } from '../helpers/cli.js';
import { ledgerBytes, SAMPLE_AGENTS } from '../pipeline/_setup.js';

/** The API key every robustness sandbox accepts: a canary searched for in every output. */
export const CANARY_KEY = 'canary-key-RoBu5t-9QxZ';

/**
 * Personal data of the generated leads (samples/generate.mjs) that the default (masked) ledger
 * and the run's output must not hold: driver last names (capitalised: lower-case ones are part of
 * made-up e-mail addresses, which are masked too) and 10-digit 555-01xx phone numbers.
 * `Placeholder`, `Doe` and `Roe` are left out: the first is also an insurer's name, the others
 * are substrings of ordinary words. The phone pattern must not touch a hex digit on either side:
 * the last group of a random transaction UUID is sometimes twelve decimal digits, and once in a
 * few hundred runs they hold "5550" in the right place.
 */
export const GENERATED_PII: readonly (string | RegExp)[] = [
  'Testerson', 'Sampleton', 'Fakeman', 'Mockley', 'Dummer', 'Exampleton', 'Notreal',
  /(?<![0-9A-Fa-f])\d{3}5550\d{3}(?![0-9A-Fa-f])/, /\(\d{3}\) 555-0\d{2}/,
];

/** States a row may end in once a job is done (`in_doubt` aside). */
export const FINAL_STATES = ['succeeded', 'rejected', 'agent_invalid', 'invalid', 'duplicate'] as const;

/**
 * Where the special rows of a generated file end (samples/README.md); every other row succeeds.
 * The generator puts them within the first 200 rows whatever the size of the file.
 */
export const SPECIAL_ROWS: Readonly<Record<string, readonly number[]>> = {
  invalid: [17, 31, 48, 64, 79, 93, 112, 127, 140],
  rejected: [23, 57, 86, 101, 150],
  duplicate: [160, 175],
  agent_invalid: [5, 9, 66, 71, 133, 144, 188, 190],
};

/** The state a row of a generated file must end in when every request got its answer. */
export function expectedStateOf(rowNumber: number): string {
  for (const [state, rows] of Object.entries(SPECIAL_ROWS)) if (rows.includes(rowNumber)) return state;
  return 'succeeded';
}

/** Counts per state of a fully answered generated file of `rows` rows (rows ≥ 200). */
export function expectedCounts(rows: number): Record<string, number> {
  const counts: Record<string, number> = {};
  let special = 0;
  for (const [state, list] of Object.entries(SPECIAL_ROWS)) {
    counts[state] = list.length;
    special += list.length;
  }
  counts.succeeded = rows - special;
  return counts;
}

/** A sandbox on loopback that accepts only the canary key. */
export function startCanarySandbox(faults: Partial<SandboxFaults> = {}, seed = 7, agentsFile = SAMPLE_AGENTS): Promise<SandboxHandle> {
  return startSandbox({ port: 0, apiKey: CANARY_KEY, agentsFile, seed, faults });
}

/** The sandbox's seeded PRNG (mulberry32), for the suite's own seeded choices. */
export { createRandom } from '../../src/sandbox/faults.js';

/** Names the first secret or canary found in `text`, or undefined. */
export function findSecret(text: string, extra: readonly (string | RegExp)[] = []): string | undefined {
  for (const needle of [CANARY_KEY, ...GENERATED_PII, ...extra]) {
    if (typeof needle === 'string' ? text.includes(needle) : needle.test(text)) return String(needle);
  }
  return undefined;
}

/**
 * Asserts that no canary is in the outputs of the given CLI runs nor in any byte of the ledger
 * (database, -wal, -shm); `label` names the case (e.g. the crash seed) in the failure message.
 */
export function expectNoSecrets(label: string, results: readonly CliResult[], ledgerPath: string | undefined, extra: readonly (string | RegExp)[] = []): void {
  results.forEach((result, i) => {
    expect(findSecret(result.stdout, extra), `${label}: stdout of run ${i + 1}`).toBeUndefined();
    expect(findSecret(result.stderr, extra), `${label}: stderr of run ${i + 1}`).toBeUndefined();
  });
  if (ledgerPath !== undefined) {
    const bytes = ledgerBytes(ledgerPath);
    const found = findSecret(bytes, extra);
    // Name where it was found (synthetic data only), so a failure can be diagnosed from the log.
    const at = found === undefined ? -1 : typeof found === 'string' ? bytes.indexOf(found) : bytes.search(found);
    const context = at < 0 ? '' : JSON.stringify(bytes.slice(Math.max(0, at - 120), at + 40));
    expect(found, `${label}: ledger bytes ${context}`).toBeUndefined();
  }
}

/** Asserts that the ledger and its -wal/-shm companions (when present) have mode 0600. */
export function expectPrivateLedger(label: string, ledgerPath: string): void {
  expect(existsSync(ledgerPath), `${label}: ledger exists`).toBe(true);
  for (const suffix of ['', '-wal', '-shm']) {
    const file = ledgerPath + suffix;
    if (existsSync(file)) expect((statSync(file).mode & 0o777).toString(8), `${label}: mode of ${file}`).toBe('600');
  }
}

/** Reads a positive integer from the environment (to shorten or replay a suite locally). */
export function envInt(name: string): number | undefined {
  const text = process.env[name];
  if (text === undefined || text === '') return undefined;
  const value = Number(text);
  return Number.isInteger(value) && value > 0 ? value : undefined;
}
