/**
 * A throwaway certificate authority for the sandbox's HTTPS (`quote-batch sandbox --tls`): a CA, a
 * server certificate it signs for the loopback names (`localhost`, 127.0.0.1, ::1) and, for mutual
 * TLS, a client certificate it signs. Pure JavaScript (node-forge signs; Node's crypto makes the
 * keys), so that it runs on any machine without the openssl binary. Nothing here is meant to be
 * trusted beyond one rehearsal or one test: keys are fresh on every call and certificates live 30 days.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { pki as ForgePki } from 'node-forge';

/** PEM texts of a throwaway CA and the certificates it signed. */
export interface ThrowawayPki {
  /** The CA certificate: the file a client trusts (`--ca-file`). */
  caCert: string;
  serverCert: string;
  serverKey: string;
  /** A client certificate and its key (unencrypted), when asked for. */
  clientCert?: string;
  clientKey?: string;
}

const VALID_DAYS = 30;
/** The names the server certificate holds: the sandbox listens on loopback only. */
const LOOPBACK_NAMES = { dns: ['localhost'], ips: ['127.0.0.1', '::1'] };

/**
 * Makes a fresh CA, a server certificate for the loopback names (and `names`, host names a proxy
 * maps to loopback in tests) and, with `client`, a client certificate.
 */
export async function generateThrowawayPki(options: { client?: boolean; names?: readonly string[] } = {}): Promise<ThrowawayPki> {
  // node-forge is large: loaded only when a sandbox serves HTTPS with generated certificates.
  // A CommonJS package: Node hands its exports over as `default`.
  const loaded = await import('node-forge');
  const forge = (loaded as unknown as { default?: typeof loaded }).default ?? loaded;
  const { pki } = forge;
  const stamp = new Date().toISOString().slice(0, 19);

  const ca = newKey(pki);
  const caName = [{ name: 'commonName', value: `quote-batch sandbox CA ${stamp}` }];
  const caCert = certificate(pki, ca.publicKey, caName, caName, [
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  caCert.sign(ca.privateKey, forge.md.sha256.create());

  const leaf = (commonName: string, extensions: unknown[]): { cert: string; key: string } => {
    const key = newKey(pki);
    const cert = certificate(pki, key.publicKey, [{ name: 'commonName', value: commonName }], caName, [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      ...extensions,
    ]);
    cert.sign(ca.privateKey, forge.md.sha256.create());
    return { cert: pki.certificateToPem(cert), key: key.pem };
  };
  const server = leaf('localhost', [
    { name: 'extKeyUsage', serverAuth: true },
    { name: 'subjectAltName', altNames: [...[...LOOPBACK_NAMES.dns, ...(options.names ?? [])].map((value) => ({ type: 2, value })), ...LOOPBACK_NAMES.ips.map((ip) => ({ type: 7, ip }))] },
  ]);
  const result: ThrowawayPki = { caCert: pki.certificateToPem(caCert), serverCert: server.cert, serverKey: server.key };
  if (options.client === true) {
    const client = leaf('quote-batch sandbox client', [{ name: 'extKeyUsage', clientAuth: true }]);
    result.clientCert = client.cert;
    result.clientKey = client.key;
  }
  return result;
}

/** An RSA key made by Node (fast, native), in the form node-forge signs with, and as PEM. */
function newKey(pki: typeof ForgePki): { privateKey: ForgePki.rsa.PrivateKey; publicKey: ForgePki.rsa.PublicKey; pem: string } {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  const forgeKey = pki.privateKeyFromPem(pem) as ForgePki.rsa.PrivateKey;
  return { privateKey: forgeKey, publicKey: pki.setRsaPublicKey(forgeKey.n, forgeKey.e), pem };
}

function certificate(
  pki: typeof ForgePki,
  publicKey: ForgePki.rsa.PublicKey,
  subject: ForgePki.CertificateField[],
  issuer: ForgePki.CertificateField[],
  extensions: unknown[],
): ForgePki.Certificate {
  const cert = pki.createCertificate();
  cert.publicKey = publicKey;
  // Positive (a leading 0 bit) and unique enough for a throwaway CA.
  cert.serialNumber = `01${randomBytes(15).toString('hex')}`;
  const now = Date.now();
  cert.validity.notBefore = new Date(now - 3600_000);
  cert.validity.notAfter = new Date(now + VALID_DAYS * 86_400_000);
  cert.setSubject(subject);
  cert.setIssuer(issuer);
  cert.setExtensions(extensions as object[]);
  return cert;
}
