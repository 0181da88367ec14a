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

/** What to do when the way to the partner, not the partner, halts a command (a run or `agents`): the proxy's credentials, TLS trust, the client certificate. */
export const NETWORK_HALT_HINTS = {
  proxy_auth: 'give the proxy\'s user and password in its URL (http://user:password@host:port, percent-encoded) in --proxy, HTTPS_PROXY or the config file\'s proxy:, then run the same command again',
  tls_trust: 'if the partner\'s certificate comes from a private CA (or your network inspects TLS), give that CA\'s PEM file with --ca-file (config: ca:); TLS verification is never turned off. Then run the same command again',
  tls_client_cert: 'give the client certificate and key the partner issued with --client-cert and --client-key (config: client_cert, client_key; the key\'s passphrase in QUOTE_BATCH_CLIENT_KEY_PASSPHRASE or --client-key-passphrase-file), then run the same command again',
} as const;
