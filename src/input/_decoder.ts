import type { InputItem } from './types.js';

/**
 * Turns the bytes of an input file, fed chunk by chunk, into items. Synchronous, so that the
 * reader decides when the next chunk is read (backpressure) and a decoder can be tested alone.
 * Throws `QuoteBatchError('E_INPUT')` only for faults of the whole file (e.g. an unreadable header).
 */
export interface Decoder {
  /** CSV header columns once read; null for NDJSON and before the header is read. */
  readonly columns: readonly string[] | null;
  /** Feeds the next chunk; appends the items it completes to `out`. */
  write(chunk: Buffer, out: InputItem[]): void;
  /** Ends the input; appends the last items to `out`. */
  end(out: InputItem[]): void;
}
