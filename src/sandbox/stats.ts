/**
 * What the sandbox counts, for tests and benchmarks: requests per operation, answers per HTTP
 * status, faults injected, and per lead key how often a quote/lead arrived and was processed.
 */

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
  failed500: number;
  failed503: number;
  throttled: number;
  resetBefore: number;
  resetAfter: number;
  hung: number;
  upstreamError: number;
}

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
}

function emptyFaults(): FaultStats {
  return { outage: 0, rpsCapped: 0, failed500: 0, failed503: 0, throttled: 0, resetBefore: 0, resetAfter: 0, hung: 0, upstreamError: 0 };
}

/** Mutable counters; cheap to update on the hot path, copied out by {@link StatsRecorder.snapshot}. */
export class StatsRecorder {
  private received: Record<SandboxOperation, number> = { validate: 0, quote: 0, lead: 0 };
  private statusesByOperation: Record<SandboxOperation, Map<number, number>> = {
    validate: new Map(), quote: new Map(), lead: new Map(),
  };
  private leads = new Map<string, LeadStats>();
  faults: FaultStats = emptyFaults();
  unknownRoutes = 0;

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

  reset(): void {
    this.received = { validate: 0, quote: 0, lead: 0 };
    this.statusesByOperation = { validate: new Map(), quote: new Map(), lead: new Map() };
    this.leads = new Map();
    this.faults = emptyFaults();
    this.unknownRoutes = 0;
  }

  snapshot(): SandboxStats {
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
    return { operations, statuses, faults: { ...this.faults }, leads, duplicateLeads, unknownRoutes: this.unknownRoutes };
  }
}
