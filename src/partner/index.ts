// The partner interface: schemas, types, and the HTTP client with its retry policy.
export * from './schemas.js';
export type * from './types.js';
export { createPartnerClient } from './client.js';
export type { CallOptions, PartnerClient, PartnerClientOptions } from './client.js';
export { calculateRetryDelay, parseRetryAfter } from './backoff.js';
export type { RetryDelayInput } from './backoff.js';
export { assertSafeBaseUrl, displayUrl, isLoopbackHost } from './base-url.js';
export { RateLimiter, PauseGate } from './rate-limiter.js';
export { CircuitBreaker } from './circuit-breaker.js';
export type { BreakerPermit, BreakerState, CircuitBreakerOptions } from './circuit-breaker.js';
