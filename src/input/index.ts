// The input readers: CSV/TSV and NDJSON files, optionally gzipped, as a stream of rows or row errors.
export { detectInput, UnknownFormatError } from './detect.js';
export { openInput } from './open.js';
export { DEFAULT_MAX_DEPTH, DEFAULT_MAX_RECORD_BYTES } from './types.js';
export type { InputFormat, InputItem, InputOptions, InputReader, InputStart } from './types.js';
