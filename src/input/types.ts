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
  /**
   * NDJSON: deepest nesting of objects and arrays accepted; a deeper record becomes a row error
   * (a record nested thousands of levels deep would crash any recursive code that touches it).
   * Default 64.
   */
  maxDepth?: number;
  /**
   * Stops reading when aborted: iteration then ends early, as at the end of the input, even in
   * a long stretch of blank lines that yields no item. Check `signal.aborted` after the loop to
   * tell an early end from the real one.
   */
  signal?: AbortSignal;
  /**
   * Begin reading at this record instead of the first: the `offset`, `rowNumber` and `line` of an
   * item an earlier read of the same file produced. The CSV header is still read from the start;
   * the bytes before `offset` are not parsed. Items then come out exactly as a full read would give
   * them from that record on. A position that cannot be a record start in this file (at or past the
   * end, inside the header, not right after a line break) makes openInput throw
   * `QuoteBatchError('E_INPUT')`: read from the start instead.
   */
  start?: InputStart;
  /**
   * CSV: a record whose quote ran on past its first line (closed wrongly lines later, or never) is
   * read as that line alone, and the lines after it as rows (default true). False reads it as one
   * record, as quote-batch did before: a job begun then keeps its row numbers.
   */
  rereadRunOnQuotes?: boolean;
  /**
   * CSV: LF and CRLF both end a record, whichever the header line ends with (default true), so a
   * header typed on Windows put before rows exported elsewhere reads as rows, not as one record.
   * False reads the header's line end only, as quote-batch did before: a job begun then keeps its
   * row numbers.
   */
  anyLineEnd?: boolean;
  /**
   * CSV, with `anyLineEnd`: CR CR LF (a CRLF file converted to CRLF again) ends a record too, beside
   * LF and CRLF, so a file mixing them reads as a person reads it: one row a line, no stray CR at
   * the end of a value (default true). False: CR CR LF ends records only in a file whose header
   * line ends with it, and then alone, as quote-batch read before: a job begun then keeps its row numbers.
   */
  crCrLf?: boolean;
}

/** Where a resumed read begins: copied from the {@link InputItem} to begin at. */
export interface InputStart {
  /** The item's `offset`: byte offset of the record in the decompressed file. */
  offset: number;
  /** The item's `rowNumber`; later items are numbered on from it. */
  rowNumber: number;
  /** The item's `line`; later lines are counted on from it. */
  line: number;
}

/**
 * One record read from the input, or the reason it could not be read.
 * `rowNumber` is the 1-based data row (CSV header excluded), counting error rows too, so every
 * record of the file gets exactly one number. `line` is the physical 1-based line where the
 * record starts (in CSV the header is line 1). `offset` is the byte offset in the decompressed file
 * where the record starts (its first byte, after any blank lines before it): with `rowNumber` and
 * `line` it is a resume point ({@link InputOptions.start}).
 */
export type InputItem =
  | {
      kind: 'record';
      rowNumber: number;
      line: number;
      offset: number;
      /** CSV: every value is a string, keyed by header column; NDJSON: the parsed object. */
      record: Record<string, unknown>;
    }
  | {
      kind: 'error';
      rowNumber: number;
      line: number;
      offset: number;
      /** Names the line and what was wrong, e.g. `line 42: wrong number of fields (expected 120, got 119)`. */
      message: string;
      /**
       * CSV: a quote of this record ran on past its first line and was never closed right (or not
       * at all: to the end of the file), so the lines it took in are likely rows of their own. The
       * reader reads them again, as rows, from the line after the record's first line.
       */
      quoteRanOn?: true;
    };

/** A streaming reader: iterate it with `for await`; it reads only as fast as it is iterated. */
export interface InputReader extends AsyncIterable<InputItem> {
  readonly format: InputFormat;
  /** CSV header columns (after BOM removal); null for NDJSON. Known as soon as openInput resolves. */
  readonly columns: readonly string[] | null;
  /**
   * Bytes of the file read so far (compressed bytes for .gz), for progress. A resumed read counts
   * the bytes before its start as read.
   */
  readonly bytesRead: number;
  /** Size of the file in bytes (compressed size for .gz). */
  readonly totalBytes: number;
  /** Stops reading and releases the file (safe to call twice; also done when iteration ends or breaks). */
  close(): Promise<void>;
}

/** Default of {@link InputOptions.maxRecordBytes}: 16 MiB. */
export const DEFAULT_MAX_RECORD_BYTES = 16 * 1024 * 1024;

/** Default of {@link InputOptions.maxDepth}. */
export const DEFAULT_MAX_DEPTH = 64;
