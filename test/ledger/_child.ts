/**
 * A second process on the same ledger, for tests of what one process sees of another's locks and
 * runs: scripts run by `node -e` against the compiled ledger module (dist/, built by the global setup).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { REPO_ROOT } from '../helpers/cli.js';

export const LEDGER_MODULE = pathToFileURL(join(REPO_ROOT, 'dist', 'ledger', 'index.js')).href;

/**
 * A child process that starts a run of `jobId` (taking its lock), then runs `then` (statements on
 * its `ledger`), and stays alive holding the job until killed. Resolves once it holds it.
 */
export async function startRunInChild(ledgerPath: string, jobId: number, then = ''): Promise<ChildProcess> {
  const script = `
    const { Ledger } = await import(${JSON.stringify(LEDGER_MODULE)});
    const ledger = Ledger.open(${JSON.stringify(ledgerPath)});
    ledger.startRun(${jobId}, '{}', 'child', { state: 'in_doubt', errorMessage: 'the process stopped while the request was in flight' });
    ${then}
    process.stdout.write('started\\n');
    setTimeout(() => {}, 60_000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (d: Buffer) => {
      if (d.toString().includes('started')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`child exited with ${String(code)}`)));
  });
  return child;
}
