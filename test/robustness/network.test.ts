/**
 * Where partner ops run it (README, "Behind a proxy, with a private CA or a client certificate"):
 * the real CLI, a real forward CONNECT proxy on loopback (test/helpers/forward-proxy.ts), and the
 * sandbox over HTTPS with its own throwaway CA, trusted by --ca-file alone.
 */
import { createPrivateKey } from 'node:crypto';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { SandboxHandle } from '../../src/sandbox/index.js';
import { runCli, type CliResult } from '../helpers/cli.js';
import { startForwardProxy, type ForwardProxy } from '../helpers/forward-proxy.js';
import { PARTNER_HOST, startHttpsSandbox, testPki, writeTlsFiles, type TlsFiles } from '../helpers/https-sandbox.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { KEY, MAPPING_CSV, readLedger, SAMPLE_AGENTS, SAMPLE_CSV } from '../pipeline/_setup.js';

/** Where every sample row ends when every request is answered (samples/README.md). */
const SAMPLE_STATES = { succeeded: 176, invalid: 9, rejected: 5, duplicate: 2, agent_invalid: 8 };
/** No proxy or NO_PROXY of the machine's reaches the CLI unless a test sets one. */
const NO_PROXY_ENV = {
  HTTPS_PROXY: undefined, https_proxy: undefined, HTTP_PROXY: undefined, http_proxy: undefined,
  ALL_PROXY: undefined, all_proxy: undefined, NO_PROXY: undefined, no_proxy: undefined, NODE_EXTRA_CA_CERTS: undefined,
};

describe('the way to the partner: a proxy, a private CA, a client certificate', () => {
  const tmp = useTempDir('quote-batch-network-');
  let tls: TlsFiles;
  let sandbox: SandboxHandle | undefined;
  let proxy: ForwardProxy | undefined;

  afterEach(async () => {
    await sandbox?.close();
    await proxy?.close();
    sandbox = undefined;
    proxy = undefined;
  });

  const start = async (options: { clientAuth?: boolean } = {}): Promise<{ sandbox: SandboxHandle; tls: TlsFiles }> => {
    tls = await writeTlsFiles(tmp.dir);
    sandbox = await startHttpsSandbox({ apiKey: KEY, agentsFile: SAMPLE_AGENTS, seed: 7, ...options });
    return { sandbox, tls };
  };
  const run = (baseUrl: string, args: string[], env: Record<string, string | undefined> = {}): Promise<CliResult> =>
    runCli(['run', SAMPLE_CSV, '--mapping', MAPPING_CSV, '--base-url', baseUrl, '--env', 'sandbox', '--ledger', tmp.path('l.db'), '--quiet', ...args], {
      cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: KEY, ...NO_PROXY_ENV, ...env }, timeoutMs: 90_000,
    });
  const timed = async (work: () => Promise<CliResult>): Promise<CliResult & { ms: number }> => {
    const t0 = Date.now();
    const result = await work();
    return { ...result, ms: Date.now() - t0 };
  };
  const hostPort = (s: SandboxHandle): string => new URL(s.url).host;

  describe('through a forward proxy', () => {
    it('sends every connection through the proxy, keeping tunnels alive, and every request is answered; with NO_PROXY naming the host, none', async () => {
      const { sandbox: s, tls: files } = await start();
      proxy = await startForwardProxy();
      const result = await run(s.url, ['--proxy', proxy.url, '--ca-file', files.ca]);
      expect(result.code, result.stderr).toBe(1); // the samples hold rows to fix
      expect(readLedger(tmp.path('l.db')).states).toEqual(SAMPLE_STATES);
      const stats = s.stats();
      const requests = stats.operations.validate.received + stats.operations.quote.received;
      // Every connection the sandbox accepted came through a tunnel of the proxy (to it, no other).
      expect(proxy.connects.length).toBeGreaterThan(0);
      expect(stats.connections.accepted).toBe(proxy.connects.length);
      expect(new Set(proxy.connects)).toEqual(new Set([hostPort(s)]));
      // Keep-alive through the tunnel: far fewer tunnels than requests (at most one per request in flight, 8).
      expect(requests).toBeGreaterThanOrEqual(190);
      expect(proxy.connects.length).toBeLessThanOrEqual(16);

      s.reset();
      const tunnels = proxy.connects.length;
      for (const noProxy of ['127.0.0.1', `127.0.0.1:${new URL(s.url).port}`, '127.0.0.0/8']) {
        const direct = await run(s.url, ['--proxy', proxy.url, '--ca-file', files.ca, '--fresh'], { NO_PROXY: noProxy });
        expect(direct.code, direct.stderr).toBe(1);
      }
      expect(proxy.connects.length).toBe(tunnels);
      expect(s.stats().operations.quote.received).toBeGreaterThanOrEqual(3 * 181);
    });

    it('reads HTTPS_PROXY and NO_PROXY as curl does, for a partner only the proxy can reach; the config file names the proxy and the CA too', async () => {
      const { sandbox: s, tls: files } = await start();
      proxy = await startForwardProxy({ hosts: { [PARTNER_HOST]: '127.0.0.1' } });
      const partner = `https://${PARTNER_HOST}:${new URL(s.url).port}`;
      const viaEnv = await run(partner, ['--ca-file', files.ca, '--limit', '30'], { https_proxy: proxy.url, NO_PROXY: 'localhost,.other.test' });
      expect(viaEnv.code, viaEnv.stderr).toBe(3); // --limit: not completed
      expect(readLedger(tmp.path('l.db')).states.succeeded).toBeGreaterThan(20);
      expect(proxy.connects.every((c) => c === `${PARTNER_HOST}:${new URL(s.url).port}`)).toBe(true);
      const tunnels = proxy.connects.length;
      expect(tunnels).toBeGreaterThan(0);

      // The config file: defaults.proxy, and the environment's CA file.
      writeFileSync(tmp.path('quote-batch.config.yaml'), `environments:\n  uat:\n    base_url: ${partner}\n    ca: ${files.ca}\ndefaults:\n  proxy: ${proxy.url}\n`);
      const viaConfig = await runCli(['agents', 'dana.whitfield@example.com', '--env', 'uat'], { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: KEY, ...NO_PROXY_ENV } });
      expect(viaConfig.code, viaConfig.stderr).toBe(0);
      expect(viaConfig.stdout).toMatch(/dana\.whitfield@example\.com\s+yes/);
      expect(viaConfig.stderr).toContain(`through the proxy ${proxy.url} (the config file's proxy:)`);
      expect(proxy.connects.length).toBe(tunnels + 1);

      // NO_PROXY covers the partner by its domain: sent straight, where the name does not resolve. No tunnel.
      const straight = await runCli(['agents', 'dana.whitfield@example.com', '--env', 'uat'], { cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: KEY, ...NO_PROXY_ENV, NO_PROXY: 'example.test' } });
      expect(straight.code).toBe(3);
      expect(straight.stderr).toContain('straight, no proxy (NO_PROXY has example.test)');
      expect(straight.stderr).toMatch(/ENOTFOUND|EAI_AGAIN/);
      expect(proxy.connects.length).toBe(tunnels + 1);
    });

    it('an https:// proxy: its own certificate is checked against the same CAs as the partner\'s', async () => {
      const { sandbox: s, tls: files } = await start();
      const { serverCert, serverKey } = await testPki();
      proxy = await startForwardProxy({ tls: { cert: serverCert, key: serverKey } });
      expect(proxy.url).toMatch(/^https:/);
      const agents = (extra: string[]): Promise<CliResult> => runCli(['agents', 'dana.whitfield@example.com', '--env', 'sandbox', '--base-url', s.url, '--proxy', proxy!.url, ...extra], {
        cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: KEY, ...NO_PROXY_ENV },
      });
      const ok = await agents(['--ca-file', files.ca]);
      expect(ok.code, ok.stderr).toBe(0);
      expect(proxy.connects).toEqual([hostPort(s)]);
      // Without the CA, the proxy's certificate is not trusted: no tunnel, and the message names the proxy.
      const untrusted = await agents([]);
      expect(untrusted.code).toBe(3);
      expect(untrusted.stderr).toMatch(/no connection to the proxy https:\/\/127\.0\.0\.1:\d+: .*(self-signed|unable to verify)/);
      expect(proxy.connects).toHaveLength(1);
    });

    it('407: halts at once with exit 3, naming the proxy and not the key; the right credentials pass', async () => {
      const { sandbox: s, tls: files } = await start();
      proxy = await startForwardProxy({ credentials: { user: 'ops', password: 'pr0xy-secret' } });
      for (const [url, said] of [[proxy.url, 'its URL gives none'], [proxy.urlWith('ops', 'wrong'), 'refused the user and password given']] as const) {
        const refused = await timed(() => run(s.url, ['--proxy', url, '--ca-file', files.ca, '--fresh']));
        expect(refused.code, refused.stderr).toBe(3);
        expect(refused.stderr).toContain(`the proxy ${proxy.url} answered 407 Proxy Authentication Required`);
        expect(refused.stderr).toContain(said);
        expect(refused.stderr).toMatch(/run finished: job not completed: the proxy refused its credentials \(407\); fix the proxy URL's user and password/);
        expect(refused.stderr).not.toMatch(/API key \(/);
        expect(refused.ms).toBeLessThan(15_000);
      }
      // Under --json-log the halt carries its code and hint.
      const json = await run(s.url, ['--proxy', proxy.url, '--ca-file', files.ca, '--fresh', '--json-log']);
      expect(json.code).toBe(3);
      const halt = json.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.event === 'halt');
      expect(halt).toMatchObject({ code: 'E_PROXY_AUTH', exit_code: 3 });
      expect(String(halt?.hint)).toMatch(/user and password in its URL/);
      // Not retried: one CONNECT per request that was in flight when the first 407 came (8 at most each run).
      expect(proxy.refused).toBeLessThanOrEqual(24);
      expect(s.stats().operations.validate.received).toBe(0);
      const ledger = readLedger(tmp.path('l.db'));
      expect(ledger.states.failed).toBeUndefined();
      expect(ledger.states.in_doubt).toBeUndefined();

      const ok = await run(s.url, ['--proxy', proxy.urlWith('ops', 'pr0xy-secret'), '--ca-file', files.ca, '--fresh']);
      expect(ok.code, ok.stderr).toBe(1);
      expect(readLedger(tmp.path('l.db')).states).toEqual(SAMPLE_STATES);
    });

    it('proxy up, partner unreachable: an outage of the way out, whose message names the proxy hop', async () => {
      const { sandbox: s, tls: files } = await start();
      const closedUrl = s.url;
      await s.close(); // the proxy answers CONNECT to a closed port with 500
      proxy = await startForwardProxy();
      const result = await timed(() => run(closedUrl, ['--proxy', proxy!.url, '--ca-file', files.ca, '--max-consecutive-failures', '2', '--max-outage', '2s']));
      expect(result.code, result.stderr).toBe(3);
      expect(result.stderr).toContain(`stopped at the proxy hop: the proxy ${proxy.url} answered 500 Internal Server Error to CONNECT`);
      expect(result.stderr).toMatch(/no request of this run has got through the proxy http:\/\/127\.0\.0\.1:\d+ to https:\/\/127\.0\.0\.1:\d+/);
      expect(result.ms).toBeLessThan(45_000);
      expect(proxy.connects.length).toBeGreaterThanOrEqual(2);
      const states = readLedger(tmp.path('l.db')).states;
      expect(states.in_doubt).toBeUndefined();
      expect(states.succeeded).toBeUndefined();
    });

    it('a tunnel cut after the request was sent leaves its row in_doubt, as any cut answer', async () => {
      const { sandbox: s, tls: files } = await start();
      // Quote requests are over 1,500 bytes; the handshake and agent validations under 1,000.
      proxy = await startForwardProxy({ cutAnswersToRequestsOver: 1200 });
      const result = await run(s.url, ['--proxy', proxy.url, '--ca-file', files.ca, '--concurrency', '2', '--no-adaptive', '--limit', '30']);
      expect(result.code, result.stderr).toBe(3);
      const states = readLedger(tmp.path('l.db')).states;
      expect(states.in_doubt).toBeGreaterThan(0);
      expect(states.succeeded).toBeUndefined();
      expect(states.failed).toBeUndefined();
      expect(proxy.cut).toBeGreaterThanOrEqual(states.in_doubt as number);
      // The requests reached the partner: that is why they may not be sent again.
      expect(s.stats().operations.quote.received).toBeGreaterThanOrEqual(states.in_doubt as number);
      expect(s.stats().operations.validate.statuses['200']).toBeGreaterThan(0);
    });
  });

  describe('mutual TLS', () => {
    it('with the client certificate, rows succeed; without, the run halts at once with a hint, not retried as an outage', async () => {
      const { sandbox: s, tls: files } = await start({ clientAuth: true });
      const ok = await run(s.url, ['--ca-file', files.ca, '--client-cert', files.clientCert, '--client-key', files.clientKey]);
      expect(ok.code, ok.stderr).toBe(1);
      expect(readLedger(tmp.path('l.db')).states).toEqual(SAMPLE_STATES);
      expect(s.stats().connections.refused).toBe(0);

      s.reset();
      const refused = await timed(() => run(s.url, ['--ca-file', files.ca, '--fresh']));
      expect(refused.code, refused.stderr).toBe(3);
      expect(refused.stderr).toMatch(/refused the TLS connection .*certificate required.*: it asks for a client certificate \(mutual TLS\), and none was given/);
      expect(refused.stderr).toMatch(/run finished: job not completed: the partner refused the TLS connection without a client certificate it trusts; give it with --client-cert and --client-key/);
      expect(refused.ms).toBeLessThan(15_000);
      // Each request in flight met the refusal once; none was tried again, none was read.
      expect(s.stats().connections.refused).toBeGreaterThan(0);
      expect(s.stats().connections.refused).toBeLessThanOrEqual(8);
      expect(s.stats().operations.validate.received).toBe(0);
      const states = readLedger(tmp.path('l.db')).states;
      expect(states.in_doubt).toBeUndefined();
      expect(states.failed).toBeUndefined();
    });

    it('an untrusted partner certificate halts at once, naming --ca-file; TLS verification is never turned off', async () => {
      const { sandbox: s } = await start();
      const result = await timed(() => run(s.url, []));
      expect(result.code, result.stderr).toBe(3);
      expect(result.stderr).toMatch(/the TLS certificate of https:\/\/127\.0\.0\.1:\d+ is not trusted \((UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN)/);
      expect(result.stderr).toMatch(/run finished: job not completed: the partner's TLS certificate is not trusted; give its CA with --ca-file/);
      expect(result.ms).toBeLessThan(15_000);
      expect(s.stats().operations.validate.received).toBe(0);
    });

    it('an encrypted client key takes its passphrase from QUOTE_BATCH_CLIENT_KEY_PASSPHRASE or a file, never a flag; a wrong one, or a key others may read, is a configuration error', async () => {
      const { sandbox: s, tls: files } = await start({ clientAuth: true });
      const passphrase = 'correct horse battery';
      const encrypted = tmp.path('client-key.enc.pem');
      writeFileSync(encrypted, createPrivateKey(readFileSync(files.clientKey, 'utf8'))
        .export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase }), { mode: 0o600 });
      const passFile = tmp.path('passphrase.txt');
      writeFileSync(passFile, `${passphrase}\n`, { mode: 0o600 });
      const agents = (extra: string[], env: Record<string, string | undefined> = {}): Promise<CliResult> =>
        runCli(['agents', 'dana.whitfield@example.com', '--env', 'sandbox', '--base-url', s.url, '--ca-file', files.ca, '--client-cert', files.clientCert, ...extra], {
          cwd: tmp.dir, env: { QUOTE_BATCH_API_KEY: KEY, ...NO_PROXY_ENV, ...env },
        });

      const fromEnv = await agents(['--client-key', encrypted], { QUOTE_BATCH_CLIENT_KEY_PASSPHRASE: passphrase });
      expect(fromEnv.code, fromEnv.stderr).toBe(0);
      const fromFile = await agents(['--client-key', encrypted, '--client-key-passphrase-file', passFile]);
      expect(fromFile.code, fromFile.stderr).toBe(0);

      const none = await agents(['--client-key', encrypted]);
      expect(none.code).toBe(2);
      expect(none.stderr).toMatch(/client key .* is encrypted and no passphrase is given/);
      const wrong = await agents(['--client-key', encrypted], { QUOTE_BATCH_CLIENT_KEY_PASSPHRASE: 'not it' });
      expect(wrong.code).toBe(2);
      expect(wrong.stderr).toMatch(/the passphrase from QUOTE_BATCH_CLIENT_KEY_PASSPHRASE does not decrypt the client key/);
      const asFlag = await agents(['--client-key', encrypted, '--client-key-passphrase', passphrase]);
      expect(asFlag.code).toBe(2);
      expect(asFlag.stderr).toMatch(/unknown option '--client-key-passphrase'/);

      chmodSync(files.clientKey, 0o644);
      const readable = await agents(['--client-key', files.clientKey]);
      expect(readable.code).toBe(2);
      expect(readable.stderr).toMatch(/client key .*client-key\.pem is readable by other users \(mode 0644\)/);
      expect(readable.stderr).toMatch(/hint: .*chmod 600/);
      chmodSync(passFile, 0o640);
      const readablePass = await agents(['--client-key', encrypted, '--client-key-passphrase-file', passFile]);
      expect(readablePass.code).toBe(2);
      expect(readablePass.stderr).toMatch(/passphrase file .* is readable by other users/);
      for (const r of [fromEnv, fromFile, none, wrong, readable, readablePass]) expect(r.stdout + r.stderr).not.toContain(passphrase);
      expect(s.stats().operations.validate.received).toBe(2);
    });
  });
});
