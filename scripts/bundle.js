#!/usr/bin/env node
// The second step of `npm run build` (after tsc): bundles the compiled CLI in dist/ into
// dist/bundle/, which bin/quote-batch.js runs. Node 20 loads each ES module on its own (resolve,
// read, compile): the CLI's ~250 modules (zod alone is 95) took 0.3 s before the first line of
// quote-batch ran, on every command. Bundled, `--version` takes ~0.3 s instead of ~0.5 s.
//
// Two entries: the CLI, and the partner client's HTTP thread (src/partner/_transport-thread.ts),
// which loads got and nothing else the CLI needs. Code split, so that what a command loads lazily
// (the partner client, the sandbox, …) stays lazy. better-sqlite3 stays outside: it is a native
// addon that finds its binary beside its own files. Source maps chain back to src/.
import { existsSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outdir = join(root, 'dist', 'bundle');
rmSync(outdir, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  // The thread's file name is the one src/partner/thread-transport.ts looks for beside itself.
  entryPoints: { cli: 'dist/cli.js', '_transport-thread': 'dist/partner/_transport-thread.js' },
  outdir,
  // Chunks beside the entries: thread-transport.ts finds the thread's file next to its own chunk.
  chunkNames: '[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: ['better-sqlite3'],
  sourcemap: true,
  // The CommonJS packages bundled (yaml, commander, pino, …) require Node's modules.
  banner: { js: "import { createRequire as __qbCreateRequire } from 'node:module'; const require = __qbCreateRequire(import.meta.url);" },
  logLevel: 'warning',
});
// The partner client starts its thread from the file of this name beside the chunk it is in.
if (!existsSync(join(outdir, '_transport-thread.js'))) throw new Error('scripts/bundle.js: dist/bundle/_transport-thread.js was not written');
