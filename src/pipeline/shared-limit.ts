/**
 * What the workers of a job share of the partner's limit (PostgreSQL ledger, docs/ledger.md): a
 * Retry-After one of them is given pauses them all (`jobs.paused_until`, by the database's clock);
 * once a second each publishes where its limiter stands (`partner_limits`, one entry per worker) and
 * takes its share of what they pace at together (`partner/limiter/share.ts`); a worker that joins
 * starts from its share of what the others learned instead of from a cold start.
 */
import type { PgLedger } from '../ledger/postgres/ledger.js';
import type { Logger } from '../log.js';
import { jobShare, joiningShare, type ClientEvent, type PartnerClient, type WorkerLimit } from '../partner/index.js';

/** How often a worker publishes its limiter, takes its share and looks for a pause. */
const EVERY_MS = 1000;

/** Each worker's last published limiter state, by run id; malformed entries are left out. */
function parseEntries(stateJson: string | null): Map<string, WorkerLimit> {
  const entries = new Map<string, WorkerLimit>();
  if (stateJson === null) return entries;
  let parsed: unknown;
  try {
    parsed = JSON.parse(stateJson);
  } catch {
    return entries;
  }
  if (typeof parsed !== 'object' || parsed === null) return entries;
  for (const [runId, value] of Object.entries(parsed as Record<string, unknown>)) {
    const v = value as Partial<WorkerLimit> | null;
    if (v === null || typeof v.limit !== 'number' || !(v.limit > 0) || typeof v.at !== 'number') continue;
    entries.set(runId, {
      limit: v.limit, pace: typeof v.pace === 'number' && v.pace > 0 ? v.pace : null, at: v.at,
      baselineMs: typeof v.baselineMs === 'number' && v.baselineMs > 0 ? v.baselineMs : null,
    });
  }
  return entries;
}

export class SharedLimit {
  #timer: NodeJS.Timeout | undefined;
  #pausedUntil = 0;
  #ownUntil = 0;

  constructor(
    private readonly ledger: PgLedger,
    private readonly jobId: number,
    private readonly runId: number,
    private readonly client: PartnerClient,
    private readonly logger: Logger,
    /** Whether this worker has rows to send: one that has none publishes nothing, so that its share goes to the others. */
    private readonly sending: () => boolean,
  ) {}

  /** Where a worker joining job `jobId` starts: its share of what the live workers learned (the window within `ceiling`); null when none is live. */
  static async startOf(ledger: PgLedger, jobId: number, ceiling: number): Promise<{ limit: number; warm: boolean; pace: number | null; workers: number } | null> {
    const { stateJson, nowMs } = await ledger.sharedLimit(jobId);
    const share = joiningShare([...parseEntries(stateJson).values()], nowMs);
    return share.limit === null ? null : { limit: Math.min(ceiling, share.limit), warm: true, pace: share.pace, workers: share.workers };
  }

  /** The client's events: a Retry-After is published for every worker of the job. */
  readonly onClientEvent = (event: ClientEvent): void => {
    if (event.type !== 'retry_after') return;
    // Its own: held like the others' (all the job's workers pause), but not told as another worker's.
    this.#ownUntil = Math.max(this.#ownUntil, event.until.getTime());
    void this.ledger.pauseJob(this.jobId, event.until).catch(() => {});
  };

  start(): void {
    this.#timer = setInterval(() => void this.#tick().catch(() => {}), EVERY_MS);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
  }

  async #tick(): Promise<void> {
    const sending = this.sending();
    if (sending) {
      const { limit, learnedPace, baselineMs } = this.client.limiterState();
      await this.ledger.publishLimit(this.jobId, this.runId, JSON.stringify({ limit, pace: learnedPace, baselineMs }));
    }
    const { pausedUntil, stateJson, nowMs } = await this.ledger.sharedLimit(this.jobId);
    if (sending) this.client.shareLimit(jobShare([...parseEntries(stateJson).values()], nowMs));
    if (pausedUntil === null || pausedUntil.getTime() <= this.#pausedUntil) return;
    this.#pausedUntil = pausedUntil.getTime();
    if (this.client.holdUntil(pausedUntil, 'a worker of this job') === 'held' && pausedUntil.getTime() > this.#ownUntil + 50) {
      this.logger.info(`the partner asked a worker of this job to wait until ${pausedUntil.toISOString()}: no request leaves before then`, {
        event: 'retry_after_held', until: pausedUntil.toISOString(),
      });
    }
  }
}
