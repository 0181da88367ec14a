/**
 * Whether a run the ledger marks `running` may still be alive (what `jobs` and `report` show for a
 * job whose run was killed): the rule's table, then the real process checks it relies on.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { pidExists, runMayBeAlive, STALE_HEARTBEAT_MS } from '../../src/ledger/_liveness.js';
import { waitFor } from '../pipeline/_setup.js';

const NOW = Date.parse('2026-11-26T12:00:00.000Z');
const ago = (ms: number): string => new Date(NOW - ms).toISOString();
const HERE = 'host-a';

describe('runMayBeAlive', () => {
  const live = new Set([4242]);
  const exists = (pid: number): boolean => live.has(pid);
  it.each([
    ['this host, its pid alive, heartbeat long stale (the pid says alive)', { pid: 4242, hostname: HERE, heartbeat_at: ago(3_600_000) }, true],
    ['this host, its pid not seen, heartbeat 5 s ago (another container sharing the host name?)', { pid: 4343, hostname: HERE, heartbeat_at: ago(5_000) }, true],
    ['this host, its pid not seen, heartbeat at the limit', { pid: 4343, hostname: HERE, heartbeat_at: ago(STALE_HEARTBEAT_MS) }, false],
    ['this host, its pid not seen, no heartbeat', { pid: 4343, hostname: HERE, heartbeat_at: null }, false],
    ['another host, heartbeat 5 s ago', { pid: 4343, hostname: 'host-b', heartbeat_at: ago(5_000) }, true],
    ['another host, heartbeat just under the limit', { pid: 4343, hostname: 'host-b', heartbeat_at: ago(STALE_HEARTBEAT_MS - 1) }, true],
    ['another host, heartbeat at the limit', { pid: 4343, hostname: 'host-b', heartbeat_at: ago(STALE_HEARTBEAT_MS) }, false],
    ['another host, no heartbeat', { pid: 4242, hostname: 'host-b', heartbeat_at: null }, false],
    ['another host, heartbeat unreadable', { pid: 4242, hostname: 'host-b', heartbeat_at: 'yesterday' }, false],
    ['this host, no pid recorded: the heartbeat decides (fresh)', { pid: null, hostname: HERE, heartbeat_at: ago(5_000) }, true],
    ['this host, no pid recorded: the heartbeat decides (stale)', { pid: null, hostname: HERE, heartbeat_at: ago(120_000) }, false],
    ['this host, pid 0 (signal 0 would reach our own group): the heartbeat decides', { pid: 0, hostname: HERE, heartbeat_at: ago(120_000) }, false],
    ['no host recorded: the heartbeat decides', { pid: 4242, hostname: null, heartbeat_at: ago(120_000) }, false],
  ] as const)('%s', (_name, run, expected) => {
    expect(runMayBeAlive(run, NOW, HERE, exists)).toBe(expected);
  });
});

describe('pidExists', () => {
  it('is true for this process and false for one that exited and was reaped', () => {
    expect(pidExists(process.pid)).toBe(true);
    const done = spawnSync(process.execPath, ['-e', '']);
    expect(done.status).toBe(0);
    expect(pidExists(done.pid as number)).toBe(false);
  });

  it.skipIf(!existsSync('/proc/self/stat'))('is false for a zombie: a killed process its parent has not reaped', async () => {
    // sh prints the pid of a child it never waits for, then becomes `sleep`: the killed child stays a zombie.
    const parent = spawn('/bin/sh', ['-c', 'sleep 60 & echo $!; exec sleep 60'], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const pid = await new Promise<number>((resolve) => parent.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
      expect(pidExists(pid)).toBe(true);
      process.kill(pid, 'SIGKILL');
      await waitFor(() => /State:\s+Z/.test(readFileSync(`/proc/${pid}/status`, 'utf8')), 10_000, 10);
      expect(() => process.kill(pid, 0)).not.toThrow(); // signal 0 alone would call it alive
      expect(pidExists(pid)).toBe(false);
    } finally {
      parent.kill('SIGKILL');
    }
  });
});
