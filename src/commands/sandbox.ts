/**
 * `quote-batch sandbox`: serves the local imitation of the partner API until Ctrl-C / SIGTERM.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { InvalidArgumentError } from 'commander';
import { QuoteBatchError } from '../errors.js';
import {
  ANNOUNCE_STYLES, DEFAULT_FAULTS, DEFAULT_SANDBOX_API_KEY, DEFAULT_SANDBOX_SEED, parseRpsSchedule, SCHEDULE_SYNTAX, startSandbox, type SandboxFaults,
} from '../sandbox/index.js';
import { PACKAGE_ROOT } from '../version.js';
import { jsonLogOption, parseCount, parseDurationFlag, parseNumberIn, type RegisterCommand } from './context.js';

interface SandboxFlags {
  port: number;
  host: string;
  agents?: string;
  apiKeyFile?: string;
  seed: number;
  latencyMs?: number;
  latencySigma?: number;
  jitterMs?: number;
  failRate?: number;
  throttleRate?: number;
  retryAfter?: number;
  retryAfterFormat?: string;
  resetBeforeRate?: number;
  resetAfterRate?: number;
  hangRate?: number;
  upstreamErrorRate?: number;
  rpsCap?: number;
  rpsMode?: SandboxFaults['rpsMode'];
  rpsBurst?: number;
  rpsCapAnswer?: string;
  rpsCapSchedule?: string;
  capacity?: number;
  queueLimit?: number;
  announceLimit?: SandboxFaults['announceLimit'];
  announceFactor?: number;
  quota?: number;
  quotaWindow?: number;
  tls?: boolean;
  tlsDir?: string;
  tlsCert?: string;
  tlsKey?: string;
  tlsClientCa?: string;
  tlsClientAuth?: boolean;
}

/** `./samples/agents.csv` in the working directory, else the copy shipped with the package. */
function defaultAgentsFile(cwd: string): string {
  const local = resolve(cwd, 'samples', 'agents.csv');
  if (existsSync(local)) return local;
  const shipped = resolve(PACKAGE_ROOT, 'samples', 'agents.csv');
  return existsSync(shipped) ? shipped : local;
}

/** The key and a description of where it came from that never contains the key itself. */
function resolveApiKey(flags: SandboxFlags, env: Readonly<Record<string, string | undefined>>, cwd: string): { key: string; source: string } {
  if (flags.apiKeyFile !== undefined) {
    const path = resolve(cwd, flags.apiKeyFile);
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      throw new QuoteBatchError('E_CONFIG', `cannot read the API key file ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`, { cause: error });
    }
    const key = text.replace(/\r?\n$/, '').trim();
    if (key === '') throw new QuoteBatchError('E_CONFIG', `the API key file ${path} is empty`);
    return { key, source: `the key in --api-key-file ${path}` };
  }
  const fromEnv = env.QUOTE_BATCH_API_KEY;
  if (fromEnv !== undefined && fromEnv.trim() !== '') return { key: fromEnv.trim(), source: 'the key in QUOTE_BATCH_API_KEY' };
  return { key: DEFAULT_SANDBOX_API_KEY, source: `the default key "${DEFAULT_SANDBOX_API_KEY}" (set QUOTE_BATCH_API_KEY or --api-key-file to change it)` };
}

/** Parses `--rps-cap-schedule "0:40,30:20"`; a bad one is a usage error that shows the syntax. */
function parseSchedule(value: string): string {
  const parsed = parseRpsSchedule(value);
  if (!parsed.ok) {
    throw new InvalidArgumentError(`--rps-cap-schedule expects ${SCHEDULE_SYNTAX}; ${parsed.reason}`);
  }
  return value;
}

function parseAnnounceStyle(value: string): SandboxFaults['announceLimit'] {
  const style = ANNOUNCE_STYLES.find((known) => known === value);
  if (style === undefined) throw new InvalidArgumentError(`--announce-limit expects ${ANNOUNCE_STYLES.join(', ')}, got "${value}"`);
  return style;
}

function parseRpsMode(value: string): SandboxFaults['rpsMode'] {
  if (value !== 'window' && value !== 'bucket') throw new InvalidArgumentError(`--rps-mode expects "window" or "bucket", got "${value}"`);
  return value;
}

/** The settings that differ from the defaults, as `name=value` (the key is not among them). */
function describeFaults(faults: SandboxFaults): string[] {
  return Object.entries(faults)
    .filter(([name, value]) => value !== DEFAULT_FAULTS[name as keyof SandboxFaults])
    .map(([name, value]) => `${name}=${String(value)}`);
}

/**
 * The sandbox's HTTPS settings from its flags: the user's certificate and key, or a throwaway CA
 * (`--tls`) whose files are written where a client can be pointed at them; `lines` say where.
 * `remove` deletes a temporary directory the sandbox made (not one the user named).
 */
async function sandboxTls(flags: SandboxFlags, cwd: string): Promise<{ options: { cert: string; key: string; clientCa?: string }; lines: string[]; remove: () => void } | undefined> {
  const own = flags.tlsCert !== undefined || flags.tlsKey !== undefined;
  if (flags.tls === true && own) throw new QuoteBatchError('E_USAGE', '--tls makes its own certificate: give either --tls or --tls-cert and --tls-key');
  if (flags.tls !== true && (flags.tlsDir !== undefined || flags.tlsClientAuth === true)) throw new QuoteBatchError('E_USAGE', '--tls-dir and --tls-client-auth go with --tls');
  if (flags.tlsClientAuth === true && flags.tlsClientCa !== undefined) throw new QuoteBatchError('E_USAGE', '--tls-client-auth uses the throwaway CA: leave --tls-client-ca out');
  const readPem = (file: string, flag: string): string => {
    try {
      return readFileSync(resolve(cwd, file), 'utf8');
    } catch (error) {
      throw new QuoteBatchError('E_CONFIG', `${flag} ${resolve(cwd, file)} cannot be read: ${(error as NodeJS.ErrnoException).code ?? 'error'}`, { cause: error });
    }
  };
  const clientCa = flags.tlsClientCa === undefined ? undefined : readPem(flags.tlsClientCa, '--tls-client-ca');
  if (own) {
    if (flags.tlsCert === undefined || flags.tlsKey === undefined) throw new QuoteBatchError('E_USAGE', '--tls-cert and --tls-key go together');
    const options = { cert: readPem(flags.tlsCert, '--tls-cert'), key: readPem(flags.tlsKey, '--tls-key'), ...(clientCa === undefined ? {} : { clientCa }) };
    return { options, lines: clientCa === undefined ? [] : ['client certificates: required (--tls-client-ca)'], remove: () => {} };
  }
  if (flags.tls !== true) {
    if (clientCa !== undefined) throw new QuoteBatchError('E_USAGE', '--tls-client-ca needs HTTPS: add --tls, or --tls-cert and --tls-key');
    return undefined;
  }
  const { generateThrowawayPki } = await import('../sandbox/tls.js');
  const pki = await generateThrowawayPki({ client: flags.tlsClientAuth === true });
  const dir = flags.tlsDir === undefined ? mkdtempSync(join(tmpdir(), 'quote-batch-sandbox-tls-')) : resolve(cwd, flags.tlsDir);
  mkdirSync(dir, { recursive: true });
  const caFile = join(dir, 'ca.pem');
  writeFileSync(caFile, pki.caCert);
  const lines = [`TLS: a throwaway CA, trust it with --ca-file ${caFile}`];
  const options: { cert: string; key: string; clientCa?: string } = { cert: pki.serverCert, key: pki.serverKey, ...(clientCa === undefined ? {} : { clientCa }) };
  if (pki.clientCert !== undefined && pki.clientKey !== undefined) {
    const certFile = join(dir, 'client-cert.pem');
    const keyFile = join(dir, 'client-key.pem');
    writeFileSync(certFile, pki.clientCert);
    writeFileSync(keyFile, pki.clientKey, { mode: 0o600 });
    chmodSync(keyFile, 0o600); // a file that was there keeps its mode otherwise
    options.clientCa = pki.caCert;
    lines.push(`client certificates: required; one is at --client-cert ${certFile} --client-key ${keyFile}`);
  }
  return { options, lines, remove: () => (flags.tlsDir === undefined ? rmSync(dir, { recursive: true, force: true }) : undefined) };
}

function waitForStop(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolveStop) => signal.addEventListener('abort', () => resolveStop(), { once: true }));
}

export const registerSandbox: RegisterCommand = (program, ctx) => {
  const rate = (flag: string): ((value: string) => number) => parseNumberIn(flag, 0, 1);
  program
    .command('sandbox')
    .description('Serve the local imitation of the partner API on loopback (stop with Ctrl-C)')
    .option('--port <n>', 'port to listen on (0 picks a free one)', parseCount('--port'), 0)
    .option('--host <host>', 'loopback host to bind', '127.0.0.1')
    .option('--agents <file>', 'known agents, CSV email,agent_id,eligible (default samples/agents.csv)')
    .option('--api-key-file <file>', 'file holding the key to accept (default: QUOTE_BATCH_API_KEY, else "sandbox-key")')
    .option('--seed <n>', 'seed of the fault draws (same seed, same request order → same faults)', parseCount('--seed'), DEFAULT_SANDBOX_SEED)
    .option('--latency-ms <n>', 'delay before every answer (the median with --latency-sigma)', parseCount('--latency-ms'))
    .option('--latency-sigma <x>', 'log-normal sigma of the latency (0 = fixed)', parseNumberIn('--latency-sigma', 0, 3))
    .option('--jitter-ms <n>', 'extra random delay, up to n ms', parseCount('--jitter-ms'))
    .option('--fail-rate <x>', 'share of requests answered 500/503', rate('--fail-rate'))
    .option('--throttle-rate <x>', 'share of requests answered 429 with Retry-After', rate('--throttle-rate'))
    .option('--retry-after <s>', 'Retry-After of throttled answers, in seconds', parseCount('--retry-after'))
    .option('--retry-after-format <f>', 'Retry-After as "seconds" or "http-date"')
    .option('--reset-before-rate <x>', 'share of connections reset before processing', rate('--reset-before-rate'))
    .option('--reset-after-rate <x>', 'share of connections reset after processing (no answer)', rate('--reset-after-rate'))
    .option('--hang-rate <x>', 'share of requests processed and never answered', rate('--hang-rate'))
    .option('--upstream-error-rate <x>', 'share of validate requests answered 500 (upstream fault)', rate('--upstream-error-rate'))
    .option('--rps-cap <n>', 'at most n requests per second; the excess is answered 429', parseCount('--rps-cap'))
    .option('--rps-mode <mode>', 'how the cap counts: "window" (per wall-clock second) or "bucket" (token bucket)', parseRpsMode)
    .option('--rps-burst <n>', 'token bucket size (default: the cap)', parseCount('--rps-burst'))
    .option('--rps-cap-answer <kind>', 'how the cap refuses: "json" (429 with Retry-After) or "html" (a gateway\'s page, no Retry-After)')
    .option('--rps-cap-schedule <steps>', 'caps over time, "seconds:cap,…" since start, e.g. "0:40,30:20"', parseSchedule)
    .option('--capacity <n>', 'at most n quote/lead requests worked on at once; the rest queue', parseCount('--capacity'))
    .option('--queue-limit <n>', `requests that may wait for --capacity; more are answered 503 (default ${DEFAULT_FAULTS.queueLimit})`, parseCount('--queue-limit'))
    .option('--announce-limit <style>', 'announce the limits in force on every answer: kong, ietf, x-ratelimit (default none)', parseAnnounceStyle)
    .option('--announce-factor <x>', 'announce the rate cap as x times the one enforced (a gateway that promises more than it keeps)', parseNumberIn('--announce-factor', 0.01, 100))
    .option('--quota <n>', 'at most n quote/lead requests per --quota-window; then 429 until the window ends', parseCount('--quota'))
    .option('--quota-window <duration>', 'the quota\'s window, e.g. 1h, 30s (default 1h), counted from start', parseDurationFlag('--quota-window', 1000, 31_622_400_000))
    .option('--tls', 'serve HTTPS with a throwaway CA, written to a file it names (for --ca-file)')
    .option('--tls-dir <dir>', 'where --tls writes its files (default: a new temporary directory, removed on stop)')
    .option('--tls-client-auth', 'with --tls: require a client certificate; writes one and its key beside the CA')
    .option('--tls-cert <file>', 'serve HTTPS with this certificate (PEM) instead; needs --tls-key')
    .option('--tls-key <file>', 'the key of --tls-cert (PEM, unencrypted)')
    .option('--tls-client-ca <file>', 'require a client certificate signed by a CA of this PEM file')
    .addOption(jsonLogOption())
    .action(async (flags: SandboxFlags) => {
      const { key, source } = resolveApiKey(flags, ctx.io.env, ctx.io.cwd);
      const agentsFile = flags.agents !== undefined ? resolve(ctx.io.cwd, flags.agents) : defaultAgentsFile(ctx.io.cwd);
      if (flags.retryAfterFormat !== undefined && flags.retryAfterFormat !== 'seconds' && flags.retryAfterFormat !== 'http-date') {
        throw new QuoteBatchError('E_USAGE', `--retry-after-format expects "seconds" or "http-date", got "${flags.retryAfterFormat}"`);
      }
      const faults: Partial<SandboxFaults> = {
        latencyMs: flags.latencyMs,
        latencySigma: flags.latencySigma,
        jitterMs: flags.jitterMs,
        failRate: flags.failRate,
        throttleRate: flags.throttleRate,
        retryAfterSeconds: flags.retryAfter,
        retryAfterFormat: flags.retryAfterFormat as SandboxFaults['retryAfterFormat'] | undefined,
        resetBeforeRate: flags.resetBeforeRate,
        resetAfterRate: flags.resetAfterRate,
        hangRate: flags.hangRate,
        upstreamErrorRate: flags.upstreamErrorRate,
        rpsCap: flags.rpsCap,
        rpsMode: flags.rpsMode,
        rpsBurst: flags.rpsBurst,
        rpsCapAnswer: flags.rpsCapAnswer as SandboxFaults['rpsCapAnswer'] | undefined,
        rpsCapSchedule: flags.rpsCapSchedule,
        capacity: flags.capacity,
        queueLimit: flags.queueLimit,
        announceLimit: flags.announceLimit,
        announceFactor: flags.announceFactor,
        quota: flags.quota,
        quotaWindowSeconds: flags.quotaWindow === undefined ? undefined : Math.round(flags.quotaWindow / 1000),
      };
      const tls = await sandboxTls(flags, ctx.io.cwd);
      let sandbox;
      try {
        sandbox = await startSandbox({ port: flags.port, host: flags.host, apiKey: key, agentsFile, seed: flags.seed, faults, ...(tls === undefined ? {} : { tls: tls.options }) });
      } catch (error) {
        tls?.remove();
        throw error;
      }
      const active = describeFaults(sandbox.faults());
      // One write, so that a reader that waits for the address line also has the lines after it.
      ctx.io.out([
        `quote-batch sandbox listening on ${sandbox.url}`,
        `accepting ${source}`,
        `agents from ${agentsFile}`,
        active.length === 0 ? 'faults: none' : `faults (seed ${flags.seed}): ${active.join(', ')}`,
        ...(tls?.lines ?? []),
        `stats at ${sandbox.url}/__sandbox/stats; stop with Ctrl-C`,
        '',
      ].join('\n'));

      await waitForStop(ctx.stop);
      const stats = sandbox.stats();
      await sandbox.close();
      tls?.remove();
      const total = stats.operations.validate.received + stats.operations.quote.received + stats.operations.lead.received;
      ctx.createLogger().info(`quote-batch sandbox stopped after ${total} request(s)`, { event: 'sandbox_stopped', requests: total });
      ctx.setExitCode(0);
    });
};
