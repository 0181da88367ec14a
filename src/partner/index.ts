// The partner interface: schemas, types, and the HTTP client with its retry policy.
export * from './schemas.js';
export type * from './types.js';
export { createPartnerClient } from './client.js';
export type { AnnouncedWindowShown, BreakerName, CallOptions, ClientEvent, HaltKind, NetworkOptions, PartnerClient, PartnerClientOptions, SendDecision } from './client-api.js';
export type { AnnouncedSummary } from './announced-limit.js';
export { chooseProxy, displayProxy, noProxyMatch, parseProxyUrl, proxyPassword, type ProxyChoice } from './proxy.js';
export { calculateRetryDelay, MAX_RETRY_AFTER_MS, parseRetryAfter } from './backoff.js';
export type { RetryDelayInput } from './backoff.js';
export { assertSafeBaseUrl, displayUrl, isLoopbackHost } from './base-url.js';
export { AdaptiveLimiter, FixedLimiter, RateLimiter } from './limiter/index.js';
export { jobShare, joiningShare, LIVE_MS, type JobShare, type WorkerLimit } from './limiter/index.js';
export type { AttemptSample, ConcurrencyLimiter, ConcurrencySlot, PaceMemory } from './limiter/index.js';
export { CircuitBreaker } from './circuit-breaker.js';
export type { BreakerOpening, BreakerPermit, BreakerState, CircuitBreakerOptions } from './circuit-breaker.js';
export type { MetricsSample } from './metrics.js';
export { MAX_AGENT_ID_LENGTH, readValidation } from './_classify.js';
export type { ValidationResult } from './_classify.js';
export { Redactor, REDACTED } from './redact.js';
