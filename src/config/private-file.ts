import { statSync } from 'node:fs';
import { QuoteBatchError } from '../errors.js';

/**
 * Refuses a file holding a secret (the API key, a client key, a passphrase) that users other than
 * its owner may read, as ssh refuses such a private key: a secret another account can copy is no
 * longer a secret. Windows has no such mode bits to read: nothing is checked there.
 */
export function assertPrivateFile(path: string, what: string): void {
  if (process.platform === 'win32') return;
  const mode = statSync(path).mode & 0o777;
  if ((mode & 0o044) === 0) return;
  const shown = mode.toString(8).padStart(4, '0');
  throw new QuoteBatchError('E_CONFIG', `${what} ${path} is readable by other users (mode ${shown}): it holds a secret`, {
    hint: `make it readable by its owner alone: chmod 600 ${path}`,
  });
}
