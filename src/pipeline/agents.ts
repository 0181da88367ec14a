/**
 * Agent validation once per distinct e-mail per job: concurrent rows with one e-mail share one
 * call, and a result recorded by an earlier run of the same job is reused. Only a readable answer
 * is a result (README, agent validation): HTTP 200, `status` success, `data.is_valid` a boolean. Anything else is
 * a transient failure of that call — retried by the client, never stored as "not valid".
 */
import type { RunLedger } from '../ledger/index.js';
import { now } from '../ledger/index.js';
import { readValidation, type CallOptions, type PartnerClient } from '../partner/index.js';
import type { Environment } from '../partner/types.js';

export type AgentResult =
  /** Valid; `agentId` undefined when the partner gave none (quotes are sent without it). */
  | { kind: 'valid'; agentId: string | undefined }
  | { kind: 'invalid'; message: string }
  /** 400 (or another final 4xx) from validation: the e-mail itself is unusable; the row is `invalid`. */
  | { kind: 'bad_request'; message: string; httpStatus: number | null; errorCode: string | null }
  /** The client halted (key or endpoint refused, the partner gone, a long Retry-After): nothing decided. */
  | { kind: 'halted' }
  /** Stopped while waiting (Ctrl-C): nothing decided. */
  | { kind: 'stopped' }
  /** Transient failure, attempts used up: the row is `failed` and retried next run. */
  | { kind: 'failed'; message: string; httpStatus: number | null; errorCode: string | null };

export class AgentResolver {
  private readonly cache = new Map<string, Promise<AgentResult>>();
  /** Number of validation calls made by this run (the benchmark checks it equals distinct e-mails). */
  calls = 0;

  constructor(
    private readonly client: PartnerClient,
    private readonly ledger: RunLedger,
    private readonly environment: Environment,
    private readonly jobId: number,
    private readonly runId: number,
    private readonly callOptions: Pick<CallOptions, 'signal'>,
    /** Told once per agent that is valid but has no agent id. */
    private readonly onValidWithoutId: (email: string) => void = () => {},
  ) {}

  resolve(email: string, rowNumber: number): Promise<AgentResult> {
    let result = this.cache.get(email);
    if (result === undefined) {
      result = this.lookup(email, rowNumber).then((answer) => {
        // Only a result is kept: the next row with this e-mail asks again after a failure, so an
        // outage keeps meeting the circuit breaker instead of failing every row at once.
        if (answer.kind !== 'valid' && answer.kind !== 'invalid' && answer.kind !== 'bad_request') this.cache.delete(email);
        return answer;
      });
      this.cache.set(email, result);
    }
    return result;
  }

  private async lookup(email: string, rowNumber: number): Promise<AgentResult> {
    const known = await this.ledger.getAgent(this.environment, email);
    if (known !== undefined && known.job_id === this.jobId) {
      return known.is_valid === 1
        ? { kind: 'valid', agentId: known.agent_id ?? undefined }
        : { kind: 'invalid', message: known.message ?? 'agent is not valid' };
    }
    this.calls += 1;
    const outcome = await this.client.validateAgent(email, this.callOptions);
    if (outcome.attempts.length > 0) await this.ledger.recordAttempts(this.jobId, this.runId, rowNumber, outcome.attempts, email);
    switch (outcome.kind) {
      case 'ok': {
        const result = readValidation(outcome.body);
        if (result === undefined) {
          // The classifier calls a 2xx `ok` only when readable: this is a guard, not a path.
          return { kind: 'failed', message: `agent validation: unreadable answer (${outcome.message})`, httpStatus: outcome.httpStatus, errorCode: 'unreadable_answer' };
        }
        await this.ledger.upsertAgent({
          environment: this.environment,
          email,
          is_valid: result.isValid ? 1 : 0,
          agent_id: result.agentId ?? null,
          message: result.message,
          checked_at: now(),
          job_id: this.jobId,
        });
        if (!result.isValid) return { kind: 'invalid', message: result.message === '' ? 'agent is not valid' : result.message };
        if (result.agentId === undefined) this.onValidWithoutId(email);
        return { kind: 'valid', agentId: result.agentId };
      }
      case 'rejected':
        return { kind: 'bad_request', message: `agent validation: ${outcome.message}`, httpStatus: outcome.httpStatus, errorCode: outcome.errorCode };
      case 'forbidden':
      case 'misrouted':
        return { kind: 'halted' };
      default:
        if (outcome.errorCode === 'halted' || outcome.halt !== undefined) return { kind: 'halted' };
        if (outcome.errorCode === 'aborted') return { kind: 'stopped' };
        return { kind: 'failed', message: `agent validation: ${outcome.message}`, httpStatus: outcome.httpStatus, errorCode: outcome.errorCode };
    }
  }
}
