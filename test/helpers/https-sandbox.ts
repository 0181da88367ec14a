/**
 * The sandbox over HTTPS on loopback, with a throwaway CA of its own (the one `sandbox --tls`
 * makes): the CA and a client certificate are written to files, as a user would point the CLI at
 * them (`--ca-file`, `--client-cert`, `--client-key`). The certificates are made once per test file.
 */
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSandbox, type SandboxHandle, type SandboxOptions } from '../../src/sandbox/index.js';
import { generateThrowawayPki, type ThrowawayPki } from '../../src/sandbox/tls.js';

let pki: Promise<ThrowawayPki> | undefined;

/** A partner host name only the test proxy resolves (to the sandbox): a host reachable through the proxy alone. */
export const PARTNER_HOST = 'partner.example.test';

/** A throwaway CA with a server certificate for the loopback names and {@link PARTNER_HOST}, and a client certificate, made once. */
export function testPki(): Promise<ThrowawayPki> {
  pki ??= generateThrowawayPki({ client: true, names: [PARTNER_HOST] });
  return pki;
}

export interface TlsFiles {
  /** The CA certificate (PEM), for `--ca-file`. */
  ca: string;
  /** A client certificate the CA signed, and its key (0600). */
  clientCert: string;
  clientKey: string;
}

/** Writes the CA, the client certificate and its key (mode 0600) into `dir`. */
export async function writeTlsFiles(dir: string): Promise<TlsFiles> {
  const { caCert, clientCert, clientKey } = await testPki();
  const files = { ca: join(dir, 'ca.pem'), clientCert: join(dir, 'client-cert.pem'), clientKey: join(dir, 'client-key.pem') };
  writeFileSync(files.ca, caCert);
  writeFileSync(files.clientCert, clientCert ?? '');
  writeFileSync(files.clientKey, clientKey ?? '', { mode: 0o600 });
  chmodSync(files.clientKey, 0o600);
  return files;
}

/** The sandbox over HTTPS (`https://127.0.0.1:<port>`); with `clientAuth`, it refuses connections without the client certificate. */
export async function startHttpsSandbox(options: SandboxOptions & { clientAuth?: boolean }): Promise<SandboxHandle> {
  const { caCert, serverCert, serverKey } = await testPki();
  const { clientAuth, ...rest } = options;
  return startSandbox({ port: 0, ...rest, tls: { cert: serverCert, key: serverKey, ...(clientAuth === true ? { clientCa: caCert } : {}) } });
}
