import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const pkg = require('../package.json') as { version: string };

/** The package version, recorded in `runs.tool_version`. */
export const TOOL_VERSION: string = pkg.version;
