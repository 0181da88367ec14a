/**
 * Opens a partner client for a command: resolves the connection from config, environment and
 * flags and, for `--env sandbox` without a base URL, starts the embedded sandbox in-process on a
 * free loopback port.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import {
  loadConfig,
  resolveConnection,
  type ConnectionFlags,
  type ConnectionSettings,
  type LoadedConfig,
} from '../config/index.js';
import type { Io } from '../io.js';
// Types only: the client (got and its dependencies) loads when a command connects, so the offline
// commands (check, preview, report, …) start without it.
import type { PartnerClient, PartnerClientOptions } from '../partner/index.js';
import type { Environment } from '../partner/types.js';
import { startSandbox } from '../sandbox/index.js';
import { PACKAGE_ROOT } from '../version.js';

export type { ConnectionFlags } from '../config/index.js';

export interface PartnerConnection {
  client: PartnerClient;
  environment: Environment;
  baseUrl: string;
  /** True when the embedded sandbox was started for this command. */
  embeddedSandbox: boolean;
  close(): Promise<void>;
}

/** The agents file of the embedded sandbox: the config's, else `./samples/agents.csv`, else the package's. */
export function defaultAgentsFile(config: LoadedConfig, cwd: string): string {
  const configured = config.file.defaults?.agents;
  if (configured !== undefined) return resolve(cwd, configured);
  const local = resolve(cwd, 'samples', 'agents.csv');
  return existsSync(local) ? local : resolve(PACKAGE_ROOT, 'samples', 'agents.csv');
}

/** Resolves the connection from config, environment and flags, then opens it. */
export async function connectPartner(
  flags: ConnectionFlags,
  io: Io,
  clientOptions: Partial<PartnerClientOptions> = {},
  config: LoadedConfig = loadConfig(flags.config, io.cwd),
  /** Where to say that the embedded sandbox started (the command's logger, so --json-log stays JSON). */
  notify?: (message: string) => void,
): Promise<PartnerConnection> {
  return openPartner(resolveConnection(flags, io.env, config, io.cwd), io, clientOptions, config, notify);
}

/**
 * The flags of the way to the partner (README, "Behind a proxy, with a private CA or a client
 * certificate"), the same on every command that talks to it. The passphrase has no flag: only a
 * file or QUOTE_BATCH_CLIENT_KEY_PASSPHRASE hold it, out of shell history and `ps`.
 */
export function addNetworkOptions(command: Command): Command {
  return command
    .option('--proxy <url>', 'send through this HTTP proxy, http://[user:password@]host:port (default: HTTPS_PROXY / HTTP_PROXY, NO_PROXY, else the config\'s proxy:)')
    .option('--no-proxy', 'send straight to the partner, whatever HTTPS_PROXY or the config says')
    .option('--ca-file <file>', 'PEM bundle of CA certificates to trust for the partner, on top of Node\'s (config: ca:)')
    .option('--client-cert <file>', 'client certificate (PEM) for mutual TLS (config: client_cert:)')
    .option('--client-key <file>', 'its private key (PEM; readable by its owner alone); passphrase from QUOTE_BATCH_CLIENT_KEY_PASSPHRASE or --client-key-passphrase-file')
    .option('--client-key-passphrase-file <file>', 'file holding the client key\'s passphrase (readable by its owner alone)');
}

/** Opens a client for resolved settings, starting the embedded sandbox when there is no base URL. */
export async function openPartner(
  settings: ConnectionSettings,
  io: Io,
  clientOptions: Partial<PartnerClientOptions>,
  config: LoadedConfig,
  /** Where to say that the embedded sandbox started, or how the partner is reached (the run's logger, so --json-log stays JSON). */
  notify: (message: string, event: 'sandbox_started' | 'network') => void = (message) => io.err(`${message}\n`),
): Promise<PartnerConnection> {
  let baseUrl = settings.baseUrl;
  let closeSandbox = async (): Promise<void> => {};
  if (baseUrl === null) {
    const sandbox = await startSandbox({
      port: 0,
      apiKey: settings.apiKey,
      agentsFile: defaultAgentsFile(config, io.cwd),
    });
    baseUrl = sandbox.url;
    closeSandbox = () => sandbox.close();
    notify(`started the embedded sandbox on ${sandbox.url} (--env sandbox; no partner account needed)`, 'sandbox_started');
  }
  const { createPartnerClient, displayUrl } = await import('../partner/index.js');
  const { network } = settings;
  if (network.summary !== undefined) notify(`partner ${displayUrl(new URL(baseUrl))}: ${network.summary}`, 'network');
  const client = createPartnerClient({ ...clientOptions, baseUrl, apiKey: settings.apiKey, network: network.options });
  return {
    client,
    environment: settings.environment,
    baseUrl,
    embeddedSandbox: settings.baseUrl === null,
    close: async () => {
      client.close();
      await closeSandbox();
    },
  };
}
