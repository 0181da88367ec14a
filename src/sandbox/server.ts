/**
 * The sandbox HTTP server: plain `node:http`, one small function per request, no framework, so
 * that it is never the bottleneck of a benchmark. It decides when and whether a request is
 * answered (faults, the rate cap, the capacity queue, latency); `responses.ts` says what the
 * answer is. See docs/sandbox.md for the behaviour.
 */
import { createServer, type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { Socket, AddressInfo } from 'node:net';
import { timingSafeEqual } from 'node:crypto';
import { QuoteBatchError } from '../errors.js';
import { indexAgents, readAgentsFile, type AgentRecord } from './agents.js';
import {
  createNormalRandom, createRandom, DEFAULT_FAULTS, drawDelayMs, drawFaults, formatRetryAfter, mergeFaults,
  type FaultDraws, type SandboxFaults,
} from './faults.js';
import { announceHeaders, wholeSeconds, type GatewayWindow } from './announce.js';
import { capAt, parseRpsSchedule, QuotaGate, RateGate, type RpsStep } from './rate-limit.js';
import {
  answerOperation, extractLeadKey, faultAnswer, GATEWAY_THROTTLED, MAX_BODY_BYTES, validateError, type Answer, type OperationRequest,
} from './responses.js';
import { StatsRecorder, type SandboxOperation, type SandboxStats } from './stats.js';
import { WorkPool } from './work-pool.js';

/** How to start a sandbox. Every member is optional. */
export interface SandboxOptions {
  /** Port to listen on; 0 (the default) picks a free one. */
  port?: number;
  /** Loopback host to bind (default `127.0.0.1`); any other host is refused. */
  host?: string;
  /** The `x-api-key` value the sandbox accepts (default `sandbox-key`). */
  apiKey?: string;
  /** CSV file of known agents (`email,agent_id,eligible`). */
  agentsFile?: string;
  /** Known agents in memory (used instead of `agentsFile` when given). Without either, no agent is known. */
  agents?: readonly AgentRecord[];
  /** Seed of the fault draws (default 1): the same seed and request order reproduce the same faults. */
  seed?: number;
  /** Initial faults (all off by default). */
  faults?: Partial<SandboxFaults>;
  /** Serve HTTPS with this certificate and key (PEM); `clientCa` also requires a client certificate signed by it. */
  tls?: { cert: string; key: string; clientCa?: string };
}

/** A running sandbox. */
export interface SandboxHandle {
  /** Base URL, e.g. `http://127.0.0.1:41234` (`https://` with `tls`; no trailing slash). */
  readonly url: string;
  readonly port: number;
  /** A copy of the counters (same as `GET /__sandbox/stats`). */
  stats(): SandboxStats;
  /** Clears the counters and re-seeds the fault draws (same as `POST /__sandbox/reset`). */
  reset(): void;
  /** Changes some faults at run time (same as `POST /__sandbox/faults`); throws `E_USAGE` on a bad value. */
  setFaults(partial: Partial<SandboxFaults>): void;
  /** The faults in force. */
  faults(): SandboxFaults;
  /** Stops listening and ends every connection at once, hung and keep-alive ones included. */
  close(): Promise<void>;
}

/** The default key accepted when none is configured. */
export const DEFAULT_SANDBOX_API_KEY = 'sandbox-key';
export const DEFAULT_SANDBOX_SEED = 1;

const OPERATION_PATHS: ReadonlyMap<string, SandboxOperation> = new Map([
  ['/account/v1/agent/validate', 'validate'],
  ['/partner/v2/policy/quote', 'quote'],
  ['/partner/v2/policy/lead', 'lead'],
]);

/** One operation request whose body arrived, on its way to an answer. */
interface Pending {
  operation: SandboxOperation;
  res: ServerResponse;
  /** `performance.now()` when the body arrived: the start of the partner-side latency. */
  arrivedAtMs: number;
  /** Drawn at arrival: the service time of work, and the delay of fault answers. */
  delayMs: number;
  /** The limits the gateway announces with the answer (`announceLimit`), as they stood when the request arrived. */
  announced?: Record<string, string>;
}

/** Refuses anything but loopback: the sandbox accepts a well-known key and must not be reachable from outside. */
function assertLoopback(host: string): void {
  if (host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)) return;
  throw new QuoteBatchError('E_USAGE', `the sandbox listens on loopback only; refusing host "${host}"`, {
    hint: 'use --host 127.0.0.1 (the default), ::1 or localhost',
  });
}

function scheduleSteps(text: string): RpsStep[] {
  const parsed = parseRpsSchedule(text);
  return parsed.ok ? parsed.steps : [];
}

/** Starts a sandbox on loopback; resolves once it listens. */
export async function startSandbox(options: SandboxOptions = {}): Promise<SandboxHandle> {
  const host = options.host ?? '127.0.0.1';
  assertLoopback(host);
  const port = options.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new QuoteBatchError('E_USAGE', `sandbox port must be an integer from 0 to 65535, got ${port}`);
  }
  const apiKey = Buffer.from(options.apiKey ?? DEFAULT_SANDBOX_API_KEY, 'utf8');
  if (apiKey.length === 0) throw new QuoteBatchError('E_CONFIG', 'the sandbox API key is empty');
  const agents = indexAgents(options.agents ?? (options.agentsFile !== undefined ? readAgentsFile(options.agentsFile) : []));
  const seed = options.seed ?? DEFAULT_SANDBOX_SEED;
  let random = createRandom(seed);
  let normal = createNormalRandom(seed);
  const stats = new StatsRecorder();
  const gate = new RateGate();
  const quotaGate = new QuotaGate();
  // Quote and lead share one engine; with no capacity set it only measures the load.
  const engine = new WorkPool(Number.POSITIVE_INFINITY, 0);
  const timers = new Set<NodeJS.Timeout>();
  const sockets = new Set<Socket>();
  let closed = false;
  let faults = DEFAULT_FAULTS;
  let schedule: RpsStep[] = [];
  applyFaults(mergeFaults(DEFAULT_FAULTS, options.faults ?? {}));

  /** Puts checked settings in force, with what derives from them. */
  function applyFaults(next: SandboxFaults): void {
    faults = next;
    schedule = scheduleSteps(next.rpsCapSchedule);
    engine.resize(next.capacity > 0 ? next.capacity : Number.POSITIVE_INFINITY, next.queueLimit);
  }

  function isKeyValid(header: string | string[] | undefined): boolean {
    if (typeof header !== 'string') return false;
    const given = Buffer.from(header, 'utf8');
    return given.length === apiKey.length && timingSafeEqual(given, apiKey);
  }

  function send(res: ServerResponse, answer: Answer): void {
    res.writeHead(answer.status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(answer.body),
      ...answer.headers,
    });
    res.end(answer.body);
  }

  /** Runs `action` after `delayMs` (at once when there is none). */
  function later(delayMs: number, action: () => void): void {
    if (delayMs <= 0) {
      action();
      return;
    }
    const timer = setTimeout(() => {
      timers.delete(timer);
      action();
    }, delayMs);
    timers.add(timer);
  }

  function reset(res: ServerResponse): void {
    // A TCP RST, so the caller sees ECONNRESET as with a real dropped connection.
    const socket = res.socket;
    if (socket !== null && !socket.destroyed) socket.resetAndDestroy();
  }

  /** Counts how a request ended (`status` 0: reset or hung) and sends the answer, if any. */
  function finish(pending: Pending, answer: Answer | undefined): void {
    if (answer !== undefined) stats.countAnswer(pending.operation, answer.status);
    if (pending.operation !== 'validate') stats.countEnding(pending.arrivedAtMs, performance.now(), answer?.status ?? 0);
    if (answer !== undefined) send(pending.res, pending.announced === undefined ? answer : { ...answer, headers: { ...pending.announced, ...answer.headers } });
  }

  /**
   * The limits the gateway announces for a request arriving at `arrivedAtMs` (counting it): the rate
   * cap in force (× `announceFactor`, a gateway that promises more than it keeps) and, for quotes and
   * leads, the quota.
   */
  function announcement(operation: SandboxOperation, cap: number, arrivedAtMs: number): Record<string, string> | undefined {
    if (faults.announceLimit === 'none') return undefined;
    const windows: GatewayWindow[] = [];
    if (cap > 0) {
      const { remaining, resetS } = gate.peek(faults.rpsMode, cap, faults.rpsBurst, arrivedAtMs, Date.now());
      const limit = Math.max(1, Math.round(cap * faults.announceFactor));
      const used = Math.max(0, Math.floor(cap) - remaining);
      windows.push({ name: 'rate', limit, windowS: 1, remaining: Math.max(0, limit - used), resetS: wholeSeconds(resetS) });
    }
    if (faults.quota > 0 && operation !== 'validate') {
      const { remaining, resetS } = quotaGate.peek(faults.quota, faults.quotaWindowSeconds * 1000, arrivedAtMs - stats.epochMs);
      windows.push({ name: 'quota', limit: faults.quota, windowS: faults.quotaWindowSeconds, remaining, resetS: wholeSeconds(resetS) });
    }
    return windows.length === 0 ? undefined : announceHeaders(faults.announceLimit, windows);
  }

  /** An answer given without working on the request, after the drawn delay. */
  function answerLater(pending: Pending, answer: Answer): void {
    later(pending.delayMs, () => finish(pending, answer));
  }

  function retryAfterHeaders(seconds = faults.retryAfterSeconds): Record<string, string> {
    return { 'retry-after': formatRetryAfter(faults.retryAfterFormat, seconds, Date.now()) };
  }

  /** Decides and sends the outcome of one operation request whose body has been read. */
  function handleOperation(pending: Pending, req: IncomingMessage, text: string, tooLarge: boolean, draws: FaultDraws): void {
    const { operation } = pending;
    let body: unknown;
    let isJson = false;
    if (!tooLarge) {
      try {
        body = JSON.parse(text);
        isJson = true;
      } catch {
        isJson = false;
      }
    }
    const leadKey = operation !== 'validate' && isJson ? extractLeadKey(body) : undefined;
    if (leadKey !== undefined) stats.countLeadReceived(leadKey);
    if (operation !== 'validate') stats.countArrival(pending.arrivedAtMs);

    // What the partner's gateway does before any work: outage, rate cap, injected faults.
    if (faults.outage) {
      stats.faults.outage += 1;
      answerLater(pending, { ...faultAnswer(operation, 503), headers: retryAfterHeaders() });
      return;
    }
    const cap = schedule.length === 0 ? faults.rpsCap : capAt(schedule, faults.rpsCap, (pending.arrivedAtMs - stats.epochMs) / 1000);
    // The quota (quotes and leads): once spent, refused until its window ends.
    const quotaWindowMs = faults.quotaWindowSeconds * 1000;
    const sinceStartMs = pending.arrivedAtMs - stats.epochMs;
    const quotaCounts = faults.quota > 0 && operation !== 'validate';
    if (quotaCounts) {
      const waitSeconds = quotaGate.check(faults.quota, quotaWindowMs, sinceStartMs);
      if (waitSeconds > 0) {
        stats.faults.quotaSpent += 1;
        pending.announced = announcement(operation, cap, pending.arrivedAtMs);
        answerLater(pending, { ...faultAnswer(operation, 429), headers: retryAfterHeaders(Math.max(faults.retryAfterSeconds, waitSeconds)) });
        return;
      }
    }
    if (cap > 0) {
      const waitSeconds = gate.admit(faults.rpsMode, cap, faults.rpsBurst, pending.arrivedAtMs, Date.now());
      if (waitSeconds > 0) {
        stats.faults.rpsCapped += 1;
        pending.announced = announcement(operation, cap, pending.arrivedAtMs);
        // Never less than the configured value, never before the cap admits again.
        const headers = retryAfterHeaders(Math.max(faults.retryAfterSeconds, waitSeconds));
        answerLater(pending, faults.rpsCapAnswer === 'html' ? GATEWAY_THROTTLED : { ...faultAnswer(operation, 429), headers });
        return;
      }
    }
    // A request the gateway let through counts against the quota; refused ones do not (as with Kong).
    if (quotaCounts) quotaGate.take(quotaWindowMs, sinceStartMs);
    pending.announced = announcement(operation, cap, pending.arrivedAtMs);
    if (draws.resetBefore < faults.resetBeforeRate) {
      stats.faults.resetBefore += 1;
      later(pending.delayMs, () => {
        finish(pending, undefined);
        reset(pending.res);
      });
      return;
    }
    if (draws.fail < faults.failRate) {
      const status = draws.failKind < 0.5 ? 500 : 503;
      if (status === 500) stats.faults.failed500 += 1;
      else stats.faults.failed503 += 1;
      answerLater(pending, faultAnswer(operation, status));
      return;
    }
    if (draws.throttle < faults.throttleRate) {
      stats.faults.throttled += 1;
      answerLater(pending, { ...faultAnswer(operation, 429), headers: retryAfterHeaders() });
      return;
    }

    const request: OperationRequest = { operation, keyValid: isKeyValid(req.headers['x-api-key']), body, isJson, tooLarge };
    // Agent validation is a light look-up: it does not queue for the quote engine.
    if (operation === 'validate') {
      work(pending, request, leadKey, draws);
    } else if (!engine.submit(() => work(pending, request, leadKey, draws))) {
      stats.faults.queueFull += 1;
      finish(pending, { ...faultAnswer(operation, 503), headers: retryAfterHeaders() });
    }
  }

  /** The partner works on a request for its drawn service time, then answers it (or loses the answer). */
  function work(pending: Pending, request: OperationRequest, leadKey: string | undefined, draws: FaultDraws): void {
    let answer: Answer;
    try {
      answer = answerOperation(request, agents, () => {
        if (draws.upstream >= faults.upstreamErrorRate) return false;
        stats.faults.upstreamError += 1;
        return true;
      });
    } catch {
      // A bug of the sandbox must still look like a partner answer, not a dropped connection.
      answer = faultAnswer(pending.operation, 500);
    }
    if (leadKey !== undefined && (answer.status === 200 || answer.status === 400)) stats.countLeadProcessed(leadKey);

    // Faults after the partner did the work: the caller never learns the outcome.
    const resetAfter = draws.resetAfter < faults.resetAfterRate;
    const hang = !resetAfter && draws.hang < faults.hangRate;
    if (resetAfter) stats.faults.resetAfter += 1;
    if (hang) stats.faults.hung += 1;
    later(pending.delayMs, () => {
      if (resetAfter || hang) {
        finish(pending, undefined);
        if (resetAfter) reset(pending.res);
      } else {
        stats.recordLatency(pending.operation, pending.arrivedAtMs, performance.now());
        finish(pending, answer);
      }
      if (pending.operation !== 'validate') engine.release();
    });
  }

  function snapshot(): SandboxStats {
    return stats.snapshot(engine.stats());
  }

  function handleAdmin(path: string, req: IncomingMessage, res: ServerResponse, text: string): void {
    if (path === '/__sandbox/stats' && req.method === 'GET') {
      send(res, { status: 200, body: JSON.stringify(snapshot()) });
    } else if (path === '/__sandbox/reset' && req.method === 'POST') {
      resetState();
      send(res, { status: 200, body: '{"status":"ok"}' });
    } else if (path === '/__sandbox/faults' && req.method === 'GET') {
      send(res, { status: 200, body: JSON.stringify(faults) });
    } else if (path === '/__sandbox/faults' && req.method === 'POST') {
      try {
        applyFaults(mergeFaults(faults, JSON.parse(text === '' ? '{}' : text)));
        send(res, { status: 200, body: JSON.stringify(faults) });
      } catch (error) {
        send(res, validateError(400, error instanceof Error ? error.message : String(error)));
      }
    } else {
      stats.unknownRoutes += 1;
      send(res, validateError(404, `No sandbox route ${req.method ?? ''} ${path}`));
    }
  }

  function resetState(): void {
    stats.reset();
    random = createRandom(seed);
    normal = createNormalRandom(seed);
    gate.reset();
    quotaGate.reset();
    engine.resetPeaks();
  }

  const handler: RequestListener = (req, res) => {
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    const path = query < 0 ? url : url.slice(0, query);
    const operation = OPERATION_PATHS.get(path);
    if (operation === undefined && !path.startsWith('/__sandbox/')) {
      stats.unknownRoutes += 1;
      req.resume();
      send(res, validateError(404, `No route ${req.method ?? ''} ${path}`));
      return;
    }
    if (operation !== undefined && req.method !== 'POST') {
      stats.countReceived(operation);
      stats.countAnswer(operation, 405);
      req.resume();
      send(res, { ...validateError(405, `${path} accepts POST only`), headers: { allow: 'POST' } });
      return;
    }
    // Draw at arrival, in arrival order, so that a sequential caller sees a reproducible sequence.
    const draws = operation === undefined ? undefined : drawFaults(random);
    const delayMs = draws === undefined ? 0 : drawDelayMs(faults, draws.jitter, normal);
    if (operation !== undefined) stats.countReceived(operation);

    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('error', () => {
      // The caller went away mid-body: nothing to answer.
    });
    req.on('end', () => {
      if (closed) return;
      const tooLarge = size > MAX_BODY_BYTES;
      const text = tooLarge ? '' : chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8');
      if (operation === undefined || draws === undefined) handleAdmin(path, req, res, text);
      else handleOperation({ operation, res, arrivedAtMs: performance.now(), delayMs }, req, text, tooLarge, draws);
    });
  };
  const { tls } = options;
  // With a client CA, a connection without a certificate it signed is refused in the handshake:
  // no request on it is read (a partner's mutual-TLS gateway does the same).
  const server = tls === undefined
    ? createServer(handler)
    : createTlsServer({ cert: tls.cert, key: tls.key, ...(tls.clientCa === undefined ? {} : { ca: tls.clientCa, requestCert: true, rejectUnauthorized: true }) }, handler);
  server.on(tls === undefined ? 'connection' : 'secureConnection', () => {
    stats.connections.accepted += 1;
  });
  server.on('tlsClientError', (_error: Error, socket: Socket) => {
    stats.connections.refused += 1;
    if (!socket.destroyed) socket.destroy();
  });
  // Node's default 5 s keep-alive time-out races with clients that reuse an idle socket just as
  // the server closes it: the caller would see a spurious reset (an in-doubt row). Idle sockets
  // live longer here than any client keeps them; close() still ends them at once.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  // A caller's connection error (e.g. a reset mid-request) must not crash the sandbox.
  server.on('clientError', (_error, socket) => {
    if (!socket.destroyed) socket.destroy();
  });

  await new Promise<void>((resolve, reject) => {
    const onError = (error: Error): void => {
      reject(new QuoteBatchError('E_SANDBOX', `the sandbox cannot listen on ${host}:${port}: ${error.message}`, { cause: error }));
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const url = `${tls === undefined ? 'http' : 'https'}://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;

  return {
    url,
    port: address.port,
    stats: snapshot,
    reset: resetState,
    setFaults: (partial) => applyFaults(mergeFaults(faults, partial)),
    faults: () => ({ ...faults }),
    close: () => {
      if (closed) return Promise.resolve();
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      engine.clear();
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        for (const socket of sockets) socket.destroy();
      });
    },
  };
}
