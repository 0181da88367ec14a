/** The way to the partner from flags, the environment and the config file (src/config/network.ts), and key files kept private. */
import { chmodSync, writeFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import { describe, expect, it } from 'vitest';
import { resolveConnection, type LoadedConfig } from '../../src/config/index.js';
import { resolveNetwork } from '../../src/config/network.js';
import { testPki } from '../helpers/https-sandbox.js';
import { useTempDir } from '../helpers/temp-dir.js';

const PARTNER = 'https://api.partner.example.com';
const none = { defaults: {}, environment: {} };

describe('resolveNetwork', () => {
  const tmp = useTempDir('quote-batch-network-config-');

  it('adds the CA file to Node\'s roots and to NODE_EXTRA_CA_CERTS, never instead of them', async () => {
    const { caCert, serverCert } = await testPki();
    writeFileSync(tmp.path('ca.pem'), `# the partner's CA\n${caCert}`);
    writeFileSync(tmp.path('extra.pem'), serverCert);
    const { options, summary } = resolveNetwork({ caFile: 'ca.pem' }, { NODE_EXTRA_CA_CERTS: tmp.path('extra.pem') }, none, PARTNER, tmp.dir);
    expect(options.ca).toHaveLength(rootCertificates.length + 2);
    expect(options.ca?.slice(0, rootCertificates.length)).toEqual([...rootCertificates]);
    expect(options.ca?.at(-2)?.trim()).toBe(serverCert.trim());
    expect(options.ca?.at(-1)?.trim()).toBe(caCert.trim());
    expect(summary).toBe(`1 CA certificate(s) from ${tmp.path('ca.pem')} trusted besides Node's`);
    // From the environment's entry in the config file when no flag names one.
    expect(resolveNetwork({}, {}, { defaults: {}, environment: { ca: tmp.path('ca.pem') } }, PARTNER, tmp.dir).options.ca).toHaveLength(rootCertificates.length + 1);
    expect(resolveNetwork({}, {}, none, PARTNER, tmp.dir)).toEqual({ options: {}, summary: undefined });
  });

  it('refuses files it cannot use, each in one line naming the file', async () => {
    const { clientCert, clientKey } = await testPki();
    writeFileSync(tmp.path('not-pem.cer'), 'binary stuff');
    writeFileSync(tmp.path('cert.pem'), clientCert ?? '');
    writeFileSync(tmp.path('key.pem'), clientKey ?? '', { mode: 0o600 });
    chmodSync(tmp.path('key.pem'), 0o600);
    const fail = (flags: Parameters<typeof resolveNetwork>[0]): string => {
      try {
        resolveNetwork(flags, {}, none, PARTNER, tmp.dir);
      } catch (error) {
        return (error as Error).message;
      }
      return 'no error';
    };
    expect(fail({ caFile: 'missing.pem' })).toBe(`CA file ${tmp.path('missing.pem')} does not exist`);
    expect(fail({ caFile: 'not-pem.cer' })).toBe(`CA file ${tmp.path('not-pem.cer')} holds no PEM certificate`);
    expect(fail({ caFile: tmp.dir })).toBe(`CA file ${tmp.dir} is not a regular file`);
    expect(fail({ clientCert: 'cert.pem' })).toBe('a client certificate is given without its key');
    expect(fail({ clientKey: 'key.pem' })).toBe('a client key is given without its certificate');
    expect(fail({ clientKeyPassphraseFile: 'key.pem' })).toBe('--client-key-passphrase-file is given without a client key');
    expect(fail({ clientCert: 'cert.pem', clientKey: 'cert.pem' })).toBe(`client key ${tmp.path('cert.pem')} is readable by other users (mode 0644): it holds a secret`);
    expect(fail({ clientCert: 'cert.pem', clientKey: 'key.pem' })).toBe('no error');
    // A key of another certificate.
    const other = await import('node:crypto').then((c) => c.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString());
    writeFileSync(tmp.path('other-key.pem'), other, { mode: 0o600 });
    expect(fail({ clientCert: 'cert.pem', clientKey: 'other-key.pem' })).toBe(`client key ${tmp.path('other-key.pem')} is not the key of the certificate ${tmp.path('cert.pem')}`);
  });

  it('the embedded sandbox (no base URL) never goes through a proxy', () => {
    expect(resolveNetwork({ proxy: 'http://proxy:3128' }, { HTTPS_PROXY: 'http://proxy:3128' }, none, null, tmp.dir).options.proxy).toBeUndefined();
  });
});

describe('the API key file, like every file holding a secret', () => {
  const tmp = useTempDir('quote-batch-key-file-');
  const config: LoadedConfig = { path: null, file: {} };
  it('is refused when other users may read it (chmod 600 is the fix); 0600 and 0400 are accepted', () => {
    writeFileSync(tmp.path('key.txt'), 'a-made-up-key\n');
    for (const [mode, ok] of [[0o644, false], [0o640, false], [0o604, false], [0o600, true], [0o400, true], [0o620, true]] as const) {
      chmodSync(tmp.path('key.txt'), mode);
      const attempt = (): unknown => resolveConnection({ env: 'uat', baseUrl: PARTNER, apiKeyFile: 'key.txt' }, {}, config, tmp.dir);
      if (ok) expect(attempt, mode.toString(8)).not.toThrow();
      else expect(attempt, mode.toString(8)).toThrow(/^API key file .*key\.txt is readable by other users \(mode 0\d{3}\): it holds a secret$/);
    }
  });
});
