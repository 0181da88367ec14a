/**
 * Security checks (issue item 6): the API key (from the environment or from --api-key-file), the
 * proxy's password and the client key's passphrase, and personal values of the input never reach
 * stdout, stderr (plain or --json-log), error output, reports or any byte of a default ledger; ledger files are 0600 even under umask 000; `http://` base URLs
 * are refused except on loopback; NODE_TLS_REJECT_UNAUTHORIZED=0 is refused at start-up.
 * The crash, fault and bad-input suites run with the same canary key and search their outputs too.
 */
import { spawn } from 'node:child_process';
import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SandboxHandle } from '../../src/sandbox/index.js';
import { CLI, cliEnv, REPO_ROOT, runCli, type CliResult } from '../helpers/cli.js';
import { startForwardProxy, type ForwardProxy } from '../helpers/forward-proxy.js';
import { startHttpsSandbox, writeTlsFiles } from '../helpers/https-sandbox.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { ledgerBytes, readLedger, SAMPLE_AGENTS } from '../pipeline/_setup.js';
import { CANARY_KEY, expectNoSecrets, expectPrivateLedger, findSecret, startCanarySandbox } from './_shared.js';

const FIXTURES = join(REPO_ROOT, 'test', 'fixtures', 'robustness', 'security');
const CSV = join(FIXTURES, 'canary-pii.csv');
const MAPPING = join(FIXTURES, 'canary-pii.yaml');
/** Personal values of the valid canary rows (names, date of birth, phone, licence id). */
const PII = ['Canaryvale', 'Quillon', '1981-07-09', '1979-03-04', '5125550177', '555-0177', 'CNRYLIC9000'];
/** The personal value of the invalid row 3: a malformed date of birth. */
const BAD_DOB = '13/45/1961';

describe('secrets and personal data', () => {
  const tmp = useTempDir('quote-batch-security-');
  let sandbox: SandboxHandle;

  beforeEach(async () => {
    sandbox = await startCanarySandbox();
  });
  afterEach(() => sandbox.close());

  const run = (ledger: string, extra: string[], env: Record<string, string | undefined> = {}): Promise<CliResult> =>
    runCli(['run', CSV, '--mapping', MAPPING, '--base-url', sandbox.url, '--env', 'sandbox', '--ledger', ledger, ...extra], {
      cwd: tmp.dir, env, timeoutMs: 60_000,
    });

  it('the key from the environment or a key file, and the valid rows\' personal data, stay out of logs and the ledger', async () => {
    const keyFile = tmp.path('key.txt');
    writeFileSync(keyFile, `${CANARY_KEY}\n`);
    chmodSync(keyFile, 0o600);
    const results: CliResult[] = [];
    for (const [name, extra, env] of [
      ['env-plain', [], { QUOTE_BATCH_API_KEY: CANARY_KEY }],
      ['env-json', ['--json-log'], { QUOTE_BATCH_API_KEY: CANARY_KEY }],
      ['file-plain', ['--api-key-file', keyFile], {}],
      ['file-json', ['--api-key-file', keyFile, '--json-log'], {}],
    ] as const) {
      const ledger = tmp.path(`${name}.db`);
      const result = await run(ledger, [...extra], env);
      results.push(result);
      expect(result.code, `${name}: ${result.stderr}`).toBe(1); // row 3 is invalid
      expect(readLedger(ledger).states).toEqual({ succeeded: 2, invalid: 1 });
      // Everything the operator sees, and every byte an analyst can open.
      expectNoSecrets(name, [result], ledger, PII);
      expectPrivateLedger(name, ledger);
      // The other commands that read the ledger print nothing secret either.
      for (const args of [['report', '--ledger', ledger], ['report', '--ledger', ledger, '--format', 'json'], ['export', '--ledger', ledger], ['jobs', '--ledger', ledger]]) {
        const out = await runCli(args, { cwd: tmp.dir });
        expect(out.code, `${args.join(' ')}: ${out.stderr}`).toBe(0);
        expectNoSecrets(`${name} ${args.join(' ')}`, [out], undefined, PII);
      }
    }
    expect(sandbox.stats().operations.quote.received).toBe(8);
  });

  it('error output holds no key: a wrong key (403), a refused base URL, a key file that is missing', async () => {
    await sandbox.close();
    sandbox = await startCanarySandbox();
    const other = await startCanarySandbox();
    await other.close(); // a port that refuses connections
    const results = [
      await run(tmp.path('a.db'), ['--json-log'], { QUOTE_BATCH_API_KEY: `${CANARY_KEY}-wrong` }),
      await run(tmp.path('b.db'), ['--base-url', 'http://partner.example.com'], { QUOTE_BATCH_API_KEY: CANARY_KEY }),
      await run(tmp.path('c.db'), ['--api-key-file', tmp.path('missing-key.txt')]),
      await runCli(['agents', 'dana.whitfield@example.com', '--base-url', other.url, '--env', 'sandbox'], { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: CANARY_KEY }, timeoutMs: 60_000 }),
    ];
    expect(results.map((r) => r.code)).toEqual([3, 2, 2, results[3]!.code]);
    expect(results[3]!.code).not.toBe(0);
    for (const r of results) expect(r.stderr).not.toMatch(/internal error/);
    expectNoSecrets('errors', results, undefined, PII);
    expect(ledgerBytes(tmp.path('a.db'))).not.toContain(CANARY_KEY);
  });

  // The error message of an invalid row names the bad value; for personal data it is masked.
  it('a malformed personal value of an invalid row stays out of the default ledger', async () => {
    const ledger = tmp.path('masked.db');
    const result = await run(ledger, ['--quiet'], { QUOTE_BATCH_API_KEY: CANARY_KEY });
    expect(result.code).toBe(1);
    expect(ledgerBytes(ledger)).not.toContain(BAD_DOB);
  });

  it('ledger files are 0600 even under umask 000', async () => {
    const ledger = tmp.path('umask.db');
    const result = await new Promise<{ code: number | null; stderr: string }>((resolveRun) => {
      // A shell only to set the umask; the CLI runs as usual.
      const child = spawn('/bin/sh', ['-c', 'umask 000 && exec "$0" "$@"', process.execPath, CLI, 'run', CSV, '--mapping', MAPPING, '--base-url', sandbox.url, '--env', 'sandbox', '--ledger', ledger, '--quiet'], {
        cwd: tmp.dir, env: cliEnv({ QUOTE_BATCH_API_KEY: CANARY_KEY }), stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolveRun({ code, stderr });
      });
    });
    expect(result.code, result.stderr).toBe(1);
    expectPrivateLedger('umask 000', ledger);
  });
});

describe('the secrets of the way to the partner: the proxy\'s password, the client key\'s passphrase', () => {
  const tmp = useTempDir('quote-batch-security-network-');
  const PROXY_USER = 'ops';
  const PROXY_PASSWORD = 'canary-Pr0xy:pw/8Rt';
  const PASSPHRASE = 'canary passphrase Kq7 of the key';
  /** Every form they could leak in: as typed, as in the proxy URL, as in the Proxy-Authorization header. */
  const NETWORK_SECRETS = [
    PROXY_PASSWORD, encodeURIComponent(PROXY_PASSWORD), Buffer.from(`${PROXY_USER}:${PROXY_PASSWORD}`).toString('base64'),
    PASSPHRASE, encodeURIComponent(PASSPHRASE),
  ];
  let sandbox: SandboxHandle;
  let proxy: ForwardProxy;
  afterEach(async () => {
    await sandbox.close();
    await proxy.close();
  });

  it('stay out of stdout, stderr (plain and --json-log), every byte of the ledger and every report, when used and when refused', async () => {
    sandbox = await startHttpsSandbox({ apiKey: CANARY_KEY, agentsFile: SAMPLE_AGENTS, seed: 7, clientAuth: true });
    proxy = await startForwardProxy({ credentials: { user: PROXY_USER, password: PROXY_PASSWORD } });
    const tls = await writeTlsFiles(tmp.dir);
    const key = tmp.path('client-key.enc.pem');
    writeFileSync(key, createPrivateKey(readFileSync(tls.clientKey, 'utf8')).export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: PASSPHRASE }), { mode: 0o600 });
    const passFile = tmp.path('passphrase.txt');
    writeFileSync(passFile, `${PASSPHRASE}\n`, { mode: 0o600 });
    const base = ['run', CSV, '--mapping', MAPPING, '--base-url', sandbox.url, '--env', 'sandbox', '--ca-file', tls.ca, '--client-cert', tls.clientCert, '--client-key', key];
    const env = { QUOTE_BATCH_API_KEY: CANARY_KEY, NO_PROXY: undefined, no_proxy: undefined };
    const results: CliResult[] = [];
    for (const [name, extra, more] of [
      ['env-plain', [], { QUOTE_BATCH_CLIENT_KEY_PASSPHRASE: PASSPHRASE }],
      ['file-json', ['--json-log', '--client-key-passphrase-file', passFile], {}],
    ] as const) {
      const ledger = tmp.path(`${name}.db`);
      const result = await runCli([...base, '--ledger', ledger, '--proxy', proxy.urlWith(PROXY_USER, PROXY_PASSWORD), ...extra], { cwd: tmp.dir, env: { ...env, ...more }, timeoutMs: 60_000 });
      results.push(result);
      expect(result.code, `${name}: ${result.stderr}`).toBe(1); // row 3 is invalid
      expect(readLedger(ledger).states).toEqual({ succeeded: 2, invalid: 1 });
      expectNoSecrets(name, [result], ledger, [...PII, ...NETWORK_SECRETS]);
      for (const args of [['report', '--ledger', ledger], ['report', '--ledger', ledger, '--format', 'json'], ['report', '--ledger', ledger, '--format', 'html', '--out', tmp.path(`${name}.html`)], ['export', '--ledger', ledger], ['jobs', '--ledger', ledger]]) {
        const out = await runCli(args, { cwd: tmp.dir });
        expect(out.code, `${args.join(' ')}: ${out.stderr}`).toBe(0);
        expectNoSecrets(`${name} ${args.join(' ')}`, [out], undefined, [...PII, ...NETWORK_SECRETS]);
      }
      expect(findSecret(readFileSync(tmp.path(`${name}.html`), 'utf8'), NETWORK_SECRETS)).toBeUndefined();
    }
    expect(proxy.connects.length).toBeGreaterThan(0);
    expect(sandbox.stats().operations.quote.received).toBe(4);

    // Refused: the proxy wants other credentials (the canary is sent, and refused); the passphrase is wrong for another key.
    const strict = await startForwardProxy({ credentials: { user: PROXY_USER, password: 'another-one' } });
    try {
      const otherKey = tmp.path('other-key.enc.pem');
      writeFileSync(otherKey, generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'not the canary' }), { mode: 0o600 });
      const refused = [
        await runCli([...base, '--ledger', tmp.path('r1.db'), '--proxy', strict.urlWith(PROXY_USER, PROXY_PASSWORD)], { cwd: tmp.dir, env: { ...env, QUOTE_BATCH_CLIENT_KEY_PASSPHRASE: PASSPHRASE }, timeoutMs: 60_000 }),
        await runCli([...base, '--ledger', tmp.path('r2.db'), '--proxy', strict.urlWith(PROXY_USER, PROXY_PASSWORD), '--json-log'], { cwd: tmp.dir, env: { ...env, QUOTE_BATCH_CLIENT_KEY_PASSPHRASE: PASSPHRASE }, timeoutMs: 60_000 }),
        await runCli([...base.slice(0, -1), otherKey, '--ledger', tmp.path('r3.db')], { cwd: tmp.dir, env: { ...env, QUOTE_BATCH_CLIENT_KEY_PASSPHRASE: PASSPHRASE }, timeoutMs: 60_000 }),
        await runCli(['agents', 'dana.whitfield@example.com', '--env', 'sandbox', '--base-url', sandbox.url, '--ca-file', tls.ca, '--client-cert', tls.clientCert, '--client-key', key, '--proxy', strict.urlWith(PROXY_USER, PROXY_PASSWORD)], { cwd: tmp.dir, env: { ...env, QUOTE_BATCH_CLIENT_KEY_PASSPHRASE: PASSPHRASE }, timeoutMs: 60_000 }),
      ];
      expect(refused.map((r) => r.code)).toEqual([3, 3, 2, 3]);
      expect(strict.refused).toBeGreaterThan(0);
      expectNoSecrets('refused', refused, tmp.path('r1.db'), [...PII, ...NETWORK_SECRETS]);
      expectNoSecrets('refused --json-log', [], tmp.path('r2.db'), [...PII, ...NETWORK_SECRETS]);
    } finally {
      await strict.close();
    }
    expect(results).toHaveLength(2);
  });
});

describe('transport safety at start-up', () => {
  const tmp = useTempDir('quote-batch-security-');

  const runWith = (baseUrl: string, env: Record<string, string | undefined> = {}): Promise<CliResult> =>
    runCli(['run', CSV, '--mapping', MAPPING, '--base-url', baseUrl, '--env', 'uat', '--ledger', tmp.path('l.db'), '--quiet'], {
      cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: CANARY_KEY, ...env }, timeoutMs: 60_000,
    });

  it.each(['http://partner.example.com', 'http://10.0.0.7:8080', 'http://192.168.1.20', 'http://localhost.example.com', 'http://127.0.0.1.nip.io'])(
    'refuses the plain-HTTP base URL %s before any job is recorded or sent (exit 2)',
    async (url) => {
      const result = await runWith(url);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/https/);
      expect(result.stderr).not.toContain(CANARY_KEY);
      // The ledger may have been opened first, but no job is recorded.
      if (existsSync(tmp.path('l.db'))) expect(readLedger(tmp.path('l.db')).jobs).toEqual([]);
    },
  );

  it('accepts plain HTTP on loopback', async () => {
    const sandbox = await startCanarySandbox();
    try {
      const result = await runWith(sandbox.url.replace('127.0.0.1', 'localhost'));
      expect(result.code, result.stderr).toBe(1);
    } finally {
      await sandbox.close();
    }
  });

  it('refuses to start when NODE_TLS_REJECT_UNAUTHORIZED=0, for any command (exit 2)', async () => {
    for (const args of [
      ['run', CSV, '--mapping', MAPPING, '--base-url', 'https://partner.example.com', '--env', 'uat', '--ledger', tmp.path('l.db')],
      ['agents', 'dana.whitfield@example.com', '--base-url', 'https://partner.example.com', '--env', 'uat'],
      ['check', CSV, '--mapping', MAPPING],
    ]) {
      const result = await runCli(args, { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: CANARY_KEY, NODE_TLS_REJECT_UNAUTHORIZED: '0' }, timeoutMs: 30_000 });
      expect(result.code, args[0]).toBe(2);
      expect(result.stderr).toMatch(/NODE_TLS_REJECT_UNAUTHORIZED/);
      expect(result.stdout + result.stderr).not.toContain(CANARY_KEY);
    }
    expect(existsSync(tmp.path('l.db'))).toBe(false);
  });
});
