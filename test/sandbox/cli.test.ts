// The `quote-batch sandbox` command, spawned as the real binary.
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testPki } from '../helpers/https-sandbox.js';
import { AGENTS_FILE, post, VALIDATE } from './_client.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'bin', 'quote-batch.js');
let dir: string;
const children: ChildProcessWithoutNullStreams[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'quote-batch-sandbox-cli-'));
});
afterAll(() => {
  // A failed assertion must not leave a sandbox running.
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

interface Running {
  child: ChildProcessWithoutNullStreams;
  url: string;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<number | null>;
}

/** Spawns the sandbox and resolves once it printed its address (gives up after 20 s). */
function spawnSandbox(args: string[], env: Record<string, string> = {}): Promise<Running> {
  const cleanEnv: Record<string, string> = { PATH: process.env.PATH ?? '', NO_COLOR: '1', ...env };
  const child = spawn(process.execPath, [BIN, 'sandbox', ...args], { cwd: dir, env: cleanEnv });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`sandbox did not print its address; stdout: ${stdout}; stderr: ${stderr}`));
    }, 20_000);
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /^quote-batch sandbox listening on (https?:\/\/127\.0\.0\.1:\d+)$/m.exec(stdout);
      if (match !== null) {
        clearTimeout(timer);
        resolve({ child, url: match[1]!, stdout: () => stdout, stderr: () => stderr, exit });
      }
    });
    void exit.then((code) => {
      clearTimeout(timer);
      reject(new Error(`sandbox exited with ${String(code)} before listening; stderr: ${stderr}`));
    });
  });
}

describe('quote-batch sandbox over HTTPS', () => {
  const agents = (url: string, args: string[]): ReturnType<typeof spawnSync> =>
    spawnSync(process.execPath, [BIN, 'agents', 'valid.agent@example.com', '--env', 'sandbox', '--base-url', url, ...args], {
      cwd: dir, env: { PATH: process.env.PATH ?? '', NO_COLOR: '1' }, encoding: 'utf8', timeout: 30_000,
    });

  it('--tls --tls-client-auth: a throwaway CA and a client certificate in files it names, removed on stop; agents checks the way through', async () => {
    const running = await spawnSandbox(['--port', '0', '--agents', AGENTS_FILE, '--tls', '--tls-client-auth']);
    expect(running.url).toMatch(/^https:/);
    const ca = /trust it with --ca-file (\S+)$/m.exec(running.stdout())?.[1] as string;
    const [, cert, key] = /client certificates: required; one is at --client-cert (\S+) --client-key (\S+)$/m.exec(running.stdout()) ?? [];
    expect(readFileSync(ca, 'utf8')).toMatch(/^-----BEGIN CERTIFICATE-----/);
    expect(statSync(key as string).mode & 0o777).toBe(0o600);
    const ok = agents(running.url, ['--ca-file', ca, '--client-cert', cert as string, '--client-key', key as string]);
    expect(ok.status, String(ok.stderr)).toBe(0);
    expect(String(ok.stdout)).toMatch(/valid\.agent@example\.com\s+yes/);
    const noCert = agents(running.url, ['--ca-file', ca]);
    expect(noCert.status).toBe(3);
    expect(String(noCert.stderr)).toMatch(/refused the TLS connection .*: it asks for a client certificate/);
    const noCa = agents(running.url, []);
    expect(noCa.status).toBe(3);
    expect(String(noCa.stderr)).toMatch(/is not trusted .*\nhint: .*--ca-file/);
    running.child.kill('SIGTERM');
    expect(await running.exit).toBe(0);
    expect(existsSync(dirname(ca))).toBe(false);
  });

  it('--tls-cert and --tls-key serve the user\'s own certificate; --tls-client-ca requires a client certificate of that CA', async () => {
    const pki = await testPki();
    for (const [name, text] of [['server.pem', pki.serverCert], ['server-key.pem', pki.serverKey], ['ca.pem', pki.caCert], ['client.pem', pki.clientCert], ['client-key.pem', pki.clientKey]] as const) {
      writeFileSync(join(dir, name), text ?? '', { mode: 0o600 });
    }
    const running = await spawnSandbox(['--port', '0', '--agents', AGENTS_FILE, '--tls-cert', 'server.pem', '--tls-key', 'server-key.pem', '--tls-client-ca', 'ca.pem']);
    try {
      expect(running.stdout()).toContain('client certificates: required (--tls-client-ca)');
      expect(agents(running.url, ['--ca-file', 'ca.pem', '--client-cert', 'client.pem', '--client-key', 'client-key.pem']).status).toBe(0);
      expect(agents(running.url, ['--ca-file', 'ca.pem']).status).toBe(3);
    } finally {
      running.child.kill('SIGTERM');
      await running.exit;
    }
    const both = spawnSync(process.execPath, [BIN, 'sandbox', '--tls', '--tls-cert', 'server.pem', '--tls-key', 'server-key.pem'], { cwd: dir, encoding: 'utf8' });
    expect(both.status).toBe(2);
    expect(both.stderr).toMatch(/give either --tls or --tls-cert and --tls-key/);
  });
});

describe('quote-batch sandbox', () => {
  it('prints its address, accepts sandbox-key by default and exits 0 on SIGTERM', async () => {
    const running = await spawnSandbox(['--port', '0', '--agents', AGENTS_FILE]);
    expect(running.stdout()).toContain('sandbox-key');
    const reply = await post(running.url, VALIDATE, { email: 'valid.agent@example.com' }, 'sandbox-key');
    expect(reply.json).toStrictEqual({ status: 'success', message: 'User verification success', data: { is_valid: true, agent_id: 'xyz-100200300' } });
    running.child.kill('SIGTERM');
    expect(await running.exit).toBe(0);
    expect(running.stderr()).toMatch(/stopped after 1 request/);
  });

  it('accepts the key from QUOTE_BATCH_API_KEY without printing it', async () => {
    const secret = 'env-secret-7f3a9c';
    const running = await spawnSandbox(['--port', '0', '--agents', AGENTS_FILE], { QUOTE_BATCH_API_KEY: secret });
    try {
      expect((await post(running.url, VALIDATE, { email: 'valid.agent@example.com' }, secret)).status).toBe(200);
      expect((await post(running.url, VALIDATE, { email: 'valid.agent@example.com' }, 'sandbox-key')).status).toBe(403);
      expect(running.stdout()).toContain('QUOTE_BATCH_API_KEY');
    } finally {
      running.child.kill('SIGINT');
    }
    expect(await running.exit).toBe(0);
    expect(running.stdout() + running.stderr()).not.toContain(secret);
  });

  it('accepts the key from --api-key-file (trailing newline trimmed) and applies fault flags', async () => {
    const keyFile = join(dir, 'key.txt');
    writeFileSync(keyFile, 'file-secret-42b1\n');
    const running = await spawnSandbox(['--port', '0', '--agents', AGENTS_FILE, '--api-key-file', keyFile, '--throttle-rate', '1', '--retry-after', '4']);
    try {
      const reply = await post(running.url, VALIDATE, { email: 'valid.agent@example.com' }, 'file-secret-42b1');
      expect(reply.status).toBe(429);
      expect(reply.headers.get('retry-after')).toBe('4');
      expect(running.stdout()).toMatch(/throttleRate=1/);
    } finally {
      running.child.kill('SIGTERM');
    }
    expect(await running.exit).toBe(0);
    expect(running.stdout()).not.toContain('file-secret-42b1');
  });

  it('applies the load flags of a benchmark profile and prints them', async () => {
    const running = await spawnSandbox([
      '--port', '0', '--agents', AGENTS_FILE, '--latency-ms', '200', '--latency-sigma', '0.43', '--rps-mode', 'bucket',
      '--rps-burst', '5', '--rps-cap-schedule', '0:40, 30:20', '--capacity', '16', '--queue-limit', '64',
    ]);
    try {
      const faults = await (await fetch(`${running.url}/__sandbox/faults`)).json();
      expect(faults).toMatchObject({
        latencyMs: 200, latencySigma: 0.43, rpsMode: 'bucket', rpsBurst: 5, rpsCapSchedule: '0:40,30:20', capacity: 16, queueLimit: 64,
      });
      expect(running.stdout()).toContain(
        'faults (seed 1): latencyMs=200, latencySigma=0.43, rpsMode=bucket, rpsBurst=5, rpsCapSchedule=0:40,30:20, capacity=16, queueLimit=64',
      );
    } finally {
      running.child.kill('SIGTERM');
    }
    expect(await running.exit).toBe(0);
  });

  it.each([
    [['--rps-cap-schedule', '0:40,30'], /--rps-cap-schedule expects "seconds:cap,…" .*; "30" is not seconds:cap/],
    [['--rps-cap-schedule', '30:20,0:40'], /seconds must increase, got 30 then 0/],
    [['--rps-mode', 'tokens'], /--rps-mode expects "window" or "bucket", got "tokens"/],
    [['--latency-sigma', '-1'], /--latency-sigma expects a number from 0 to 3/],
    [['--capacity', '1.5'], /--capacity expects a non-negative integer/],
  ])('exits 2 naming the flag for %j', (args, message) => {
    const result = spawnSync(process.execPath, [BIN, 'sandbox', '--agents', AGENTS_FILE, ...args], {
      cwd: dir, encoding: 'utf8', env: { PATH: process.env.PATH ?? '' }, timeout: 20_000,
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(message);
  });

  it('exits 2 with a one-line error for a missing agents file, a bad flag or a public host', () => {
    const missing = spawnSync(process.execPath, [BIN, 'sandbox', '--port', '0', '--agents', 'absent.csv'], {
      cwd: dir, encoding: 'utf8', env: { PATH: process.env.PATH ?? '' }, timeout: 20_000,
    });
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/cannot read the sandbox agents file .*absent\.csv/);
    const bad = spawnSync(process.execPath, [BIN, 'sandbox', '--fail-rate', '2'], {
      cwd: dir, encoding: 'utf8', env: { PATH: process.env.PATH ?? '' }, timeout: 20_000,
    });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--fail-rate expects a number from 0 to 1/);
    const host = spawnSync(process.execPath, [BIN, 'sandbox', '--host', '0.0.0.0', '--agents', AGENTS_FILE], {
      cwd: dir, encoding: 'utf8', env: { PATH: process.env.PATH ?? '' }, timeout: 20_000,
    });
    expect(host.status).toBe(2);
    expect(host.stderr).toMatch(/loopback only/);
  });
});
