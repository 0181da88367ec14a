/**
 * What the partner answers once it works on a request (spec §4, §5, §7 and the public
 * reference's bodies), and the error shapes of injected faults. No I/O: the server decides when
 * and whether these answers are sent.
 */
import { randomUUID } from 'node:crypto';
import { normaliseEmail, type AgentRecord } from './agents.js';
import { asObject, checkQuoteRequest, computePremium, resolveVehicleCoverage } from './rules.js';
import type { SandboxOperation } from './stats.js';

/** Bodies above this size are answered 413 (the partner publishes no limit; 1 MiB is generous for one lead). */
export const MAX_BODY_BYTES = 1024 * 1024;

export interface Answer {
  status: number;
  body: string;
  headers?: Record<string, string>;
}

/** A request whose body has been read, as the partner's engine sees it. */
export interface OperationRequest {
  operation: SandboxOperation;
  keyValid: boolean;
  /** The parsed body when `isJson`. */
  body: unknown;
  isJson: boolean;
  tooLarge: boolean;
}

// Fixed bodies, serialised once.
const VALIDATE_FORBIDDEN = '{"status":"error","message":"Forbidden"}';
const PARTNER_FORBIDDEN = '{"message":"Forbidden"}';
const MSG_VALID = 'User verification success';
const MSG_NOT_ELIGIBLE = 'The specified user_type does not match the account.';
const MSG_NOT_FOUND = 'User not found.';
/** Loose on purpose: every address a client's stricter check accepts must pass here too. */
const EMAIL_FORMAT = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const QUOTE_NUMBER_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

export function validateError(status: number, message: string): Answer {
  return { status, body: JSON.stringify({ status: 'error', message }) };
}

function partnerError(status: number, message: string, errorCode: string): Answer {
  return { status, body: JSON.stringify({ status: 'failed', message, error_code: errorCode }) };
}

/** The answer of an injected fault, in the operation's error shape. */
export function faultAnswer(operation: SandboxOperation, status: 429 | 500 | 503): Answer {
  const [message, code] = status === 429
    ? ['Too many requests', 'rate_limited']
    : status === 500 ? ['Internal server error', 'server_error'] : ['Service unavailable', 'service_unavailable'];
  return operation === 'validate' ? validateError(status, message) : partnerError(status, message, code);
}

/** A gateway's own refusal, before the partner's API: an HTML page, no `Retry-After`. */
export const GATEWAY_THROTTLED: Answer = {
  status: 429,
  body: '<html>\r\n<head><title>429 Too Many Requests</title></head>\r\n<body>\r\n<center><h1>429 Too Many Requests</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n',
  headers: { 'content-type': 'text/html' },
};

/** The lead's key: `tracking.click_id`, else the deprecated `channel.channel_lead_id`. */
export function extractLeadKey(body: unknown): string | undefined {
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

/**
 * The partner's answer to a request it works on. `upstreamFault` is asked only for a well-formed
 * validate request (whether the injected upstream fault hits it).
 */
export function answerOperation(
  request: OperationRequest, agents: ReadonlyMap<string, AgentRecord>, upstreamFault: () => boolean,
): Answer {
  const { operation, keyValid, body, isJson, tooLarge } = request;
  if (operation === 'validate') {
    if (!keyValid) return { status: 403, body: VALIDATE_FORBIDDEN };
    if (tooLarge) return validateError(413, `Request body exceeds ${MAX_BODY_BYTES} bytes.`);
    if (!isJson) return validateError(400, 'Request body is not valid JSON.');
    const root = asObject(body);
    if (root === undefined) return validateError(400, 'Request body must be a JSON object.');
    const email = root.email;
    if (email === undefined || email === null || email === '') return validateError(400, 'email is required.');
    if (typeof email !== 'string' || !EMAIL_FORMAT.test(email.trim())) {
      return validateError(400, 'email is not a valid e-mail address.');
    }
    if (upstreamFault()) return validateError(500, 'Internal server error');
    const agent = agents.get(normaliseEmail(email));
    const result = agent === undefined
      ? { status: 'success', message: MSG_NOT_FOUND, data: { is_valid: false } }
      : agent.eligible
        ? { status: 'success', message: MSG_VALID, data: { is_valid: true, agent_id: agent.agentId } }
        : { status: 'success', message: MSG_NOT_ELIGIBLE, data: { is_valid: false } };
    return { status: 200, body: JSON.stringify(result) };
  }

  if (!keyValid) return { status: 403, body: PARTNER_FORBIDDEN };
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
