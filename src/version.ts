import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The package's own directory (package.json, samples/), found by walking up from this module: it
 * runs from `dist/` and, bundled, from `dist/bundle/` (and from `src/` in the tests).
 */
function findPackage(): { root: string; version: string } {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'quote-batch' && typeof pkg.version === 'string') return { root: dir, version: pkg.version };
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`quote-batch cannot find its package.json above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}

const found = findPackage();

/** The directory quote-batch is installed in (its package.json, samples/, mappings/). */
export const PACKAGE_ROOT: string = found.root;

/** The package version, recorded in `runs.tool_version`. */
export const TOOL_VERSION: string = found.version;
