/**
 * Agent validation once per distinct e-mail per job: concurrent rows with one e-mail share one
 * call, and a definitive answer recorded by an earlier run of the same job is reused.
 */
import type { Ledger } from '../ledger/index.js';
import { now } from '../ledger/index.js';
import type { CallOptions, PartnerClient } from '../partner/index.js';
import type { AttemptRecord, Environment } from '../partner/types.js';

export type AgentResult =
  | { kind: 'valid'; agentId: string }
  | { kind: 'invalid'; message: string }
  /** 400 from validation: the e-mail itself is unusable; the row is `invalid`. */
  | { kind: 'bad_request'; message: string; httpStatus: number | null; errorCode: string | null }
  | { kind: 'forbidden'; message: string }
  /** Transient failure, attempts used up: the row is `failed` and retried next run. */
  | { kind: 'failed'; message: string; httpStatus: number | null; errorCode: string | null };

export class AgentResolver {
  private readonly cache = new Map<string, Promise<AgentResult>>();
  /** Number of validation calls made by this run (the benchmark checks it equals distinct e-mails). */
  calls = 0;

  constructor(
    private readonly client: PartnerClient,
    private readonly ledger: Ledger,
    private readonly environment: Environment,
    private readonly jobId: number,
    private readonly runId: number,
    private readonly callOptions: Pick<CallOptions, 'signal'>,
  ) {}

  resolve(email: string, rowNumber: number): Promise<AgentResult> {
    let result = this.cache.get(email);
    if (result === undefined) {
      result = this.lookup(email, rowNumber).then((answer) => {
        // A transient failure is not an answer: the next row with this e-mail asks again, so an
        // outage keeps meeting the circuit breaker instead of failing every row at once.
        if (answer.kind === 'failed') this.cache.delete(email);
        return answer;
      });
      this.cache.set(email, result);
    }
    return result;
  }

  private async lookup(email: string, rowNumber: number): Promise<AgentResult> {
    const known = this.ledger.getAgent(this.environment, email);
    if (known !== undefined && known.job_id === this.jobId) {
      return known.is_valid === 1 && known.agent_id !== null
        ? { kind: 'valid', agentId: known.agent_id }
        : { kind: 'invalid', message: known.message ?? 'agent is not valid' };
    }
    this.calls += 1;
    const outcome = await this.client.validateAgent(email, this.callOptions);
    this.ledger.recordAttempts(this.jobId, this.runId, rowNumber, outcome.attempts as AttemptRecord[], email);
    switch (outcome.kind) {
      case 'ok': {
        const data = outcome.parsed?.data;
        const message = outcome.parsed?.message ?? '';
        const valid = data?.is_valid === true && typeof data.agent_id === 'string' && data.agent_id !== '';
        this.ledger.upsertAgent({
          environment: this.environment,
          email,
          is_valid: valid ? 1 : 0,
          agent_id: valid ? (data?.agent_id ?? null) : null,
          message,
          checked_at: now(),
          job_id: this.jobId,
        });
        if (valid) return { kind: 'valid', agentId: data?.agent_id as string };
        if (data === undefined) {
          return { kind: 'failed', message: `agent validation: unexpected response body (${outcome.message})`, httpStatus: outcome.httpStatus, errorCode: 'unexpected_response' };
        }
        return { kind: 'invalid', message: message === '' ? 'agent is not valid' : message };
      }
      case 'rejected':
        return { kind: 'bad_request', message: `agent validation: ${outcome.message}`, httpStatus: outcome.httpStatus, errorCode: outcome.errorCode };
      case 'forbidden':
        return { kind: 'forbidden', message: outcome.message };
      default:
        return { kind: 'failed', message: `agent validation: ${outcome.message}`, httpStatus: outcome.httpStatus, errorCode: outcome.errorCode };
    }
  }
}
