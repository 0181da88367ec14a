/** `quote-batch agents <email...>`: validates agent e-mails against an environment, prints the results. */
import pLimit from 'p-limit';
import { NETWORK_HALT_HINTS } from '../advice.js';
import type { CallOutcome } from '../partner/types.js';
import type { AgentValidateResponse } from '../partner/schemas.js';
import { addNetworkOptions, connectPartner, type ConnectionFlags } from './_connect.js';
import type { RegisterCommand } from './context.js';

interface AgentsFlags extends ConnectionFlags {
  json?: boolean;
}

/** One line of the result (the `--json` array holds these). */
export interface AgentResult {
  email: string;
  /** null when the partner gave no verdict (bad e-mail, forbidden, transport failure). */
  valid: boolean | null;
  agent_id: string | null;
  message: string;
  /** The client's classification: ok, rejected, forbidden, retryable, in_doubt. */
  outcome: CallOutcome['kind'];
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
    .option('--json', 'print a JSON array instead of a table');
  addNetworkOptions(command)
    .action(async (emails: string[], flags: AgentsFlags) => {
      ctx.setExitCode(await validateAgents(emails, flags));
    });

  async function validateAgents(emails: string[], flags: AgentsFlags): Promise<number> {
    const { io } = ctx;
    const connection = await connectPartner(
      {
        env: flags.env, baseUrl: flags.baseUrl, apiKeyFile: flags.apiKeyFile, config: flags.config,
        proxy: flags.proxy, caFile: flags.caFile, clientCert: flags.clientCert, clientKey: flags.clientKey, clientKeyPassphraseFile: flags.clientKeyPassphraseFile,
      },
      io,
      { concurrency: CONCURRENCY },
    );
    let results: AgentResult[];
    try {
      const limit = pLimit(CONCURRENCY);
      results = await Promise.all(
        distinctEmails(emails).map((email) =>
          limit(async () => toResult(email, await connection.client.validateAgent(email, { signal: ctx.stop }))),
        ),
      );
    } finally {
      await connection.close();
    }

    io.out(flags.json === true ? `${JSON.stringify(results, null, 2)}\n` : formatTable(results));
    const { haltKind, haltReason } = connection.client;
    // The way to the partner failed, not the key or the endpoint: say which hop, and how to fix it.
    if (haltReason !== null && (haltKind === 'proxy_auth' || haltKind === 'tls_trust' || haltKind === 'tls_client_cert')) {
      io.err(`error: ${haltReason}\n`);
      io.err(`hint: ${NETWORK_HALT_HINTS[haltKind]}\n`);
      return 3;
    }
    return exitCodeFor(results, connection.environment, io.err);
  }
};

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

/** 0 all valid; 1 some not valid (or a malformed e-mail); 3 forbidden or no answer. */
function exitCodeFor(results: readonly AgentResult[], environment: string, err: (text: string) => void): number {
  const forbidden = results.find((r) => r.outcome === 'forbidden');
  if (forbidden !== undefined) {
    err(`error: the partner refused the API key (${forbidden.http_status ?? '?'}): it is not valid for the ${environment} environment\n`);
    err('hint: check QUOTE_BATCH_API_KEY or --api-key-file, and --env\n');
    return 3;
  }
  const misrouted = results.find((r) => r.outcome === 'misrouted');
  if (misrouted !== undefined) {
    err(`error: the partner answered ${misrouted.http_status ?? '?'} for agent validation: the base URL or the endpoint is wrong\n`);
    err('hint: check --base-url / --env and the configured base URL\n');
    return 3;
  }
  const failed = results.filter((r) => r.outcome === 'retryable' || r.outcome === 'in_doubt');
  if (failed.length > 0) {
    for (const r of failed) err(`error: ${r.email}: no answer from the partner: ${r.message}\n`);
    return 3;
  }
  return results.every((r) => r.valid === true) ? 0 : 1;
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
