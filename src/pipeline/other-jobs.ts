/**
 * What other jobs of the ledger already did with a row's lead. A file fixed in place, a mapping
 * edited, or `--fresh`, is a new job (README, "Outcomes, resume and the ledger"): without this, every lead an earlier job sent
 * would reach the partner again. In uat and production, for another job of the same environment and
 * operation:
 *
 * - a row whose key it sent (`succeeded`), or may have (`in_doubt`, `in_flight`), is recorded
 *   `duplicate` (`sent_by_other_job`), not sent. Looked up when the row is read, and again in the
 *   transaction that marks it `in_flight`: that one also sees a job running beside this one, and
 *   rows an interrupted run of this job left `pending`;
 * - a row whose very request the partner rejected there (the same body, by its SHA-256) is recorded
 *   `rejected` with that answer, without an attempt, when about to be sent: the partner would refuse
 *   it again. A row whose data was fixed is a different request, and is sent.
 *
 * `--resend-sent` turns both off. The embedded sandbox is started anew for each run, so there rows
 * are sent; only the first row another job sent is looked for, and warned of. Keys made from the
 * row number (`row-<n>`, a mapping that names no key) say nothing across files and are never
 * looked up. Log lines name rows and jobs, not keys (a key may be an e-mail address): the ledger's
 * `error_message` holds the key.
 */
import { createHash } from 'node:crypto';
import type { MarkLookup, RejectedRow, RunLedger, SentRow } from '../ledger/index.js';
import type { Logger } from '../log.js';
import type { MappedRow } from '../mapping/index.js';
import type { Environment, Operation } from '../partner/types.js';
import { decide } from './row-state.js';

export class OtherJobs {
  /** Rows recorded `duplicate` because another job sent their lead. */
  rowsSent = 0;
  /** Rows recorded `rejected` without being sent: the partner refused the same request in another job. */
  rowsRejected = 0;
  /** True in uat and production without `--resend-sent`: rows are kept from the partner. */
  readonly #guarded: boolean;
  /** Whether reading looks rows up: not once the sandbox warned, nor when no other job existed at the start. */
  #lookWhenRead: boolean;

  private constructor(
    private readonly ledger: RunLedger,
    private readonly jobId: number,
    private readonly environment: Environment,
    private readonly operation: Operation,
    resendSent: boolean,
    private readonly logger: Logger,
    otherJobExists: boolean,
  ) {
    this.#guarded = environment !== 'sandbox' && !resendSent;
    this.#lookWhenRead = !resendSent && otherJobExists;
  }

  static async create(ledger: RunLedger, jobId: number, environment: Environment, operation: Operation, resendSent: boolean, logger: Logger): Promise<OtherJobs> {
    const exists = !resendSent && await ledger.hasOtherJob(jobId, environment, operation);
    return new OtherJobs(ledger, jobId, environment, operation, resendSent, logger, exists);
  }

  /** When a row is read: the row of another job that sent its lead, when this row must not be sent. */
  async sentWhenRead(mapped: MappedRow): Promise<SentRow | undefined> {
    if (!this.#lookWhenRead || isRowNumberKey(mapped)) return undefined;
    const sent = await this.ledger.sentByOtherJob(this.jobId, this.environment, this.operation, mapped.rowKey);
    if (sent === undefined) return undefined;
    if (!this.#guarded) {
      this.#lookWhenRead = false;
      this.logger.warn(
        `row ${mapped.rowNumber}: its lead was already sent by job ${sent.job_id} (its row ${sent.row_number}, ${sent.state}); ` +
          'in the sandbox such rows are sent again; in uat and production they are recorded duplicate, not sent (unless --resend-sent)',
        { event: 'sent_by_other_job', row: mapped.rowNumber, job: sent.job_id },
      );
      return undefined;
    }
    this.#counted(mapped, sent);
    return sent;
  }

  /**
   * What the transaction that marks the row `in_flight` looks up (after that write, so what it reads
   * is the ledger as it is: no other process can commit until this transaction does): another job
   * that sent the lead since the row was read. Undefined when nothing is to be looked up.
   */
  lookupWhenMarked(mapped: MappedRow): MarkLookup | undefined {
    if (!this.#guarded || isRowNumberKey(mapped)) return undefined;
    return {
      environment: this.environment, operation: this.operation, rowKey: mapped.rowKey,
      sentBy: (sent) => decide({ type: 'sent_by_other_job', rowKey: mapped.rowKey, sent }),
    };
  }

  /** The mark's lookup found the lead sent: the row was recorded `duplicate` instead. */
  foundWhenMarked(mapped: MappedRow, sent: SentRow): void {
    this.#counted(mapped, sent);
  }

  /** The SHA-256 of a request body to record with its `in_flight` mark, for later jobs to compare; null in the sandbox. */
  requestHash(body: string): string | null {
    return this.environment === 'sandbox' ? null : createHash('sha256').update(body).digest('hex');
  }

  /** When about to send: the answer another job got for this very request, when the partner rejected it. */
  async rejectedBefore(mapped: MappedRow, hash: string | null): Promise<RejectedRow | undefined> {
    if (!this.#guarded || hash === null || isRowNumberKey(mapped)) return undefined;
    const rejected = await this.ledger.rejectedByOtherJob(this.jobId, this.environment, this.operation, mapped.rowKey, hash);
    if (rejected === undefined) return undefined;
    this.rowsRejected += 1;
    if (this.rowsRejected === 1) {
      this.logger.warn(
        `row ${mapped.rowNumber}: the partner rejected this very request in job ${rejected.job_id} (its row ${rejected.row_number}): ` +
          'recorded rejected with that answer, not sent again; likewise every other unchanged request it rejected before (fix the data, or --resend-sent)',
        { event: 'rejected_by_other_job', row: mapped.rowNumber, job: rejected.job_id },
      );
    }
    return rejected;
  }

  #counted(mapped: MappedRow, sent: SentRow): void {
    this.rowsSent += 1;
    if (this.rowsSent > 1) return;
    this.logger.warn(
      `row ${mapped.rowNumber}: its lead was already sent to the partner by job ${sent.job_id} (its row ${sent.row_number}, ${sent.state}): ` +
        `recorded duplicate, not sent; likewise every other row whose lead another job sent to ${this.environment} (--resend-sent sends them)`,
      { event: 'sent_by_other_job', row: mapped.rowNumber, job: sent.job_id },
    );
  }
}

function isRowNumberKey(mapped: MappedRow): boolean {
  return mapped.rowKey === `row-${mapped.rowNumber}`;
}
