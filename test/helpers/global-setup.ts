/**
 * Runs once, before any test file (and again before each re-run in watch mode): compiles `src/`
 * to `dist/` when the build is missing or older than a source file, so that every spawned CLI runs
 * the code under test. Building here and nowhere else matters: a test file that re-ran tsc while
 * another file's CLI process was loading `dist/` could make that process read a half-written module.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { REPO_ROOT } from './cli.js';

const ENTRY = join(REPO_ROOT, 'dist', 'cli.js');

function newestSourceMtime(): number {
  let newest = Math.max(statSync(join(REPO_ROOT, 'tsconfig.json')).mtimeMs, statSync(join(REPO_ROOT, 'tsconfig.build.json')).mtimeMs);
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

const isFresh = (): boolean => existsSync(ENTRY) && statSync(ENTRY).mtimeMs >= newestSourceMtime();

function buildIfStale(): void {
  if (isFresh()) return;
  const tsc = join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: REPO_ROOT, encoding: 'utf8' });
  // tsc emits despite type errors (`npm test` type-checks on its own): say so, and go on when it emitted.
  if (result.status !== 0) process.stderr.write(`tsc -p tsconfig.build.json exited ${String(result.status)}:\n${result.stdout}${result.stderr}\n`);
  if (!isFresh()) {
    throw new Error(`the build did not produce an up-to-date dist/cli.js${result.error ? `: ${result.error.message}` : ''}\n${result.stdout}${result.stderr}`);
  }
}

export default function setup(project: TestProject): void {
  buildIfStale();
  project.onTestsRerun(() => buildIfStale());
}
