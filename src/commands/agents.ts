/** `quote-batch agents <email...>`: validates agent e-mails against an environment, prints the results. */
import pLimit from 'p-limit';
import { exitCodeOfError, type ErrorCode } from '../errors.js';
import type { Logger } from '../log.js';
import type { ClientEvent } from '../partner/client-api.js';
import type { CallOutcome } from '../partner/types.js';
import { isAgentEmail, type AgentValidateResponse } from '../partner/schemas.js';
import { haltAdvice } from '../pipeline/monitor.js';
import { addNetworkOptions, connectPartner, type ConnectionFlags } from './_connect.js';
import { jsonLogOption, type RegisterCommand } from './context.js';

interface AgentsFlags extends ConnectionFlags {
  json?: boolean;
}

/** One line of the result (the `--json` array holds these). */
export interface AgentResult {
  email: string;
  /** null when the partner gave no verdict (forbidden, transport failure). */
  valid: boolean | null;
  agent_id: string | null;
  message: string;
  /**
   * The client's classification (ok, rejected, forbidden, retryable, in_doubt), or `malformed`: not
   * an e-mail address, so never sent (as `run` records such a row `invalid`).
   */
  outcome: CallOutcome['kind'] | 'malformed';
  http_status: number | null;
}

/** Validations in flight at once: a handful of e-mails needs no more, and the partner is shared. */
const CONCURRENCY = 8;

export const registerAgents: RegisterCommand = (program, ctx) => {
  const command = program
    .command('agents')
    .description('validate agent e-mails against an environment and print the results')
    .argument('<email...>', 'agent e-mail addresses (each distinct address is validated once)')
    .option('--env <name>', 'sandbox | uat | production (default: sandbox when no base URL is configured)')
    .option('--base-url <url>', "override the environment's base URL (https://, or http:// on loopback)")
    .option('--api-key-file <file>', 'read the API key from this file (else QUOTE_BATCH_API_KEY)')
    .option('--config <file>', 'config file (default ./quote-batch.config.yaml when present)')
    .option('--json', 'print a JSON array instead of a table')
    .addOption(jsonLogOption());
  addNetworkOptions(command)
    .action(async (emails: string[], flags: AgentsFlags) => {
      ctx.setExitCode(await validateAgents(emails, flags));
    });

  async function validateAgents(emails: string[], flags: AgentsFlags): Promise<number> {
    const { io } = ctx;
    const logger = ctx.createLogger();
    let halt: Extract<ClientEvent, { type: 'halt' }> | undefined;
    const connection = await connectPartner(
      {
        env: flags.env, baseUrl: flags.baseUrl, apiKeyFile: flags.apiKeyFile, config: flags.config,
        proxy: flags.proxy, caFile: flags.caFile, clientCert: flags.clientCert, clientKey: flags.clientKey, clientKeyPassphraseFile: flags.clientKeyPassphraseFile,
      },
      io,
      { concurrency: CONCURRENCY, onEvent: (event) => {
        if (event.type === 'halt') halt ??= event;
      } },
      undefined,
      (message) => logger.info(message, { event: 'sandbox_started' }),
    );
    let results: AgentResult[];
    try {
      const limit = pLimit(CONCURRENCY);
      results = await Promise.all(
        distinctEmails(emails).map((email) => (isAgentEmail(email)
          ? limit(async () => toResult(email, await connection.client.validateAgent(email, { signal: ctx.stop })))
          : Promise.resolve(malformed(email)))),
      );
    } finally {
      await connection.close();
    }

    io.out(flags.json === true ? `${JSON.stringify(results, null, 2)}\n` : formatTable(results));
    const failure = failureOf(results, connection.environment, halt);
    if (failure === undefined) return results.every((r) => r.valid === true) ? 0 : 1;
    report(failure, logger);
    return exitCodeOfError(failure.code);
  }

  /** One error line with its code and hint (JSON under --json-log), then one line per e-mail left without an answer. */
  function report(failure: Failure, logger: Logger): void {
    const exitCode = exitCodeOfError(failure.code);
    if (ctx.jsonLog) logger.error(failure.message, { event: 'error', code: failure.code, hint: failure.hint, exit_code: exitCode });
    else ctx.io.err(`error: ${failure.message}\nhint: ${failure.hint}\n`);
    for (const r of failure.unanswered) {
      // The hint was said once above; JSON lines each carry it.
      logger.error(`${r.email}: no answer from the partner: ${r.message}`, { event: 'no_answer', code: failure.code, hint: ctx.jsonLog ? failure.hint : undefined, exit_code: exitCode });
    }
  }
};

/** Why `agents` exits 3, when it does. */
interface Failure {
  code: ErrorCode;
  message: string;
  hint: string;
  /** E-mails the partner gave no verdict on. */
  unanswered: AgentResult[];
}

/** Trimmed, in the order given; the same address in another case is the same agent. */
export function distinctEmails(emails: readonly string[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const raw of emails) {
    const email = raw.trim();
    const key = email.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(email);
  }
  return out;
}

/** An address `run` would record `invalid` without asking the partner: not sent. */
function malformed(email: string): AgentResult {
  return { email, valid: false, agent_id: null, message: 'not an e-mail address: not sent to the partner', outcome: 'malformed', http_status: null };
}

function toResult(email: string, outcome: CallOutcome<AgentValidateResponse>): AgentResult {
  const base = { email, outcome: outcome.kind, http_status: outcome.httpStatus };
  if (outcome.kind === 'ok') {
    const data = outcome.parsed?.data;
    if (data === undefined) {
      return { ...base, valid: null, agent_id: null, message: `unexpected answer: ${outcome.message}` };
    }
    return { ...base, valid: data.is_valid, agent_id: data.agent_id ?? null, message: outcome.parsed?.message ?? '' };
  }
  const partnerMessage = readMessage(outcome.body);
  if (outcome.kind === 'rejected' && partnerMessage !== undefined) {
    return { ...base, valid: false, agent_id: null, message: partnerMessage };
  }
  return { ...base, valid: null, agent_id: null, message: outcome.message };
}

function readMessage(body: unknown): string | undefined {
  if (body === null || typeof body !== 'object') return undefined;
  const message = (body as Record<string, unknown>).message;
  return typeof message === 'string' && message !== '' ? message : undefined;
}

/**
 * Exit 3 and why: the key refused, the endpoint wrong, the client halted (the base URL never
 * answered…), or e-mails left without an answer. Undefined when every e-mail got a verdict (exit 0
 * when all are valid, else 1: not valid, or malformed).
 */
function failureOf(results: readonly AgentResult[], environment: string, halt: Extract<ClientEvent, { type: 'halt' }> | undefined): Failure | undefined {
  const unanswered = results.filter((r) => r.outcome === 'retryable' || r.outcome === 'in_doubt');
  // The way to the partner failed (a proxy, TLS, an address that never answered…), not the key or
  // the endpoint: the halt says which hop, and how to fix it.
  if (halt !== undefined && halt.kind !== 'forbidden' && halt.kind !== 'misrouted') {
    const { code, hint } = haltAdvice(halt, { ledger: undefined, job: undefined });
    return { code, hint, message: halt.reason, unanswered: [] };
  }
  const forbidden = results.find((r) => r.outcome === 'forbidden');
  if (forbidden !== undefined) {
    return {
      code: 'E_FORBIDDEN', unanswered: [],
      message: `the partner refused the API key (${forbidden.http_status ?? '?'}): it is not valid for the ${environment} environment`,
      hint: 'check QUOTE_BATCH_API_KEY or --api-key-file, and --env',
    };
  }
  const misrouted = results.find((r) => r.outcome === 'misrouted');
  if (misrouted !== undefined) {
    return {
      code: 'E_MISROUTED', unanswered: [],
      message: `the partner answered ${misrouted.http_status ?? '?'} for agent validation: the base URL or the endpoint is wrong`,
      hint: 'check --base-url / --env and the configured base URL',
    };
  }
  if (unanswered.length > 0) {
    return { code: 'E_CIRCUIT_OPEN', unanswered, message: `${unanswered.length} e-mail(s) got no answer from the partner`, hint: 'run the same command again later' };
  }
  return undefined;
}

export function formatTable(results: readonly AgentResult[]): string {
  const header = ['email', 'valid', 'agent_id', 'message'];
  const rows = results.map((r) => [
    r.email,
    r.valid === null ? r.outcome === 'rejected' ? 'no' : 'error' : r.valid ? 'yes' : 'no',
    r.agent_id ?? '-',
    r.message.replace(/[\r\n]+/g, ' '),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells.map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join('  ').trimEnd();
  return `${[line(header), ...rows.map(line)].join('\n')}\n`;
}
