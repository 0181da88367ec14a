/**
 * A base URL that has not answered once in the run (README, "When the partner goes down"): a host
 * name that does not resolve, a port that refuses the connection, TLS spoken to a plain HTTP port.
 * The run halts within seconds (exit 3) naming the host and what to check, instead of waiting out
 * --max-outage; no row is given up. Once the partner has answered, the same failures are an outage
 * as before. The real CLI, over loopback (and the resolver, for a `.invalid` name).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxHandle } from '../../src/sandbox/index.js';
import { runCli, type CliResult } from '../helpers/cli.js';
import { startMisbehavingPartner } from '../helpers/misbehaving-partner.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { findClosedPort } from '../partner/_scripted-server.js';
import { MAPPING_CSV, readLedger, SAMPLE_CSV } from '../pipeline/_setup.js';
import { CANARY_KEY, expectNoSecrets, startCanarySandbox } from '../robustness/_shared.js';

describe('a base URL that never answered', () => {
  const tmp = useTempDir('quote-batch-unreachable-');
  let plain: Server;
  let plainPort: number;

  beforeAll(async () => {
    // A plain HTTP server, for TLS spoken to it.
    plain = createServer((_req, res) => res.end('{}'));
    await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
    plainPort = (plain.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => plain.close(() => resolve()));
  });

  async function run(baseUrl: string, extra: readonly string[] = []): Promise<{ result: CliResult; ms: number; ledger: string }> {
    const ledger = tmp.path(`l-${Math.random().toString(36).slice(2)}.db`);
    const started = Date.now();
    const result = await runCli(
      ['run', SAMPLE_CSV, '--mapping', MAPPING_CSV, '--base-url', baseUrl, '--env', 'sandbox', '--ledger', ledger, ...extra],
      { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: CANARY_KEY }, timeoutMs: 60_000 },
    );
    return { result, ms: Date.now() - started, ledger };
  }

  it.each([
    ['a host name that does not resolve', () => 'https://no-such-host.invalid', 'https://no-such-host.invalid',
      'its host name no-such-host.invalid does not resolve (ENOTFOUND)', 'check the spelling of no-such-host.invalid'],
    ['a port that refuses the connection', (port: number) => `http://127.0.0.1:${port}`, 'http://127.0.0.1:PORT',
      '127.0.0.1:PORT refused the connection (ECONNREFUSED)', 'check the port of 127.0.0.1:PORT'],
  ] as const)('%s: exit 3 within 10 s, naming the host, with a hint; nothing given up', async (_name, url, shown, why, hint) => {
    const port = await findClosedPort();
    const at = (text: string) => text.replace('PORT', String(port));
    const { result, ms, ledger } = await run(url(port));
    expect(ms).toBeLessThan(10_000);
    expect(result.code, result.stderr).toBe(3);
    const reason = `the base URL ${at(shown)} has not answered once in this run: ${at(why)}`;
    expect(result.stderr).toContain(`error: halting: ${reason}\nhint: ${at(hint)}`);
    expect(result.stdout).toContain(`exit 3: job not completed: ${reason}; fix the base URL (--base-url, --env, QUOTE_BATCH_*_URL or the config file), then run the same command again`);
    expect(result.stderr).not.toMatch(/looks down/);
    const view = readLedger(ledger);
    expect(view.runs.at(-1)?.status).toBe('halted');
    expect(Object.keys(view.states).filter((s) => s !== 'pending' && s !== 'invalid')).toEqual([]);
    // The hint, as --json-log carries it.
    const json = await run(url(port), ['--json-log']);
    const halt = json.result.stderr.trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.event === 'halt');
    expect(halt).toMatchObject({ level: 'error', code: 'E_UNREACHABLE', exit_code: 3, msg: `halting: ${reason}`, hint: expect.stringContaining(at(hint)) });
    expectNoSecrets('unreachable', [result, json.result], ledger);
  }, 60_000);

  it('TLS spoken to a plain HTTP port: exit 3 at once, saying TLS failed, never in doubt', async () => {
    const { result, ms, ledger } = await run(`https://127.0.0.1:${plainPort}`, ['--json-log']);
    expect(ms).toBeLessThan(10_000);
    expect(result.code, result.stderr).toBe(3);
    const halt = result.stderr.trimEnd().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.event === 'halt');
    expect(halt).toMatchObject({
      code: 'E_UNREACHABLE',
      msg: `halting: the base URL https://127.0.0.1:${plainPort} has not answered once in this run: TLS with 127.0.0.1:${plainPort} failed (EPROTO)`,
      hint: expect.stringMatching(/not a plain HTTP port.*never turns verification off/),
    });
    expect(readLedger(ledger).states.in_doubt ?? 0).toBe(0);
  }, 30_000);
});

describe('a base URL that answered, then stopped', () => {
  const tmp = useTempDir('quote-batch-unreachable-later-');
  let sandbox: SandboxHandle;
  beforeAll(async () => {
    sandbox = await startCanarySandbox();
  });
  afterAll(async () => {
    await sandbox.close();
  });

  it('connections refused after the first answers are an outage: the breaker, then --max-outage', async () => {
    let partnerUrl = '';
    let closing: Promise<void> | undefined;
    const partner = await startMisbehavingPartner(sandbox.url, (r) => {
      // Twenty quotes answered, then the partner's port closes: every later connection is refused.
      if (r.operation === 'quote' && r.n === 20) closing ??= partner.close();
      return { kind: 'forward' };
    });
    partnerUrl = partner.url;
    const ledger = tmp.path('later.db');
    const result = await runCli(
      ['run', SAMPLE_CSV, '--mapping', MAPPING_CSV, '--base-url', partnerUrl, '--env', 'sandbox', '--ledger', ledger, '--max-outage', '3s', '--concurrency', '2'],
      { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: CANARY_KEY }, timeoutMs: 60_000 },
    );
    await closing;
    expect(result.code, result.stderr).toBe(3);
    // The requests on the wire when the port closed were reset (in doubt); later ones were refused.
    expect(result.stderr).toMatch(/warning: the partner looks down \(quotes\/leads\)/);
    expect(result.stderr).toMatch(/error: halting: the partner did not recover within --max-outage \(3s; quotes\/leads failing for \d+s; last attempt ECONNREFUSED, no answer\)/);
    expect(result.stderr).not.toMatch(/has not answered once/);
    expect(readLedger(ledger).states.succeeded ?? 0).toBeGreaterThan(0);
  }, 60_000);
});
