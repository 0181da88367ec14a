/**
 * The sandbox HTTP server: plain `node:http`, one small function per request, no framework, so
 * that it is never the bottleneck of a benchmark. See docs/sandbox.md for the behaviour.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket, AddressInfo } from 'node:net';
import { randomUUID, timingSafeEqual } from 'node:crypto';
import { QuoteBatchError } from '../errors.js';
import { indexAgents, normaliseEmail, readAgentsFile, type AgentRecord } from './agents.js';
import {
  createRandom, DEFAULT_FAULTS, drawFaults, formatRetryAfter, mergeFaults,
  type FaultDraws, type SandboxFaults,
} from './faults.js';
import { asObject, checkQuoteRequest, computePremium, resolveVehicleCoverage } from './rules.js';
import { StatsRecorder, type SandboxOperation, type SandboxStats } from './stats.js';

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
}

/** A running sandbox. */
export interface SandboxHandle {
  /** Base URL, e.g. `http://127.0.0.1:41234` (no trailing slash). */
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
/** Bodies above this size are answered 413 (the partner publishes no limit; 1 MiB is generous for one lead). */
export const MAX_BODY_BYTES = 1024 * 1024;

const OPERATION_PATHS: ReadonlyMap<string, SandboxOperation> = new Map([
  ['/account/v1/agent/validate', 'validate'],
  ['/partner/v2/policy/quote', 'quote'],
  ['/partner/v2/policy/lead', 'lead'],
]);

// Fixed bodies, serialised once.
const VALIDATE_FORBIDDEN = '{"status":"error","message":"Forbidden"}';
const PARTNER_FORBIDDEN = '{"message":"Forbidden"}';
const MSG_VALID = 'User verification success';
const MSG_NOT_ELIGIBLE = 'The specified user_type does not match the account.';
const MSG_NOT_FOUND = 'User not found.';
/** Loose on purpose: every address a client's stricter check accepts must pass here too. */
const EMAIL_FORMAT = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const QUOTE_NUMBER_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

interface Answer {
  status: number;
  body: string;
  headers?: Record<string, string>;
}

function validateError(status: number, message: string): Answer {
  return { status, body: JSON.stringify({ status: 'error', message }) };
}

function partnerError(status: number, message: string, errorCode: string): Answer {
  return { status, body: JSON.stringify({ status: 'failed', message, error_code: errorCode }) };
}

/** The answer of an injected fault, in the operation's error shape. */
function faultAnswer(operation: SandboxOperation, status: 429 | 500 | 503): Answer {
  const [message, code] = status === 429
    ? ['Too many requests', 'rate_limited']
    : status === 500 ? ['Internal server error', 'server_error'] : ['Service unavailable', 'service_unavailable'];
  return operation === 'validate' ? validateError(status, message) : partnerError(status, message, code);
}

/** Refuses anything but loopback: the sandbox accepts a well-known key and must not be reachable from outside. */
function assertLoopback(host: string): void {
  if (host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)) return;
  throw new QuoteBatchError('E_USAGE', `the sandbox listens on loopback only; refusing host "${host}"`, {
    hint: 'use --host 127.0.0.1 (the default), ::1 or localhost',
  });
}

function extractLeadKey(body: unknown): string | undefined {
  const root = asObject(body);
  if (root === undefined) return undefined;
  const click = asObject(root.tracking)?.click_id;
  if (typeof click === 'string' && click !== '') return click;
  const channelLead = asObject(root.channel)?.channel_lead_id;
  return typeof channelLead === 'string' && channelLead !== '' ? channelLead : undefined;
}

function createQuoteNumber(): string {
  let out = '';
  // Ids need to be unique, not reproducible: Math.random is enough and cheap.
  for (let i = 0; i < 15; i += 1) out += QUOTE_NUMBER_ALPHABET[Math.floor(Math.random() * 36)];
  return out;
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
  let faults = mergeFaults(DEFAULT_FAULTS, options.faults ?? {});
  let random = createRandom(seed);
  const stats = new StatsRecorder();
  const timers = new Set<NodeJS.Timeout>();
  const sockets = new Set<Socket>();
  let closed = false;
  // Fixed one-second windows: cheap, and exact enough for a cap expressed per second.
  let rpsWindow = 0;
  let rpsCount = 0;

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

  /** Runs `action` after the configured latency (at once when there is none). */
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

  function answerOperation(operation: SandboxOperation, res: ServerResponse, answer: Answer, delayMs: number): void {
    later(delayMs, () => {
      stats.countAnswer(operation, answer.status);
      send(res, answer);
    });
  }

  function retryAfterHeaders(seconds?: number): Record<string, string> {
    const settings = seconds === undefined ? faults : { ...faults, retryAfterSeconds: seconds };
    return { 'retry-after': formatRetryAfter(settings, Date.now()) };
  }

  /** Decides and sends the outcome of one operation request whose body has been read. */
  function handleOperation(
    operation: SandboxOperation, req: IncomingMessage, res: ServerResponse, text: string, tooLarge: boolean, draws: FaultDraws,
  ): void {
    const delayMs = faults.latencyMs + draws.jitter * faults.jitterMs;
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

    // Faults that happen before the partner does anything.
    if (faults.outage) {
      stats.faults.outage += 1;
      answerOperation(operation, res, { ...faultAnswer(operation, 503), headers: retryAfterHeaders() }, delayMs);
      return;
    }
    if (faults.rpsCap > 0) {
      const window = Math.floor(Date.now() / 1000);
      if (window !== rpsWindow) {
        rpsWindow = window;
        rpsCount = 0;
      }
      if (rpsCount >= faults.rpsCap) {
        stats.faults.rpsCapped += 1;
        // The next window opens within a second.
        answerOperation(operation, res, { ...faultAnswer(operation, 429), headers: retryAfterHeaders(1) }, delayMs);
        return;
      }
      rpsCount += 1;
    }
    if (draws.resetBefore < faults.resetBeforeRate) {
      stats.faults.resetBefore += 1;
      later(delayMs, () => reset(res));
      return;
    }
    if (draws.fail < faults.failRate) {
      const status = draws.failKind < 0.5 ? 500 : 503;
      if (status === 500) stats.faults.failed500 += 1;
      else stats.faults.failed503 += 1;
      answerOperation(operation, res, faultAnswer(operation, status), delayMs);
      return;
    }
    if (draws.throttle < faults.throttleRate) {
      stats.faults.throttled += 1;
      answerOperation(operation, res, { ...faultAnswer(operation, 429), headers: retryAfterHeaders() }, delayMs);
      return;
    }

    let answer: Answer;
    try {
      answer = processOperation(operation, req, body, isJson, tooLarge, draws);
    } catch {
      // A bug of the sandbox must still look like a partner answer, not a dropped connection.
      answer = faultAnswer(operation, 500);
    }
    if (leadKey !== undefined && (answer.status === 200 || answer.status === 400)) stats.countLeadProcessed(leadKey);

    // Faults that happen after the partner did the work: the caller never learns the outcome.
    if (draws.resetAfter < faults.resetAfterRate) {
      stats.faults.resetAfter += 1;
      later(delayMs, () => reset(res));
      return;
    }
    if (draws.hang < faults.hangRate) {
      stats.faults.hung += 1;
      return;
    }
    answerOperation(operation, res, answer, delayMs);
  }

  function processOperation(
    operation: SandboxOperation, req: IncomingMessage, body: unknown, isJson: boolean, tooLarge: boolean, draws: FaultDraws,
  ): Answer {
    if (operation === 'validate') {
      if (!isKeyValid(req.headers['x-api-key'])) return { status: 403, body: VALIDATE_FORBIDDEN };
      if (tooLarge) return validateError(413, `Request body exceeds ${MAX_BODY_BYTES} bytes.`);
      if (!isJson) return validateError(400, 'Request body is not valid JSON.');
      const root = asObject(body);
      if (root === undefined) return validateError(400, 'Request body must be a JSON object.');
      const email = root.email;
      if (email === undefined || email === null || email === '') return validateError(400, 'email is required.');
      if (typeof email !== 'string' || !EMAIL_FORMAT.test(email.trim())) {
        return validateError(400, 'email is not a valid e-mail address.');
      }
      if (draws.upstream < faults.upstreamErrorRate) {
        stats.faults.upstreamError += 1;
        return validateError(500, 'Internal server error');
      }
      const agent = agents.get(normaliseEmail(email));
      const result = agent === undefined
        ? { status: 'success', message: MSG_NOT_FOUND, data: { is_valid: false } }
        : agent.eligible
          ? { status: 'success', message: MSG_VALID, data: { is_valid: true, agent_id: agent.agentId } }
          : { status: 'success', message: MSG_NOT_ELIGIBLE, data: { is_valid: false } };
      return { status: 200, body: JSON.stringify(result) };
    }

    if (!isKeyValid(req.headers['x-api-key'])) return { status: 403, body: PARTNER_FORBIDDEN };
    if (tooLarge) return partnerError(413, `Request body exceeds ${MAX_BODY_BYTES} bytes.`, 'payload_too_large');
    if (!isJson) return partnerError(400, 'Request body is not valid JSON.', 'invalid_request');
    const violation = checkQuoteRequest(body);
    if (violation !== undefined) return partnerError(400, violation.message, violation.errorCode);
    return { status: 200, body: JSON.stringify(buildSuccess(operation, body as Record<string, unknown>)) };
  }

  function buildSuccess(operation: SandboxOperation, root: Record<string, unknown>): Record<string, unknown> {
    const application = asObject(root.application) ?? {};
    const { coverage, issues } = resolveVehicleCoverage(application);
    const transactionId = randomUUID();
    const channelId = String(asObject(root.channel)?.channel_id ?? '');
    const clickId = extractLeadKey(root) ?? '';
    const participation = asObject(application.ubi)?.participation_option;
    const out: Record<string, unknown> = {
      status: 'success',
      message: 'Processed successfully.',
      transaction_id: transactionId,
      ubi: { participation_option: typeof participation === 'string' ? participation : 'monthly_adjust' },
    };
    if (operation === 'quote') {
      out.quote = { quote_number: createQuoteNumber(), premium_summary: computePremium(application, coverage) };
    }
    out.bridge_urls = {
      consumer_bridge_url: `https://bridge.sandbox.invalid/quote?sub4=${transactionId}&partner=${encodeURIComponent(channelId)}&sub1=${encodeURIComponent(clickId)}`,
      agent_bridge_url: `https://agents.sandbox.invalid/quote?transactionId=${transactionId}`,
    };
    if (issues.length > 0) out.input_issues = issues;
    return out;
  }

  function handleAdmin(path: string, req: IncomingMessage, res: ServerResponse, text: string): void {
    if (path === '/__sandbox/stats' && req.method === 'GET') {
      send(res, { status: 200, body: JSON.stringify(stats.snapshot()) });
    } else if (path === '/__sandbox/reset' && req.method === 'POST') {
      resetState();
      send(res, { status: 200, body: '{"status":"ok"}' });
    } else if (path === '/__sandbox/faults' && req.method === 'GET') {
      send(res, { status: 200, body: JSON.stringify(faults) });
    } else if (path === '/__sandbox/faults' && req.method === 'POST') {
      try {
        faults = mergeFaults(faults, JSON.parse(text === '' ? '{}' : text));
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
    rpsWindow = 0;
    rpsCount = 0;
  }

  const server = createServer((req, res) => {
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
      else handleOperation(operation, req, res, text, tooLarge, draws);
    });
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
  const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;

  return {
    url,
    port: address.port,
    stats: () => stats.snapshot(),
    reset: resetState,
    setFaults: (partial) => {
      faults = mergeFaults(faults, partial);
    },
    faults: () => ({ ...faults }),
    close: () => {
      if (closed) return Promise.resolve();
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        for (const socket of sockets) socket.destroy();
      });
    },
  };
}
