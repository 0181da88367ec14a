/**
 * Runs once, before any test file: compiles `src/` to `dist/` when the build is missing or older
 * than a source file, so that every spawned CLI runs the code under test. Building here and
 * nowhere else matters: a test file that re-ran tsc while another file's CLI process was loading
 * `dist/` could make that process read a half-written module.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './cli.js';

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

export default function setup(): void {
  const entry = join(REPO_ROOT, 'dist', 'cli.js');
  const sources = [join(REPO_ROOT, 'src'), join(REPO_ROOT, 'tsconfig.json'), join(REPO_ROOT, 'tsconfig.build.json')];
  const newestSource = Math.max(...sources.map((p) => (statSync(p).isDirectory() ? newestMtime(p) : statSync(p).mtimeMs)));
  if (existsSync(entry) && statSync(entry).mtimeMs >= newestSource) return;
  const tsc = join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: REPO_ROOT, encoding: 'utf8' });
  // tsc emits even with a type error; `npm test` type-checks separately. A missing entry is fatal.
  if (!existsSync(entry)) throw new Error(`the build produced no dist/cli.js:\n${result.stdout}${result.stderr}`);
}
