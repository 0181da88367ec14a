/**
 * What the workers of a job share of the partner's limit (PostgreSQL ledger): a Retry-After one of
 * them is given pauses them all (`jobs.paused_until`, by the database's clock), and each publishes
 * where its limiter stands once a second (`partner_limits`), so that a worker that joins starts from
 * what the others learned instead of from a cold start.
 */
import type { PgLedger } from '../ledger/postgres/ledger.js';
import type { Logger } from '../log.js';
import type { ClientEvent, PartnerClient } from '../partner/index.js';

/** How often a worker publishes its limiter and looks for a pause. */
const EVERY_MS = 1000;

interface Published {
  /** Requests the publishing worker allowed in flight. */
  limit: number;
  /** Requests/s it paced at (null: not pacing). */
  pace: number | null;
  /** Workers live when it published. */
  workers: number;
}

export class SharedLimit {
  #timer: NodeJS.Timeout | undefined;
  #pausedUntil = 0;

  constructor(
    private readonly ledger: PgLedger,
    private readonly jobId: number,
    private readonly client: PartnerClient,
    private readonly logger: Logger,
  ) {}

  /** What the workers of job `jobId` last published; null when nothing was. */
  static async read(ledger: PgLedger, jobId: number): Promise<{ startAt(ceiling: number): { limit: number; warm: boolean; pace: number | null } | null } | null> {
    const { stateJson } = await ledger.sharedLimit(jobId);
    if (stateJson === null) return null;
    let published: Published;
    try {
      published = JSON.parse(stateJson) as Published;
    } catch {
      return null;
    }
    return {
      startAt: (ceiling) => (typeof published.limit === 'number' && published.limit > 0
        ? { limit: Math.min(ceiling, published.limit), warm: true, pace: typeof published.pace === 'number' && published.pace > 0 ? published.pace : null }
        : null),
    };
  }

  /** The client's events: a Retry-After is published for every worker of the job. */
  readonly onClientEvent = (event: ClientEvent): void => {
    if (event.type !== 'retry_after') return;
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
    const { limit, pace } = this.client.limiterState();
    await this.ledger.publishLimit(this.jobId, JSON.stringify({ limit, pace, workers: 0 } satisfies Published));
    const { pausedUntil } = await this.ledger.sharedLimit(this.jobId);
    if (pausedUntil === null || pausedUntil.getTime() <= this.#pausedUntil) return;
    this.#pausedUntil = pausedUntil.getTime();
    if (this.client.holdUntil(pausedUntil, 'a worker of this job') === 'held') {
      this.logger.info(`the partner asked a worker of this job to wait until ${pausedUntil.toISOString()}: no request leaves before then`, {
        event: 'retry_after_held', until: pausedUntil.toISOString(),
      });
    }
  }
}
