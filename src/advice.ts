/**
 * Advice that several commands give in the same words: the run summary, a halt's hint, `resolve`
 * and `report` alike. A command it suggests names the ledger and the job, so that it works as
 * printed from any directory, whatever --ledger the run was given.
 */

/** Where a suggested command acts: the ledger file and the job (each left out when unknown). */
export interface AdviceTarget {
  ledger: string | undefined;
  job: number | undefined;
}

/** `quote-batch <command> --ledger <file> --job <id> <rest>`, as a person can paste it. */
export function commandFor(command: string, target: AdviceTarget, rest = ''): string {
  const ledger = target.ledger === undefined ? '' : ` --ledger ${shellWord(target.ledger)}`;
  const job = target.job === undefined ? '' : ` --job ${target.job}`;
  return `quote-batch ${command}${ledger}${job}${rest === '' ? '' : ` ${rest}`}`;
}

/** What to do with rows in doubt, wherever some are left: they may have reached the partner, so only it can say which to send again. */
export function settleInDoubt(target: AdviceTarget): string {
  return `check them with the partner (${commandFor('export', target, '--status in_doubt')}), settle them with \`${commandFor('resolve', target, '--rows <n,...> --as succeeded|pending')}\``;
}

/** `text` as one shell word: as it is when it holds only safe characters, else single-quoted. */
export function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

/** Rows the partner took (2xx) whose answer could not be read: the words for the summary, the log and `report`. */
export function unreadableAnswersText(rows: number): string {
  return `${rows} got an answer that could not be read (empty, not JSON, or cut): the partner took them, but no quote number or premium was recorded; check them with the partner`;
}
