/**
 * What an unattended run tells its operators while it works (README, --json-log): the client's breaker
 * and halt events as log lines at their level (warn when the partner looks down and when it is back,
 * with when the run will give up; error when it halts), retries piling up (at least 5% of requests)
 * as a warn line at most every half minute, and one `run_samples` row per second (requests allowed
 * and in flight, the pace, answers, 429s, errors, rows done, latency) for the report's charts.
 */
import { exitCodeOfError, type ErrorCode } from '../errors.js';
import type { RunLedger } from '../ledger/index.js';
import type { Logger } from '../log.js';
import { formatDuration } from '../duration.js';
import type { AnnouncedWindowShown, ClientEvent, PartnerClient } from '../partner/index.js';
import { describeWindow } from '../partner/announced-limit.js';
import { limitSetBy, settledLimitOf, settledPaceOf, type LimitSample } from '../partner/settled-limit.js';
import { NETWORK_HALT_HINTS, settleInDoubt, type AdviceTarget } from '../advice.js';

const SAMPLE_EVERY_MS = 1000;
/** Transient failures (5xx, time-outs, 429s) within this window that make a warn line. */
const RETRY_WARN_WINDOW_MS = 30_000;
const RETRY_WARN_MIN = 5;
/**
 * ...and the share of the window's requests they must be. Adaptive concurrency finds a rate cap by
 * meeting it: 1–3% of requests answered 429 all night is it working, and a warning every half
 * minute for it taught ops to ignore the line.
 */
const RETRY_WARN_MIN_SHARE = 0.05;

/** A second paced at this share of the partner's announced rate or more was paced by it (the pace sits at it, rounded). */
const ANNOUNCED_PACED_SHARE = 0.99;

/** A second in which at least this share of `--rate` was sent was held back by it. */
const RATE_HELD_SHARE = 0.8;

/**
 * What held a window our side kept below the ceiling (see `limitSetBy`'s `run`): `--rate`, when at
 * least half of the seconds sent at 80% of it or more; else the input, which had fewer requests
 * for the run to send than the window allowed (a small file, rows mostly skipped, a slow reader).
 * `sent`: requests sent in each second of the run, up to the partner's last answer.
 */
export function sendsHeldBy(sent: readonly number[], rate: number | null): 'rate' | 'input' {
  if (rate === null || sent.length === 0) return 'input';
  const atRate = sent.filter((n) => n >= RATE_HELD_SHARE * rate).length;
  return atRate >= sent.length / 2 ? 'rate' : 'input';
}

/** True when a window's 429s and transient failures are many enough, and a large enough share of its requests, to warn of. */
export function retriesPileUp(attempts: number, throttled: number, errors: number): boolean {
  const pushedBack = throttled + errors;
  return pushedBack >= RETRY_WARN_MIN && pushedBack >= RETRY_WARN_MIN_SHARE * attempts;
}

const OPERATION_NAMES = { validate: 'agent validation', submit: 'quotes/leads' } as const;

/** The code of a halt (README "Errors") and what the operator should do about it. No secret in either. */
export function haltAdvice(event: Extract<ClientEvent, { type: 'halt' }>, here: AdviceTarget): { code: ErrorCode; hint: string } {
  switch (event.kind) {
    case 'forbidden':
      return { code: 'E_FORBIDDEN', hint: 'check the API key (QUOTE_BATCH_API_KEY or --api-key-file) is the one issued for this environment (--env, --base-url), then run the same command again to resume' };
    case 'misrouted':
      return { code: 'E_MISROUTED', hint: 'check the base URL (--base-url, --env, QUOTE_BATCH_*_URL or the config file) and any gateway in between, then run the same command again to resume' };
    case 'retry_after':
      return {
        code: 'E_RETRY_AFTER',
        hint: `run the same command again after ${event.retryAfter?.toISOString() ?? 'the time the partner asked for'} to resume (or raise --max-retry-after to wait inside the run)`,
      };
    case 'quota':
      return {
        code: 'E_QUOTA_SPENT',
        hint: `run the same command again after ${event.retryAfter?.toISOString() ?? 'the quota\'s reset'} to send the rows left pending (or raise --max-retry-after to wait for the reset inside the run)`,
      };
    case 'outage':
      return { code: 'E_CIRCUIT_OPEN', hint: 'the partner looks down: run the same command again later to resume (--max-outage sets how long a run waits for it)' };
    case 'refused':
      return { code: 'E_RATE_LIMITED', hint: "the partner takes no request from this key (every one answered 429): run the same command again once its quota is renewed (ask the partner when), to resume; --max-outage sets how long a run waits for it" };
    case 'unreachable':
      return { code: 'E_UNREACHABLE', hint: event.hint ?? 'check the base URL (--base-url, --env, QUOTE_BATCH_*_URL or the config file), then run the same command again' };
    case 'in_doubt':
      return { code: 'E_CIRCUIT_OPEN', hint: `the partner stopped answering after requests were sent, leaving rows in doubt: ${settleInDoubt(here)}, then run the same command again later to resume` };
    case 'proxy_auth':
      return { code: 'E_PROXY_AUTH', hint: `${NETWORK_HALT_HINTS.proxy_auth} to resume` };
    case 'tls_trust':
    case 'tls_client_cert':
      return { code: 'E_TLS', hint: `${NETWORK_HALT_HINTS[event.kind]} to resume` };
  }
}

/** An announced window in a log line: `40 requests per second`, `500 requests per 1h`. */
function describeShown(w: AnnouncedWindowShown): string {
  return describeWindow({ limit: w.limit, windowS: w.window_s, remaining: w.remaining, longestResetS: 0 });
}

/** Announced windows as --json-log fields: the first's limit and length, and all of them as `name:limit/length` text. */
function windowFields(windows: readonly AnnouncedWindowShown[]): { limit: number | null; window_s: number | null; windows: string } {
  return {
    limit: windows[0]?.limit ?? null,
    window_s: windows[0]?.window_s ?? null,
    windows: windows.map((w) => `${w.name === null ? '' : `${w.name}:`}${w.limit ?? '?'}/${w.window_s ?? '?'}s`).join(','),
  };
}

export class RunMonitor {
  #timer: NodeJS.Timeout | undefined;
  #startedAt = performance.now();
  #rowsDoneAt = 0;
  #windowStartedAt = performance.now();
  #windowThrottled = 0;
  #windowErrors = 0;
  #windowAttempts = 0;
  /** Limit, requests in flight, pushback, pace (null: not pacing) and requests sent of every sample, in time order (one a second: small even for a night's run). */
  readonly #samples: (LimitSample & { pace: number | null; sent: number; announced: number | null })[] = [];
  /** The client sampled (set by {@link start}): what it read of the partner's announced limit is recorded with the run. */
  #client: PartnerClient | undefined;
  /**
   * Samples up to the last one in which the partner answered a quote or lead (an answer other than
   * a transient failure), as `report` counts them: later ones show the back-off of an outage, not
   * its limit (validations, the breaker's probes among them, may answer while quotes fail).
   */
  #answeredSamples = 0;
  /** True when a sample after that one saw failures: the partner stopped answering before the run ended. */
  #silentAtEnd = false;
  #stopped = false;

  constructor(
    private readonly ledger: RunLedger,
    private readonly logger: Logger,
    private readonly jobId: number,
    private readonly runId: number,
    private readonly maxOutageMs: number,
  ) {}

  /** The client's `onEvent`: log lines, and the probes recorded as attempts (row_number null). */
  readonly onClientEvent = (event: ClientEvent): void => {
    if (this.#stopped) return;
    switch (event.type) {
      case 'breaker_open': {
        const giveUp = event.giveUpAt === null
          ? 'it will wait for the partner however long it takes (--max-outage 0)'
          : `the run gives up at ${event.giveUpAt.toISOString()} (--max-outage ${formatDuration(this.maxOutageMs)}) unless it recovers`;
        const looks = event.cause === 'refusals' ? 'the partner refuses every request (its quota for this key may be spent)' : 'the partner looks down';
        this.logger.warn(
          `${looks} (${OPERATION_NAMES[event.operation]}): ${event.reason}; no ${event.operation === 'submit' ? 'quote or lead' : 'validation'} leaves while the circuit breaker is open; probing with agent validation; ${giveUp}`,
          { event: 'breaker_open', operation: event.operation, cause: event.cause, give_up_at: event.giveUpAt?.toISOString() ?? null },
        );
        break;
      }
      case 'breaker_closed':
        this.logger.warn(`the partner answers again (${OPERATION_NAMES[event.operation]}) after ${formatDuration(event.outageMs)}: sending resumes`, {
          event: 'breaker_closed', operation: event.operation, outage_ms: event.outageMs,
        });
        break;
      case 'probe':
        this.#record(() => this.ledger.recordAttempts(this.jobId, this.runId, null, [event.attempt], event.email));
        this.logger.info(`probe: agent validation ${event.answered ? 'answered' : `failed (${event.attempt.errorCode ?? event.attempt.httpStatus ?? '?'})`}`, {
          event: 'probe', answered: event.answered, http_status: event.attempt.httpStatus,
        });
        break;
      case 'limit_announced':
        this.#recordAnnounced();
        this.logger.info(`the partner announces its limit: ${event.windows.map(describeShown).join(', ')} (${event.headers}); sends stay within it`, {
          event: 'limit_announced', headers: event.headers, ...windowFields(event.windows),
        });
        break;
      case 'limit_distrusted':
        this.#recordAnnounced();
        this.logger.warn(
          `the partner answered ${event.throttled} of the last ${event.answers} requests sent within the limit it announces (${event.windows.map(describeShown).join(', ')}; ${event.headers}) with 429: that limit is not kept to, and is ignored for the rest of the run; the pace is learned from the partner's 429s`,
          { event: 'limit_distrusted', headers: event.headers, ...windowFields(event.windows), throttled: event.throttled, answers: event.answers },
        );
        break;
      case 'quota_wait':
        this.logger.warn(`the partner's quota for this key is spent (${describeShown(event.window)}): no request leaves before its reset at ${event.until.toISOString()} (within --max-retry-after)`, {
          event: 'quota_wait', until: event.until.toISOString(), ...windowFields([event.window]),
        });
        break;
      case 'halt': {
        // Like every error line under --json-log: its code, what to do, and the exit code (a halt is always 3).
        const { code, hint } = haltAdvice(event, { ledger: this.ledger.path, job: this.jobId });
        this.logger.error(`halting: ${event.reason}`, {
          event: 'halt', code, hint, exit_code: exitCodeOfError(code), ...(event.since === undefined ? {} : { refused_since: event.since.toISOString() }),
        });
        break;
      }
    }
  };

  /** Starts sampling the client once a second. */
  start(client: PartnerClient, rowsDone: () => number): void {
    this.#client = client;
    this.#startedAt = performance.now();
    this.#timer = setInterval(() => this.#sample(client, rowsDone()), SAMPLE_EVERY_MS);
    this.#timer.unref();
  }

  /** Stops sampling, recording the last partial second. */
  stop(client: PartnerClient, rowsDone: () => number): void {
    if (!this.#stopped) this.#recordAnnounced();
    this.#stopped = true;
    if (this.#timer === undefined) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#sample(client, rowsDone());
  }

  /**
   * Seconds of the run (up to the partner's last answer) in which the partner announced a rate it
   * kept to (`announced`), and of those, the seconds its announced rate paced the sends (`paced`:
   * the pace was at it, not below it for 429s, nor absent because the window held the sends).
   */
  announcedPacing(): { announced: number; paced: number } {
    const samples = this.#samples.slice(0, this.#answeredSamples);
    const announced = samples.filter((x) => x.announced !== null);
    return { announced: announced.length, paced: announced.filter((x) => x.pace !== null && x.pace >= ANNOUNCED_PACED_SHARE * (x.announced as number)).length };
  }

  /** What the client read of the partner's announced limit, into `runs.announced_json` (when there is something to say). */
  #recordAnnounced(): void {
    const announced = this.#client?.announcedLimit() ?? null;
    if (announced !== null) this.#record(() => this.ledger.recordAnnouncedLimit(this.runId, announced));
  }

  /**
   * Where the limit settled, as `report` says it: from the samples up to the partner's last answer
   * (`beforeSilence` when it stopped answering before the run ended), the pace when the run was
   * pacing then (a rate cap), and `heldBy` when that limit, below `ceiling`, is not one the
   * partner set (see `limitSetBy`): our side held the sends back, `--rate` (`rate`, requests/s) or
   * the input (see {@link sendsHeldBy}). Null when the partner answered nothing.
   */
  settled(ceiling: number, rate: number | null): { limit: number; samples: number; pace: number | null; beforeSilence: boolean; heldBy: 'rate' | 'input' | null } | null {
    const samples = this.#samples.slice(0, this.#answeredSamples);
    const settled = settledLimitOf(samples.map((x) => x.lim));
    if (settled === null) return null;
    return {
      limit: settled.limit,
      samples: settled.samples,
      pace: settledPaceOf(samples.map((x) => x.pace)),
      beforeSilence: this.#silentAtEnd,
      heldBy: limitSetBy(samples, settled.limit, ceiling) === 'run' ? sendsHeldBy(samples.map((x) => x.sent), rate) : null,
    };
  }

  /**
   * A write of the monitor's (a sample, a probe): the SQLite ledger's throws at once and stops the
   * run as an internal error, as it did; a PostgreSQL one that fails loses that line only.
   */
  #record(write: () => unknown): void {
    const done = write();
    if (done instanceof Promise) done.catch(() => {});
  }

  #sample(client: PartnerClient, rowsDone: number): void {
    const s = client.takeSample();
    const elapsedMs = performance.now() - this.#startedAt;
    const limit = Math.round(s.limit * 100) / 100;
    const paceRate = s.paceRate === null ? null : Math.round(s.paceRate * 100) / 100;
    const announcedRate = s.announcedRate === null ? null : Math.round(s.announcedRate * 100) / 100;
    this.#samples.push({ lim: limit, inFlight: s.inFlight, pushedBack: s.throttled + s.errors, pace: paceRate, sent: s.attempts, announced: announcedRate });
    if (s.submitsAnswered > 0) {
      this.#answeredSamples = this.#samples.length;
      this.#silentAtEnd = false;
    } else if (s.errors > 0) this.#silentAtEnd = true;
    this.#record(() => this.ledger.recordRunSample(this.runId, {
      elapsedMs,
      concurrencyLimit: limit,
      inFlight: s.inFlight,
      inFlightMax: s.inFlightMax,
      attempts: s.attempts,
      throttled: s.throttled,
      errors: s.errors,
      rowsDone: rowsDone - this.#rowsDoneAt,
      latencyP50Ms: s.latencyP50Ms,
      paceRate,
      submitsAnswered: s.submitsAnswered,
      announcedRate,
    }));
    this.#rowsDoneAt = rowsDone;
    this.#windowAttempts += s.attempts;
    this.#windowThrottled += s.throttled;
    this.#windowErrors += s.errors;
    const now = performance.now();
    // The last sample judges the window it ends, however short: a run under half a minute, or the
    // end of a longer one, warns too.
    if (now - this.#windowStartedAt < RETRY_WARN_WINDOW_MS && !this.#stopped) return;
    if (retriesPileUp(this.#windowAttempts, this.#windowThrottled, this.#windowErrors)) {
      const seconds = Math.round((now - this.#windowStartedAt) / 1000);
      this.logger.warn(
        `retries piling up: in the last ${seconds} s the partner answered ${this.#windowThrottled} × 429 (slow down) and ${this.#windowErrors} transient failures out of ${this.#windowAttempts} requests; ${Math.round(s.limit * 10) / 10} requests allowed in flight now`,
        { event: 'retries', throttled: this.#windowThrottled, errors: this.#windowErrors, attempts: this.#windowAttempts, limit: s.limit },
      );
    }
    this.#windowStartedAt = now;
    this.#windowThrottled = 0;
    this.#windowErrors = 0;
    this.#windowAttempts = 0;
  }
}
