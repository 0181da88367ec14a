/**
 * Power-loss safety of the `in_flight` marks (docs/ledger.md, "What survives a killed process, and a
 * power cut"): the commit that marks rows `in_flight` reaches the disk (the WAL is fsynced) before
 * their requests leave. Watched from outside with strace: the real CLI runs the samples against a
 * sandbox in this process, and the system calls say in what order the WAL was synced and each quote
 * request was written to its socket.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxHandle } from '../../src/sandbox/index.js';
import { CLI, cliEnv } from '../helpers/cli.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { MAPPING_CSV, SAMPLE_CSV } from '../pipeline/_setup.js';
import { CANARY_KEY, startCanarySandbox } from '../robustness/_shared.js';

const HAS_STRACE = spawnSync('strace', ['-V']).status === 0;

/**
 * The order of WAL syncs and quote sends in an strace log (`-f -y`: every thread, file names for fds).
 * A sync another thread's call interrupts is logged in two lines (`<unfinished ...>`, then `<... fsync
 * resumed> = 0` under the same pid): it counts where it ended. strace pads short lines before `=`.
 */
function events(trace: string): ('sync' | 'send')[] {
  const out: ('sync' | 'send')[] = [];
  const unfinished = new Set<string>();
  for (const line of trace.split('\n')) {
    const pid = line.slice(0, line.indexOf(' '));
    if (/ f(?:data)?sync\(\d+<[^>]*-wal>\)\s+= 0/.test(line)) out.push('sync');
    else if (/ f(?:data)?sync\(\d+<[^>]*-wal> <unfinished \.\.\.>/.test(line)) unfinished.add(pid);
    else if (unfinished.delete(pid) && /<\.\.\. f(?:data)?sync resumed>\)\s+= 0/.test(line)) out.push('sync');
    else if (/ (?:write|writev|sendto|sendmsg)\(\d+<socket:.*POST \/partner\/v2\/policy\/quote /.test(line)) out.push('send');
  }
  return out;
}

describe.skipIf(!HAS_STRACE)('the in_flight marks are fsynced before their requests leave', () => {
  const tmp = useTempDir('quote-batch-durable-');
  let sandbox: SandboxHandle;
  beforeAll(async () => {
    sandbox = await startCanarySandbox();
  });
  afterAll(async () => {
    await sandbox.close();
  });

  /** Runs the samples under strace (asynchronously: the sandbox answers from this process); returns the exit code and the events. */
  async function traced(concurrency: number): Promise<{ code: number | null; seen: ('sync' | 'send')[] }> {
    const trace = tmp.path(`trace-${concurrency}.txt`);
    const child = spawn('strace', [
      '-f', '-y', '-s', '48', '-e', 'trace=fsync,fdatasync,write,writev,sendto,sendmsg', '-o', trace,
      process.execPath, CLI, 'run', SAMPLE_CSV, '--mapping', MAPPING_CSV, '--base-url', sandbox.url, '--env', 'sandbox',
      '--ledger', tmp.path(`c${concurrency}.db`), '--concurrency', String(concurrency), '--quiet',
    ], { cwd: tmp.dir, env: cliEnv({ QUOTE_BATCH_API_KEY: CANARY_KEY }), stdio: 'ignore' });
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    const code = await new Promise<number | null>((resolve) => child.on('close', (status) => resolve(status)));
    clearTimeout(timer);
    return { code, seen: events(readFileSync(trace, 'utf8')) };
  }

  it('one request at a time: every quote request is preceded by a sync of the WAL since the one before', async () => {
    const { code, seen } = await traced(1);
    expect(code).toBe(1); // the samples' deliberate bad rows
    const sends = seen.filter((e) => e === 'send').length;
    expect(sends).toBe(181); // every row of the samples that is sent (samples/README.md)
    let synced = false;
    let unsynced = 0;
    for (const e of seen) {
      if (e === 'sync') synced = true;
      else {
        if (!synced) unsynced += 1;
        synced = false;
      }
    }
    expect(unsynced, 'quote requests that left with no WAL sync since the request before').toBe(0);
  }, 150_000);

  it('eight at a time: at least one sync per batch of marks (a batch marks at most --concurrency rows)', async () => {
    const { code, seen } = await traced(8);
    expect(code).toBe(1);
    const sends = seen.filter((e) => e === 'send').length;
    const syncs = seen.filter((e) => e === 'sync').length;
    expect(sends).toBe(181);
    expect(syncs).toBeGreaterThanOrEqual(Math.ceil(sends / 8));
    // The first request leaves after a sync.
    expect(seen.indexOf('sync')).toBeLessThan(seen.indexOf('send'));
  }, 150_000);
});
