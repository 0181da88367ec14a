/**
 * The way to the partner (README, "Behind a proxy, with a private CA or a client certificate"),
 * resolved from flags, the environment and the config file: the proxy (`partner/proxy.ts` decides
 * which), a CA bundle trusted for the partner on top of Node's roots, and a client certificate with
 * its key and the key's passphrase. Every file is read and checked here, before any ledger or job
 * exists: a wrong path, a key others may read or a wrong passphrase is a configuration error (exit 2).
 * TLS verification is never turned off: there is no setting for it.
 */
import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { createSecureContext, rootCertificates } from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { QuoteBatchError } from '../errors.js';
import type { NetworkOptions } from '../partner/client-api.js';
import { chooseProxy, displayProxy } from '../partner/proxy.js';
import { assertPrivateFile } from './private-file.js';

/** The flags of every command that talks to the partner (`run`, `agents`). */
export interface NetworkFlags {
  /** `--proxy <url>`, or false for `--no-proxy`. */
  proxy?: string | false;
  caFile?: string;
  clientCert?: string;
  clientKey?: string;
  clientKeyPassphraseFile?: string;
}

/** What the config file may say of the way to the partner: `defaults.proxy`, and per environment its TLS files. */
export interface NetworkConfig {
  proxy?: string;
  ca?: string;
  client_cert?: string;
  client_key?: string;
  client_key_passphrase_file?: string;
}

export interface NetworkSettings {
  /** For the partner client. */
  options: NetworkOptions;
  /** One line for the start of a command, when anything is set (no secret in it); else undefined. */
  summary: string | undefined;
}

/** The environment variable that may hold the client key's passphrase (never a flag). */
export const PASSPHRASE_VARIABLE = 'QUOTE_BATCH_CLIENT_KEY_PASSPHRASE';

/**
 * Resolves the way to `baseUrl` (null: the embedded sandbox, on loopback, always straight) for
 * `environment`. Flags win over the environment, which wins over the config file.
 */
export function resolveNetwork(
  flags: NetworkFlags,
  env: Readonly<Record<string, string | undefined>>,
  config: { defaults: NetworkConfig; environment: NetworkConfig },
  baseUrl: string | null,
  cwd: string,
): NetworkSettings {
  const options: NetworkOptions = {};
  const said: string[] = [];
  if (baseUrl !== null) {
    const choice = chooseProxy({ target: new URL(baseUrl), flag: flags.proxy, config: config.defaults.proxy, env });
    if (choice.proxy !== null) {
      options.proxy = choice.proxy.href;
      said.push(`through the proxy ${displayProxy(choice.proxy)} (${choice.source})`);
    } else if (choice.reason !== 'no proxy set') {
      said.push(`straight, no proxy (${choice.reason})`);
    }
  }

  const caFile = flags.caFile ?? config.environment.ca;
  if (caFile !== undefined) {
    const path = resolve(cwd, caFile);
    const own = readCertificates(path, 'CA file');
    // Added to the roots Node trusts, not instead of them (a `ca` option alone would replace them).
    options.ca = [...rootCertificates, ...extraCertificates(env), ...own];
    said.push(`${own.length} CA certificate(s) from ${path} trusted besides Node's`);
  }

  const certFile = flags.clientCert ?? config.environment.client_cert;
  const keyFile = flags.clientKey ?? config.environment.client_key;
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw new QuoteBatchError('E_USAGE', certFile === undefined ? 'a client key is given without its certificate' : 'a client certificate is given without its key', {
      hint: 'give both --client-cert <file> and --client-key <file> (or client_cert and client_key in the config file\'s environment)',
    });
  }
  if (keyFile === undefined && flags.clientKeyPassphraseFile !== undefined) {
    throw new QuoteBatchError('E_USAGE', '--client-key-passphrase-file is given without a client key', { hint: 'give --client-cert and --client-key too, or leave the passphrase file out' });
  }
  if (certFile !== undefined && keyFile !== undefined) {
    const certPath = resolve(cwd, certFile);
    const keyPath = resolve(cwd, keyFile);
    const cert = readCertificates(certPath, 'client certificate').join('\n');
    const key = readSecretFile(keyPath, 'client key');
    if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(key)) {
      throw new QuoteBatchError('E_CONFIG', `client key ${keyPath} holds no PEM private key`, { hint: 'give the key file in PEM form (-----BEGIN PRIVATE KEY-----)' });
    }
    const passphraseFile = flags.clientKeyPassphraseFile ?? config.environment.client_key_passphrase_file;
    const passphrase = passphraseFile !== undefined
      ? readSecretFile(resolve(cwd, passphraseFile), 'passphrase file').replace(/\r?\n$/, '')
      : nonEmpty(env[PASSPHRASE_VARIABLE]);
    checkKeyPair(cert, key, passphrase, certPath, keyPath, passphraseFile === undefined ? PASSPHRASE_VARIABLE : `the passphrase file ${resolve(cwd, passphraseFile)}`);
    options.cert = cert;
    options.key = key;
    if (passphrase !== undefined) options.passphrase = passphrase;
    said.push(`client certificate ${certPath}`);
  }
  return { options, summary: said.length === 0 ? undefined : said.join('; ') };
}

/** The PEM certificates of a file, each checked to parse. */
function readCertificates(path: string, what: string): string[] {
  const text = readFile(path, what);
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) {
    throw new QuoteBatchError('E_CONFIG', `${what} ${path} holds no PEM certificate`, {
      hint: 'give a PEM file (-----BEGIN CERTIFICATE----- …); convert a DER file with: openssl x509 -inform der -in file.cer -out file.pem',
    });
  }
  blocks.forEach((block, i) => {
    try {
      new X509Certificate(block);
    } catch {
      throw new QuoteBatchError('E_CONFIG', `${what} ${path}: certificate ${i + 1} of ${blocks.length} cannot be read`, { hint: 'check the file is an intact PEM bundle' });
    }
  });
  return blocks;
}

/** The certificates of `NODE_EXTRA_CA_CERTS`, which Node no longer adds once a CA list is given: kept. */
function extraCertificates(env: Readonly<Record<string, string | undefined>>): string[] {
  const path = nonEmpty(env.NODE_EXTRA_CA_CERTS);
  if (path === undefined) return [];
  try {
    return readFileSync(path, 'utf8').match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? [];
  } catch {
    return []; // Node only warns of an unreadable one too.
  }
}

/** A file holding a secret: refused when others may read it (as the API key file is). */
function readSecretFile(path: string, what: string): string {
  const text = readFile(path, what);
  assertPrivateFile(path, what);
  return text;
}

function readFile(path: string, what: string): string {
  try {
    if (!statSync(path).isFile()) throw new QuoteBatchError('E_CONFIG', `${what} ${path} is not a regular file`);
    return readFileSync(path, 'utf8');
  } catch (error) {
    if (error instanceof QuoteBatchError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'does not exist' : code === 'EACCES' || code === 'EPERM' ? 'cannot be read: permission denied' : `cannot be read: ${(error as Error).message}`;
    throw new QuoteBatchError('E_CONFIG', `${what} ${path} ${reason}`, { cause: error, hint: 'check the path (relative paths are from the working directory)' });
  }
}

/** Makes the TLS context once, so that a wrong passphrase or a key of another certificate is said now, not as a failed request. */
function checkKeyPair(cert: string, key: string, passphrase: string | undefined, certPath: string, keyPath: string, passphraseSource: string): void {
  const encrypted = /-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED/.test(key);
  if (encrypted && passphrase === undefined) {
    throw new QuoteBatchError('E_CONFIG', `client key ${keyPath} is encrypted and no passphrase is given`, {
      hint: `set ${PASSPHRASE_VARIABLE}, or name a file holding it with --client-key-passphrase-file (there is no flag that takes the passphrase itself)`,
    });
  }
  try {
    createSecureContext({ cert, key, ...(passphrase === undefined ? {} : { passphrase }) });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (/mismatch/i.test(message)) {
      throw new QuoteBatchError('E_CONFIG', `client key ${keyPath} is not the key of the certificate ${certPath}`, { hint: 'give the key the certificate was issued for' });
    }
    if (encrypted) {
      throw new QuoteBatchError('E_CONFIG', `the passphrase from ${passphraseSource} does not decrypt the client key ${keyPath}`, { hint: 'check the passphrase (a file holds it alone; one final line break is ignored)' });
    }
    throw new QuoteBatchError('E_CONFIG', `client certificate ${certPath} and key ${keyPath} cannot be used: ${message.slice(0, 200)}`);
  }
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}
