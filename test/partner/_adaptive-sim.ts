/**
 * A deterministic discrete-event simulation of runs against a partner, in simulated time: the real
 * limiter (with the simulation's clock) between a pool of senders, like the pipeline's, and a
 * simulated partner (a rate cap, a worker pool with a queue, plain latency, errors at random). One
 * client, or several independent ones sharing the partner. Seeded; nothing sleeps for real, so
 * minutes of traffic take a fraction of a second.
 */
import { calculateRetryDelay } from '../../src/partner/backoff.js';
import type { ConcurrencyLimiter, LimiterClock } from '../../src/partner/limiter/index.js';
import { createRandom } from '../../src/sandbox/faults.js';

interface Timer {
  at: number;
  seq: number;
  run: () => void;
  cancelled: boolean;
}

/** Simulated time: timers in a binary heap, run in (time, creation) order. */
export class SimClock implements LimiterClock {
  #now = 0;
  #seq = 0;
  readonly #heap: Timer[] = [];

  now(): number {
    return this.#now;
  }

  schedule(callback: () => void, delayMs: number): () => void {
    const timer: Timer = { at: this.#now + Math.max(0, delayMs), seq: this.#seq++, run: callback, cancelled: false };
    this.#push(timer);
    return () => {
      timer.cancelled = true;
    };
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.schedule(resolve, ms));
  }

  /**
   * Runs timers until none is left, letting the promise chains each one starts settle before the
   * next (a macrotask turn per timer). At most `maxTimers`: a run that would not end fails.
   */
  async run(maxTimers: number): Promise<void> {
    for (let n = 0; n < maxTimers; n += 1) {
      const timer = this.#pop();
      if (timer === undefined) return;
      if (timer.cancelled) continue;
      this.#now = timer.at;
      timer.run();
      await new Promise((resolve) => setImmediate(resolve));
    }
    throw new Error(`the simulation did not end within ${maxTimers} timers (at ${this.#now} ms)`);
  }

  /** Lets what is pending now settle, runs the timers due until `at`, then moves the clock to `at`. */
  async runUntil(at: number): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    for (let top = this.#heap[0]; top !== undefined && top.at <= at; top = this.#heap[0]) {
      this.#pop();
      if (top.cancelled) continue;
      this.#now = top.at;
      top.run();
      await new Promise((resolve) => setImmediate(resolve));
    }
    this.#now = Math.max(this.#now, at);
  }

  #push(timer: Timer): void {
    const heap = this.#heap;
    heap.push(timer);
    for (let i = heap.length - 1; i > 0; ) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i] as Timer, heap[parent] as Timer)) break;
      [heap[i], heap[parent]] = [heap[parent] as Timer, heap[i] as Timer];
      i = parent;
    }
  }

  #pop(): Timer | undefined {
    const heap = this.#heap;
    const top = heap[0];
    const last = heap.pop();
    if (heap.length === 0 || last === undefined) return top;
    heap[0] = last;
    for (let i = 0; ; ) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && before(heap[l] as Timer, heap[m] as Timer)) m = l;
      if (r < heap.length && before(heap[r] as Timer, heap[m] as Timer)) m = r;
      if (m === i) break;
      [heap[i], heap[m]] = [heap[m] as Timer, heap[i] as Timer];
      i = m;
    }
    return top;
  }
}

const before = (a: Timer, b: Timer): boolean => a.at < b.at || (a.at === b.at && a.seq < b.seq);

/** How the partner answers one request that arrives at `at`. */
export interface SimAnswer {
  answerAt: number;
  /** `error`: a 5xx (or a transport failure): the client backs off and retries, as for a 429. */
  status: 'ok' | 'throttled' | 'error';
  /** A 429 without `Retry-After` (an HTML page from a gateway): the client backs off exponentially. */
  noRetryAfter?: boolean;
}

/** A simulated partner: decides each request's answer when it arrives (requests arrive in time order). */
export interface SimPartner {
  arrive(at: number): SimAnswer;
}

/** A log-normal draw in ms with the given median and sigma (Box–Muller over a seeded stream). */
export function logNormal(medianMs: number, sigma: number, random: () => number): () => number {
  return () => {
    if (sigma === 0) return medianMs;
    const u = Math.max(random(), 1e-12);
    const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
    return medianMs * Math.exp(sigma * z);
  };
}

/**
 * A requests-per-second cap: `window` counts per calendar second (the sandbox's `--rps-cap`),
 * `bucket` is a token bucket of `burst` tokens refilled at the cap (a leaky bucket). `cap(t)` may
 * change over time. A 429 is answered after the same latency as a success (as the sandbox does), or
 * at once; with `Retry-After`, or without (`noRetryAfter`).
 */
export function rateCapPartner(options: {
  cap: (atMs: number) => number;
  mode: 'window' | 'bucket';
  burst?: number;
  latency: () => number;
  /** Answer 429s at once instead of after the latency. */
  instantThrottle?: boolean;
  noRetryAfter?: boolean;
}): SimPartner {
  let second = -1;
  let count = 0;
  let tokens = options.burst ?? options.cap(0);
  let refilledAt = 0;
  return {
    arrive(at) {
      const cap = options.cap(at);
      let accepted: boolean;
      if (options.mode === 'window') {
        if (Math.floor(at / 1000) !== second) {
          second = Math.floor(at / 1000);
          count = 0;
        }
        accepted = count < cap;
        if (accepted) count += 1;
      } else {
        tokens = Math.min(options.burst ?? cap, tokens + ((at - refilledAt) * cap) / 1000);
        refilledAt = at;
        accepted = tokens >= 1;
        if (accepted) tokens -= 1;
      }
      const latency = options.latency();
      const answerAt = at + (accepted || options.instantThrottle !== true ? latency : 0);
      return accepted ? { answerAt, status: 'ok' } : { answerAt, status: 'throttled', noRetryAfter: options.noRetryAfter === true };
    },
  };
}

/**
 * At most `workers` requests worked on at once, the rest wait in a FIFO queue (latency = wait +
 * service); with `queueLimit`, a request that would wait behind that many is answered 503 at once.
 */
export function capacityPartner(options: { workers: number; service: () => number; queueLimit?: number }): SimPartner {
  const freeAt = new Array<number>(options.workers).fill(0);
  return {
    arrive(at) {
      // Arrivals come in time order, so the worker that frees first takes the next arrival: FIFO.
      let w = 0;
      for (let i = 1; i < freeAt.length; i += 1) if ((freeAt[i] as number) < (freeAt[w] as number)) w = i;
      if (options.queueLimit !== undefined && (freeAt[w] as number) > at) {
        const waiting = freeAt.filter((t) => t > at).length - options.workers + 1;
        if (waiting > options.queueLimit) return { answerAt: at, status: 'error' };
      }
      const done = Math.max(at, freeAt[w] as number) + options.service();
      freeAt[w] = done;
      return { answerAt: done, status: 'ok' };
    },
  };
}

/**
 * No limit: every request answered after its latency (`latency(at)` may change with the time it
 * arrives: the partner's own latency, no queue); with `throttle`, a share of them 429 at random, and
 * with `errors`, a share of them 500/503 at random, whatever the load.
 */
export function latencyPartner(options: {
  latency: (atMs: number) => number;
  throttle?: { share: number; random: () => number };
  errors?: { share: number; random: () => number };
}): SimPartner {
  const { throttle, errors } = options;
  return {
    arrive(at) {
      const answerAt = at + options.latency(at);
      if (errors !== undefined && errors.random() < errors.share) return { answerAt, status: 'error' };
      const throttled = throttle !== undefined && throttle.random() < throttle.share;
      return { answerAt, status: throttled ? 'throttled' : 'ok' };
    },
  };
}

/** One client: a run of `rows` rows through its own limiter. */
export interface SimClientOptions {
  rows: number;
  /** Senders working at once (the pipeline runs `--concurrency` row tasks). */
  senders: number;
  limiter: (clock: SimClock) => ConcurrencyLimiter;
  /** When the client starts, ms (several clients on one partner). */
  startAtMs?: number;
  /** Client CPU per answer on one core, ms: answers queue for it, which the measured latency includes. */
  clientCpuMs?: number;
  /** Attempts per row (the client's `--max-attempts`). */
  maxAttempts?: number;
}

export interface SimRunOptions extends SimClientOptions {
  partner: SimPartner;
  /** `Retry-After` of a 429, ms (the client adds a jitter below 500 ms, as `calculateRetryDelay`). */
  retryAfterMs?: number;
  seed?: number;
}

/** One second of a client's timeline. */
export interface SimSecond {
  t: number;
  limit: number;
  inFlight: number;
  rate: number | null;
  sent: number;
  ok: number;
  throttled: number;
  errors: number;
}

export interface SimResult {
  /** First request sent → last answer processed, ms. */
  durationMs: number;
  firstSendAt: number;
  lastAnswerAt: number;
  succeeded: number;
  failed: number;
  attempts: number;
  throttled: number;
  errors: number;
  /** 429s answered to requests sent in the client's first `n` seconds: `throttledBySecond[n]`. */
  throttledBySecond: number[];
  /** Median of the partner's latency of successes (its queue included), ms. */
  partnerMedianMs: number;
  timeline: SimSecond[];
}

/** Runs `rows` rows through the limiter against the partner and measures what the bench would. */
export async function simulateRun(options: SimRunOptions): Promise<SimResult> {
  const [result] = await simulateClients({ partner: options.partner, retryAfterMs: options.retryAfterMs, seed: options.seed, clients: [options] });
  return result as SimResult;
}

/** Several independent clients, each with its own limiter, senders and CPU, sending to one partner. */
export async function simulateClients(options: {
  partner: SimPartner;
  clients: readonly SimClientOptions[];
  retryAfterMs?: number | undefined;
  seed?: number | undefined;
}): Promise<SimResult[]> {
  const clock = new SimClock();
  const random = createRandom(options.seed ?? 1);
  const retryAfterMs = options.retryAfterMs ?? 1000;
  let running = 0;
  const runs = options.clients.map((client) => {
    running += client.senders;
    return startClient(client);
  });

  function startClient(client: SimClientOptions): { result: SimResult; senders: Promise<void>[] } {
    const limiter = client.limiter(clock);
    const maxAttempts = client.maxAttempts ?? 5;
    const cpuMs = client.clientCpuMs ?? 0;
    const startAt = client.startAtMs ?? 0;
    const result: SimResult = {
      durationMs: 0, firstSendAt: Number.POSITIVE_INFINITY, lastAnswerAt: 0, succeeded: 0, failed: 0, attempts: 0, throttled: 0, errors: 0,
      throttledBySecond: [], partnerMedianMs: Number.NaN, timeline: [],
    };
    const partnerLatencies: number[] = [];
    const second = { sent: 0, ok: 0, throttled: 0, errors: 0 };
    let coreFreeAt = 0;
    let nextRow = 0;
    let left = client.senders;

    const sender = async (): Promise<void> => {
      if (startAt > 0) await clock.sleep(startAt);
      while (nextRow < client.rows) {
        nextRow += 1;
        for (let attempt = 1; ; attempt += 1) {
          const slot = await limiter.acquire();
          if (slot === 'aborted') throw new Error('no signal was given: acquire cannot abort');
          slot.sent();
          const sentAt = clock.now();
          result.firstSendAt = Math.min(result.firstSendAt, sentAt);
          second.sent += 1;
          result.attempts += 1;
          const answer = options.partner.arrive(sentAt);
          await clock.sleep(answer.answerAt - sentAt);
          // One core processes the answers in turn: our own CPU shows in the latency we measure.
          coreFreeAt = Math.max(clock.now(), coreFreeAt) + cpuMs;
          await clock.sleep(coreFreeAt - clock.now());
          result.lastAnswerAt = clock.now();
          slot.release({ latencyMs: clock.now() - sentAt, signal: answer.status });
          if (answer.status === 'ok') {
            partnerLatencies.push(answer.answerAt - sentAt);
            second.ok += 1;
            result.succeeded += 1;
            break;
          }
          if (answer.status === 'throttled') {
            second.throttled += 1;
            result.throttled += 1;
            const s = Math.floor((sentAt - startAt) / 1000);
            while (result.throttledBySecond.length <= s) result.throttledBySecond.push(0);
            result.throttledBySecond[s] = (result.throttledBySecond[s] as number) + 1;
          } else {
            second.errors += 1;
            result.errors += 1;
          }
          if (attempt >= maxAttempts) {
            result.failed += 1;
            break;
          }
          // As the client: a Retry-After plus a jitter below 500 ms, else full-jitter exponential back-off.
          const withRetryAfter = answer.status === 'throttled' && answer.noRetryAfter !== true;
          await clock.sleep(calculateRetryDelay({
            attempt, retryAfterMs: withRetryAfter ? retryAfterMs : undefined, baseMs: 500, capMs: 30_000, retryAfterCapMs: 300_000, random,
          }) ?? 0);
        }
      }
      left -= 1;
      running -= 1;
    };

    const tick = (): void => {
      result.timeline.push({ t: (clock.now() - startAt) / 1000, limit: limiter.limit, inFlight: limiter.inFlight, rate: limiter.rate, ...second });
      second.sent = 0;
      second.ok = 0;
      second.throttled = 0;
      second.errors = 0;
      if (left > 0) clock.schedule(tick, 1000);
    };
    clock.schedule(tick, startAt + 1000);
    const senders = Array.from({ length: client.senders }, () => sender());
    return {
      result: Object.defineProperty(result, 'partnerMedianMs', { get: () => median(partnerLatencies), enumerable: true }),
      senders,
    };
  }

  const rows = options.clients.reduce((sum, c) => sum + c.rows, 0);
  await clock.run(50 * rows + 100_000);
  if (running > 0) throw new Error(`${running} senders still wait with no timer left: a limiter lost a wake-up`);
  await Promise.all(runs.flatMap((r) => r.senders));
  return runs.map(({ result }) => ({ ...result, durationMs: result.lastAnswerAt - result.firstSendAt }));
}

function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}
