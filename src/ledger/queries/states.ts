/** Groups of row states the ledger's figures count by (the states themselves: `../schema.ts`). */
import type { RowState } from '../schema.js';

/**
 * States whose rows carry an error worth grouping (`row_errors`): what went wrong with a row.
 * Not `duplicate` (the lead was sent once, as it should be), nor `pending`/`in_flight`/`succeeded`.
 */
export const ERROR_STATES = ['rejected', 'agent_invalid', 'invalid', 'failed', 'in_doubt'] as const satisfies readonly RowState[];

/** States that a later run leaves alone or that ended a send: every state but `pending` and `in_flight`. */
export const DONE_STATES = [
  'succeeded', 'rejected', 'agent_invalid', 'invalid', 'duplicate', 'failed', 'in_doubt',
] as const satisfies readonly RowState[];
