// The local imitation of the partner API (docs/sandbox.md): re-exports only.
export {
  startSandbox, DEFAULT_SANDBOX_API_KEY, DEFAULT_SANDBOX_SEED,
  type SandboxOptions, type SandboxHandle,
} from './server.js';
export { MAX_BODY_BYTES } from './responses.js';
export { DEFAULT_FAULTS, mergeFaults, type SandboxFaults } from './faults.js';
export { parseRpsSchedule, SCHEDULE_SYNTAX, type RpsMode, type RpsStep } from './rate-limit.js';
export { ANNOUNCE_STYLES, announceHeaders, type AnnounceStyle, type GatewayWindow } from './announce.js';
export { readAgentsFile, parseAgentsCsv, type AgentRecord } from './agents.js';
export {
  UNSUPPORTED_STATES, MIN_ELIGIBLE_YEAR, checkQuoteRequest, computePremium, resolveVehicleCoverage,
  type RuleViolation, type SandboxInputIssue, type SandboxPremiumSummary,
} from './rules.js';
export type {
  SandboxStats, SandboxOperation, OperationStats, LeadStats, FaultStats, SecondStats,
} from './stats.js';
export type { LatencySummary } from './histogram.js';
export type { CapacityStats } from './work-pool.js';
