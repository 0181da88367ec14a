/** The input formats quote-batch reads. `tsv` is CSV with a tab delimiter. */
export type InputFormat = 'csv' | 'tsv' | 'ndjson';

/** Options of {@link openInput}; all optional. */
export interface InputOptions {
  /** Overrides detection from the extension. */
  format?: InputFormat;
  /** CSV delimiter (1 to 8 characters, no quote or line break); default ',' for csv, '\t' for tsv. Ignored for NDJSON. */
  delimiter?: string;
  /** Longest record accepted, in bytes; longer ones become row errors. Default 16 MiB. */
  maxRecordBytes?: number;
}

/**
 * One record read from the input, or the reason it could not be read.
 * `rowNumber` is the 1-based data row (CSV header excluded), counting error rows too, so every
 * record of the file gets exactly one number. `line` is the physical 1-based line where the
 * record starts (in CSV the header is line 1).
 */
export type InputItem =
  | {
      kind: 'record';
      rowNumber: number;
      line: number;
      /** CSV: every value is a string, keyed by header column; NDJSON: the parsed object. */
      record: Record<string, unknown>;
    }
  | {
      kind: 'error';
      rowNumber: number;
      line: number;
      /** Names the line and what was wrong, e.g. `line 42: wrong number of fields (expected 120, got 119)`. */
      message: string;
    };

/** A streaming reader: iterate it with `for await`; it reads only as fast as it is iterated. */
export interface InputReader extends AsyncIterable<InputItem> {
  readonly format: InputFormat;
  /** CSV header columns (after BOM removal); null for NDJSON. Known as soon as openInput resolves. */
  readonly columns: readonly string[] | null;
  /** Bytes of the file read so far (compressed bytes for .gz), for progress. */
  readonly bytesRead: number;
  /** Size of the file in bytes (compressed size for .gz). */
  readonly totalBytes: number;
  /** Stops reading and releases the file (safe to call twice; also done when iteration ends or breaks). */
  close(): Promise<void>;
}

/** Default of {@link InputOptions.maxRecordBytes}: 16 MiB. */
export const DEFAULT_MAX_RECORD_BYTES = 16 * 1024 * 1024;
