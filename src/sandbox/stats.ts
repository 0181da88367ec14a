/**
 * What the sandbox counts, for tests and benchmarks: requests per operation, answers per HTTP
 * status, faults injected, per lead key how often a quote/lead arrived and was processed, the
 * partner-side latency per operation, and per second how quote/lead requests ended.
 */
import { LatencyHistogram, type LatencySummary } from './histogram.js';
import type { CapacityStats } from './work-pool.js';

/** The partner operations the sandbox serves. */
export type SandboxOperation = 'validate' | 'quote' | 'lead';

/** Counts of one operation. */
export interface OperationStats {
  /** Requests that arrived (every one, whatever happened next). */
  received: number;
  /** Answers sent, by HTTP status (`"200"`, `"429"`, …). Resets and hangs are not answers. */
  statuses: Record<string, number>;
}

/** Counts of one lead key (`tracking.click_id`, else `channel.channel_lead_id`) over quote and lead. */
export interface LeadStats {
  /** Quote/lead requests with this key that arrived and whose body was read. */
  received: number;
  /**
   * Of those, how many the partner actually processed: answered 200 or 400, or processed and then
   * lost (reset-after, hang). Injected 5xx/429/reset-before did nothing and are not counted.
   * More than 1 means the lead was duplicated at the partner.
   */
  processed: number;
}

/** Faults injected, by kind. */
export interface FaultStats {
  outage: number;
  rpsCapped: number;
  /** Quote/lead requests refused because the quota (`quota`) was spent. */
  quotaSpent: number;
  failed500: number;
  failed503: number;
  throttled: number;
  resetBefore: number;
  resetAfter: number;
  hung: number;
  upstreamError: number;
  /** Quote/lead requests answered 503 because the `capacity` queue was full. */
  queueFull: number;
}

/**
 * Quote and lead together in one wall-clock second: the requests that arrived, and the requests
 * that ended, by how they ended.
 */
export interface SecondStats {
  /** Seconds since the wall-clock second of start or reset (`since`): 0 is that (partial) second. */
  second: number;
  /** Requests whose body arrived in this second (the offered load). */
  received: number;
  /** Requests answered 2xx in this second (the partner's throughput). */
  accepted: number;
  /** Requests answered 429 in this second (the rate cap or an injected throttle). */
  throttled: number;
  /** Requests that ended any other way in this second: another status, a reset or a hang. */
  errors: number;
}

/** Seconds of per-second counts kept after start or reset (6 h); later seconds are not counted. */
export const MAX_TIMELINE_SECONDS = 6 * 3600;

/** The body of `GET /__sandbox/stats` (and of `handle.stats()`). */
export interface SandboxStats {
  operations: Record<SandboxOperation, OperationStats>;
  /** Answers by HTTP status over the three operations. */
  statuses: Record<string, number>;
  faults: FaultStats;
  /** Per lead key. */
  leads: Record<string, LeadStats>;
  /** Lead keys processed more than once (sorted). */
  duplicateLeads: string[];
  /** Requests to paths that are not an operation or a `/__sandbox/` route. */
  unknownRoutes: number;
  /**
   * Connections: `accepted` (over HTTPS, once the handshake is done: a keep-alive connection carries
   * many requests), and, over HTTPS, `refused` in the handshake (no client certificate it trusts).
   */
  connections: { accepted: number; refused: number };
  /** When the counts started (start or the last reset), ISO 8601. */
  since: string;
  /**
   * Per operation, the time from a request's body arriving to its answer, for the requests the
   * partner worked on (queue wait included; injected faults and 429s are not worked on).
   */
  latencyMs: Record<SandboxOperation, LatencySummary>;
  /** One entry per wall-clock second from `since` to the last second anything was counted in. */
  perSecond: SecondStats[];
  /** The quote/lead engine's load (see `capacity`). */
  capacity: CapacityStats;
}

function emptyFaults(): FaultStats {
  return {
    outage: 0, rpsCapped: 0, quotaSpent: 0, failed500: 0, failed503: 0, throttled: 0, resetBefore: 0, resetAfter: 0, hung: 0, upstreamError: 0,
    queueFull: 0,
  };
}

function emptyHistograms(): Record<SandboxOperation, LatencyHistogram> {
  return { validate: new LatencyHistogram(), quote: new LatencyHistogram(), lead: new LatencyHistogram() };
}

/** Per-second counters as parallel arrays, grown as seconds pass. */
interface Timeline {
  received: number[];
  accepted: number[];
  throttled: number[];
  errors: number[];
}

function emptyTimeline(): Timeline {
  return { received: [], accepted: [], throttled: [], errors: [] };
}

/** Adds 1 at `second`, filling the seconds before it with 0. */
function bump(counts: number[], second: number): void {
  while (counts.length <= second) counts.push(0);
  counts[second]! += 1;
}

/** Mutable counters; cheap to update on the hot path, copied out by {@link StatsRecorder.snapshot}. */
export class StatsRecorder {
  private received: Record<SandboxOperation, number> = { validate: 0, quote: 0, lead: 0 };
  private statusesByOperation: Record<SandboxOperation, Map<number, number>> = {
    validate: new Map(), quote: new Map(), lead: new Map(),
  };
  private leads = new Map<string, LeadStats>();
  private latency = emptyHistograms();
  private timeline = emptyTimeline();
  private since = new Date();
  /** `performance.now()` at start or reset: the origin of the cap schedule. */
  epochMs = performance.now();
  /**
   * `performance.now()` at the start of the wall-clock second of `epochMs`: per-second counts are
   * wall-clock seconds, as the window cap's are, so a window never spans two entries.
   */
  private originMs = this.epochMs - (this.since.getTime() % 1000);
  faults: FaultStats = emptyFaults();
  unknownRoutes = 0;
  connections = { accepted: 0, refused: 0 };

  countReceived(operation: SandboxOperation): void {
    this.received[operation] += 1;
  }

  countAnswer(operation: SandboxOperation, status: number): void {
    const map = this.statusesByOperation[operation];
    map.set(status, (map.get(status) ?? 0) + 1);
  }

  countLeadReceived(key: string): void {
    const lead = this.leads.get(key);
    if (lead === undefined) this.leads.set(key, { received: 1, processed: 0 });
    else lead.received += 1;
  }

  countLeadProcessed(key: string): void {
    const lead = this.leads.get(key);
    if (lead === undefined) this.leads.set(key, { received: 0, processed: 1 });
    else lead.processed += 1;
  }

  /** The entry of a monotonic time, or -1 past {@link MAX_TIMELINE_SECONDS}. */
  private secondOf(monotonicMs: number): number {
    const second = Math.floor((monotonicMs - this.originMs) / 1000);
    return second < MAX_TIMELINE_SECONDS ? second : -1;
  }

  /** A quote/lead request whose body arrived at `arrivedAtMs` (monotonic). */
  countArrival(arrivedAtMs: number): void {
    const second = this.secondOf(arrivedAtMs);
    if (second >= 0) bump(this.timeline.received, second);
  }

  /**
   * How a quote/lead request ended at `endedAtMs`: an HTTP status, or 0 for a reset or hang.
   * A request that arrived before the last reset belongs to no entry.
   */
  countEnding(arrivedAtMs: number, endedAtMs: number, status: number): void {
    const second = arrivedAtMs < this.epochMs ? -1 : this.secondOf(endedAtMs);
    if (second < 0) return;
    if (status >= 200 && status < 300) bump(this.timeline.accepted, second);
    else if (status === 429) bump(this.timeline.throttled, second);
    else bump(this.timeline.errors, second);
  }

  /** The partner-side latency of a request worked on, unless it arrived before the last reset. */
  recordLatency(operation: SandboxOperation, arrivedAtMs: number, answeredAtMs: number): void {
    if (arrivedAtMs >= this.epochMs) this.latency[operation].record(answeredAtMs - arrivedAtMs);
  }

  reset(): void {
    this.epochMs = performance.now();
    this.since = new Date();
    this.originMs = this.epochMs - (this.since.getTime() % 1000);
    this.latency = emptyHistograms();
    this.timeline = emptyTimeline();
    this.received = { validate: 0, quote: 0, lead: 0 };
    this.statusesByOperation = { validate: new Map(), quote: new Map(), lead: new Map() };
    this.leads = new Map();
    this.faults = emptyFaults();
    this.unknownRoutes = 0;
    this.connections = { accepted: 0, refused: 0 };
  }

  snapshot(capacity: CapacityStats): SandboxStats {
    const statuses: Record<string, number> = {};
    const operations = {} as Record<SandboxOperation, OperationStats>;
    for (const operation of ['validate', 'quote', 'lead'] as const) {
      const own: Record<string, number> = {};
      for (const [status, count] of [...this.statusesByOperation[operation]].sort((a, b) => a[0] - b[0])) {
        own[String(status)] = count;
        statuses[String(status)] = (statuses[String(status)] ?? 0) + count;
      }
      operations[operation] = { received: this.received[operation], statuses: own };
    }
    // fromEntries defines own properties, so a key such as "__proto__" is stored like any other.
    const leads: Record<string, LeadStats> = Object.fromEntries([...this.leads].map(([key, lead]) => [key, { ...lead }]));
    const duplicateLeads = [...this.leads].filter(([, lead]) => lead.processed > 1).map(([key]) => key);
    duplicateLeads.sort();
    return {
      operations, statuses, faults: { ...this.faults }, leads, duplicateLeads, unknownRoutes: this.unknownRoutes, connections: { ...this.connections },
      since: this.since.toISOString(),
      latencyMs: { validate: this.latency.validate.summary(), quote: this.latency.quote.summary(), lead: this.latency.lead.summary() },
      perSecond: this.perSecond(),
      capacity,
    };
  }

  private perSecond(): SecondStats[] {
    const { received, accepted, throttled, errors } = this.timeline;
    const length = Math.max(received.length, accepted.length, throttled.length, errors.length);
    return Array.from({ length }, (_, second) => ({
      second,
      received: received[second] ?? 0,
      accepted: accepted[second] ?? 0,
      throttled: throttled[second] ?? 0,
      errors: errors[second] ?? 0,
    }));
  }
}
