/**
 * Advice that several commands give in the same words: the run summary, a halt's hint, `resolve`
 * and `report` alike.
 */

/** What to do with rows in doubt, wherever some are left: they may have reached the partner, so only it can say which to send again. */
export const SETTLE_IN_DOUBT = 'check them with the partner (quote-batch export --status in_doubt), settle them with `quote-batch resolve`';
