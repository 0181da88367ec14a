#!/usr/bin/env node
// Thin launcher: the compiled CLI lives in dist/ and, bundled, in dist/bundle/ (both built by
// `npm run build`, run by `prepare` on `npm ci`); the bundle starts faster (scripts/bundle.js).
import { setFlagsFromString } from 'node:v8';

// Before any module of ours loads: V8's allocation-site pretenuring sometimes judges the short-lived
// objects of every row (records, mapped requests) long-lived, from how objects survived while
// modules were loading. Then about 2 MB of rows are promoted at each minor GC and a 100k-row
// `check` takes about 40% more CPU and 50 MB more memory, in some runs and not others. Streaming
// rows never outlive a few thousand of their successors, so quote-batch turns pretenuring off
// (a V8 flag of Node 20 and later; `node --v8-options` lists it).
setFlagsFromString('--no-allocation-site-pretenuring');

const { main } = await import('../dist/bundle/cli.js');
main(process.argv);
