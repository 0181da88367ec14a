/**
 * The job lock (issue 9 item 5): held by a live process only. A holder in another process is a
 * real child process holding the lock through the built ledger (dist/), as `run` would.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, statSync, unlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { isQuoteBatchError } from '../../src/errors.js';
import { jobLockPath, Ledger } from '../../src/ledger/index.js';
import { useTempDir } from '../helpers/temp-dir.js';
import { startRunInChild } from './_child.js';
import { STOPPED } from '../../src/pipeline/row-state.js';

const identity = { input_sha256: 'a'.repeat(64), mapping_sha256: 'b'.repeat(64), environment: 'sandbox', operation: 'quote' } as const;
const newJob = { ...identity, input_path: '/tmp/in.csv', input_format: 'csv', mapping_path: 'm.yaml', base_url: null } as const;

function lockedCode(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return isQuoteBatchError(error) ? error.code : String(error);
  }
  return undefined;
}

describe('job lock', () => {
  const tmp = useTempDir();
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) child.kill('SIGKILL');
  });

  it('refuses a second process while the first lives, and frees the job the moment it is killed', async () => {
    const path = tmp.path('l.db');
    const setup = Ledger.open(path);
    const job = setup.createJob(newJob);
    setup.close();
    const holder = await startRunInChild(path, job.id);
    children.push(holder);

    const ledger = Ledger.open(path);
    let message = '';
    try {
      ledger.startRun(job.id, '{}', 'test', STOPPED);
    } catch (error) {
      message = (error as Error).message;
      expect(isQuoteBatchError(error) && error.code).toBe('E_JOB_LOCKED');
    }
    expect(message).toMatch(new RegExp(`job ${job.id} is in use by another live quote-batch process .*pid ${holder.pid}`));
    expect(ledger.runsOf(job.id).map((r) => r.status)).toEqual(['running']); // nothing was changed

    const exited = new Promise((resolve) => holder.once('exit', resolve));
    holder.kill('SIGKILL');
    await exited;
    const { crashedRuns } = ledger.startRun(job.id, '{}', 'test', STOPPED);
    expect(crashedRuns).toBe(1);
    expect(ledger.runsOf(job.id).map((r) => r.status)).toEqual(['crashed', 'running']);
    ledger.close();
  });

  it('is not fooled by a live pid, or a fresh heartbeat from another host, left in a dead run', () => {
    const ledger = Ledger.open(tmp.path('l.db'));
    const job = ledger.createJob(newJob);
    const { run } = ledger.startRun(job.id, '{}', 'test', STOPPED);
    ledger.close();
    const db = Ledger.open(tmp.path('l.db'));
    // A reused pid: the run row names a live process (our parent) on this host.
    db.db.prepare('UPDATE runs SET pid = ?, hostname = ? WHERE id = ?').run(process.ppid, hostname(), run.id);
    expect(db.startRun(job.id, '{}', 'test', STOPPED).crashedRuns).toBe(1);
    const second = db.runsOf(job.id)[1];
    db.close();
    const again = Ledger.open(tmp.path('l.db'));
    // Another container sharing the volume, heartbeat a second ago.
    again.db.prepare('UPDATE runs SET hostname = ?, heartbeat_at = ? WHERE id = ?').run('other-container', new Date().toISOString(), second?.id);
    expect(again.startRun(job.id, '{}', 'test', STOPPED).crashedRuns).toBe(1);
    again.close();
  });

  it('excludes a second connection of the same process, and is released by finishRun and close', () => {
    const path = tmp.path('l.db');
    const a = Ledger.open(path);
    const b = Ledger.open(path);
    const job = a.createJob(newJob); // createJob takes the new job's lock
    expect(lockedCode(() => b.startRun(job.id, '{}', 'b', STOPPED))).toBe('E_JOB_LOCKED');
    const { run } = a.startRun(job.id, '{}', 'a', STOPPED);
    expect(lockedCode(() => b.startRun(job.id, '{}', 'b', STOPPED))).toBe('E_JOB_LOCKED');
    a.finishRun(run.id, 'completed');
    const bRun = b.startRun(job.id, '{}', 'b', STOPPED).run;
    expect(lockedCode(() => a.startRun(job.id, '{}', 'a', STOPPED))).toBe('E_JOB_LOCKED');
    b.close();
    expect(a.startRun(job.id, '{}', 'a', STOPPED).crashedRuns).toBe(1); // b closed without finishing bRun
    expect(a.runsOf(job.id).find((r) => r.id === bRun.id)?.status).toBe('crashed');
    a.close();
  });

  it('refuses to create a second job of the same identity while another process holds the first', () => {
    const path = tmp.path('l.db');
    const a = Ledger.open(path);
    const b = Ledger.open(path);
    const first = a.createJob(newJob);
    expect(lockedCode(() => b.createJob(newJob))).toBe('E_JOB_LOCKED');
    expect(b.createJob({ ...newJob, operation: 'lead' }).id).toBeGreaterThan(first.id); // another identity is fine
    a.close();
    // Once the holder is gone, a --fresh run may start a new job beside the unfinished one.
    expect(b.createJob(newJob).id).toBeGreaterThan(first.id);
    b.close();
  });

  it('keeps its lock file beside the ledger with mode 0600 after the run', () => {
    const path = tmp.path('l.db');
    const a = Ledger.open(path);
    const job = a.createJob(newJob);
    const lockFile = jobLockPath(path, job.id);
    expect(statSync(lockFile).mode & 0o777).toBe(0o600);
    a.finishRun(a.startRun(job.id, '{}', 'a', STOPPED).run.id, 'completed');
    expect(existsSync(lockFile)).toBe(true); // lock files stay: deleting one could give a job two owners
    a.close();
  });

  it('does not give the job a second owner when its lock file is deleted while a live run holds it', async () => {
    const path = tmp.path('l.db');
    const setup = Ledger.open(path);
    const job = setup.createJob(newJob);
    setup.close();
    const holder = await startRunInChild(path, job.id);
    children.push(holder);
    // Later than the clock slack after the run started: the new file is then visibly newer.
    await new Promise((r) => setTimeout(r, 1100));
    unlinkSync(jobLockPath(path, job.id));

    const ledger = Ledger.open(path);
    expect(lockedCode(() => ledger.startRun(job.id, '{}', 'test', STOPPED))).toBe('E_JOB_LOCKED');
    const exited = new Promise((resolve) => holder.once('exit', resolve));
    holder.kill('SIGKILL');
    await exited;
    expect(ledger.startRun(job.id, '{}', 'test', STOPPED).crashedRuns).toBe(1);
    ledger.close();
  });
});
