/**
 * The agents the sandbox knows: `email,agent_id,eligible` rows (shared rules). Lookups ignore
 * case and surrounding spaces, as e-mail look-ups usually do.
 */
import { readFileSync } from 'node:fs';
import { parse } from 'csv-parse/sync';
import { QuoteBatchError } from '../errors.js';

/** One known agent. */
export interface AgentRecord {
  /** The agent's e-mail (matched case-insensitively). */
  email: string;
  /** Returned as `data.agent_id` when the agent is valid. */
  agentId: string;
  /** false → 200 with `is_valid: false` and "The specified user_type does not match the account." */
  eligible: boolean;
}

const REQUIRED_COLUMNS = ['email', 'agent_id', 'eligible'] as const;

/** Reads an agents CSV file; throws `E_SANDBOX` naming the file and line for anything wrong. */
export function readAgentsFile(path: string): AgentRecord[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new QuoteBatchError('E_SANDBOX', `cannot read the sandbox agents file ${path}: ${(error as Error).message}`, {
      cause: error,
      hint: 'pass --agents <file> (a CSV with columns email,agent_id,eligible)',
    });
  }
  return parseAgentsCsv(text, path);
}

/** Parses the text of an agents CSV file; `source` names it in error messages. */
export function parseAgentsCsv(text: string, source: string): AgentRecord[] {
  let records: Record<string, string>[];
  try {
    records = parse(text, { columns: true, bom: true, trim: true, skip_empty_lines: true }) as Record<string, string>[];
  } catch (error) {
    throw new QuoteBatchError('E_SANDBOX', `sandbox agents file ${source}: ${(error as Error).message}`, { cause: error });
  }
  const first = records[0];
  if (first !== undefined) {
    const absent = REQUIRED_COLUMNS.filter((column) => !(column in first));
    if (absent.length > 0) {
      throw new QuoteBatchError('E_SANDBOX', `sandbox agents file ${source}: missing column(s) ${absent.join(', ')} (expected email,agent_id,eligible)`);
    }
  }
  return records.map((record, index) => {
    const line = index + 2; // 1-based, after the header
    const email = record.email ?? '';
    const agentId = record.agent_id ?? '';
    const eligible = (record.eligible ?? '').toLowerCase();
    if (email === '') throw new QuoteBatchError('E_SANDBOX', `sandbox agents file ${source} line ${line}: empty email`);
    if (eligible !== 'true' && eligible !== 'false') {
      throw new QuoteBatchError('E_SANDBOX', `sandbox agents file ${source} line ${line}: eligible must be true or false, got "${record.eligible ?? ''}"`);
    }
    if (eligible === 'true' && agentId === '') {
      throw new QuoteBatchError('E_SANDBOX', `sandbox agents file ${source} line ${line}: an eligible agent needs an agent_id`);
    }
    return { email, agentId, eligible: eligible === 'true' };
  });
}

/** Normalises an e-mail for look-up. */
export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** Indexes agents by normalised e-mail (a later row for the same e-mail wins). */
export function indexAgents(agents: readonly AgentRecord[]): Map<string, AgentRecord> {
  const byEmail = new Map<string, AgentRecord>();
  for (const agent of agents) byEmail.set(normaliseEmail(agent.email), agent);
  return byEmail;
}
