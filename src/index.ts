// The public API of quote-batch as a library: re-exports only.
export * from './errors.js';
export * from './partner/schemas.js';
export type * from './partner/types.js';
