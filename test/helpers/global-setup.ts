/**
 * Runs once, before any test file (and again before each re-run in watch mode): builds `src/` into
 * `dist/` and `dist/bundle/` (what `bin/quote-batch.js` runs), as `npm run build` does, when the
 * build is missing or older than a source file, so that every spawned CLI runs the code under test.
 * Building here and nowhere else matters: a test file that re-ran the build while another file's
 * CLI process was loading `dist/` could make that process read a half-written module.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { REPO_ROOT } from './cli.js';
import { startPostgres } from '../../scripts/embedded-postgres.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The PostgreSQL server the tests use: a superuser's connection string (see `test/helpers/postgres.ts`). */
    postgresUrl: string;
  }
}

/** The last outputs of each step: tsc's, then the bundle's. */
const OUTPUTS = [join(REPO_ROOT, 'dist', 'cli.js'), join(REPO_ROOT, 'dist', 'bundle', 'cli.js')];

/** Sources, build settings and the lock file (the bundle holds the dependencies' code). */
function newestSourceMtime(): number {
  let newest = Math.max(...['tsconfig.json', 'tsconfig.build.json', 'scripts/bundle.js', 'package-lock.json'].map((f) => statSync(join(REPO_ROOT, f)).mtimeMs));
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) newest = Math.max(newest, statSync(path).mtimeMs);
    }
  };
  walk(join(REPO_ROOT, 'src'));
  return newest;
}

const isFresh = (): boolean => {
  const newest = newestSourceMtime();
  return OUTPUTS.every((file) => existsSync(file) && statSync(file).mtimeMs >= newest);
};

function buildIfStale(): void {
  if (isFresh()) return;
  const tsc = join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: REPO_ROOT, encoding: 'utf8' });
  // tsc emits despite type errors (`npm test` type-checks on its own): say so, and go on when it emitted.
  if (result.status !== 0) process.stderr.write(`tsc -p tsconfig.build.json exited ${String(result.status)}:\n${result.stdout}${result.stderr}\n`);
  const bundle = spawnSync(process.execPath, [join(REPO_ROOT, 'scripts', 'bundle.js')], { cwd: REPO_ROOT, encoding: 'utf8' });
  if (!isFresh()) {
    const said = [result, bundle].map((r) => `${r.error ? `${r.error.message}\n` : ''}${r.stdout}${r.stderr}`).join('');
    throw new Error(`the build did not produce an up-to-date ${OUTPUTS.join(' and ')}\n${said}`);
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  buildIfStale();
  project.onTestsRerun(() => buildIfStale());
  // A PostgreSQL server for the ledger's tests: the one named, else one of our own (a few seconds).
  const named = process.env.QUOTE_BATCH_TEST_POSTGRES;
  const server = named === undefined || named === '' ? await startPostgres() : undefined;
  project.provide('postgresUrl', server?.url() ?? (named as string));
  return async () => {
    await server?.destroy();
  };
}
