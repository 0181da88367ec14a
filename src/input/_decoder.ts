import type { InputItem } from './types.js';

/**
 * Turns the bytes of an input file, fed chunk by chunk, into items. Synchronous, so that the
 * reader decides when the next chunk is read (backpressure) and a decoder can be tested alone.
 * Throws `QuoteBatchError('E_INPUT')` only for faults of the whole file (e.g. an unreadable header).
 */
export interface Decoder {
  /** CSV header columns once read; null for NDJSON and before the header is read. */
  readonly columns: readonly string[] | null;
  /**
   * Feeds the next chunk; appends the items it completes to `out`. `checkLimit` false: the chunk is
   * a piece of one the file was read in, whose end is yet to come, and the record size limit is
   * checked at that end only (so that a record is cut where a read in whole chunks cuts it).
   */
  write(chunk: Buffer, out: InputItem[], checkLimit?: boolean): void;
  /** Ends the input; appends the last items to `out`. */
  end(out: InputItem[]): void;
}
