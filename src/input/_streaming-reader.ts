/**
 * The streaming reader behind {@link openInput}: pulls the file (or its gunzip stream) a chunk at a
 * time, hands each chunk to the format's decoder and yields its items; for CSV it keeps the bytes
 * of the record being read, so that a record whose bad quote ran on can be read again from its
 * first line end (see `#rereadAfter`). Opening the file, the header, a resumed start and the
 * options are `open.ts`'s.
 */
import type { ReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import { QuoteBatchError } from '../errors.js';
import { CsvDecoder, RUNS_TO_END } from './_csv-decoder.js';
import type { Decoder } from './_decoder.js';
import type { InputFormat, InputItem, InputReader } from './types.js';

/** Bytes read from the file at a time. */
export const READ_CHUNK_BYTES = 64 * 1024;
/** Bytes fed to the decoder at a time when a record's lines are read again (see `#rereadAfter`). */
const REREAD_PIECE_BYTES = 64;
export const LF = 0x0a;
export const CR = 0x0d;

export interface ReaderParts {
  path: string;
  format: InputFormat;
  gzip: boolean;
  decoder: Decoder;
  /** The file itself: its byte count is the progress, its closing is the release. */
  file: ReadStream;
  /** What the decoder reads: the file, or the gunzip stream behind it. */
  source: Readable;
  totalBytes: number;
  /** Where the file stream starts (a resumed read of a plain file): counted as read. */
  bytesBefore: number;
  /** Ends the iteration early when aborted (see InputOptions.signal). */
  signal: AbortSignal | undefined;
  /** CSV: how many bytes back the reader keeps, to read a record's lines again (maxRecordBytes and two chunks); 0: none, nothing is read again. */
  keepBytes: number;
}

/**
 * Pulls one chunk from the source only when every item of the last one has been taken, so at
 * most a chunk's items and the streams' own buffers (64 KiB each) are held, whatever the file size.
 */
export class StreamingInputReader implements InputReader {
  readonly format: InputFormat;
  readonly totalBytes: number;
  readonly #parts: ReaderParts;
  readonly #chunks: AsyncIterator<Buffer>;
  #decoder: Decoder;
  /** Chunks read past a skipped prefix (the first one cut), decoded before the next chunk is read. */
  #pending: Buffer[] = [];
  /** Offset in the (decompressed) file of the next byte given to the decoder. */
  #fed = 0;
  /**
   * CSV: the chunks given to the decoder since the start of the last item it gave (and so since the
   * start of any record it has not given yet), with their offsets: what a record whose bad quote ran
   * on took in is read again from them (see {@link #rereadAfter}). At most a record's bytes
   * (`maxRecordBytes`, the decoder cuts a longer one) and a chunk.
   */
  #kept: { offset: number; bytes: Buffer; endsChunk: boolean }[] = [];
  /** Pieces of {@link #pending} fed again that do not end a chunk the file was read in (see `Decoder.write`). */
  readonly #midChunk = new WeakSet<Buffer>();
  #keptBytes = 0;
  #items: (InputItem | undefined)[] = [];
  #head = 0;
  #ended = false;
  #closed = false;

  constructor(parts: ReaderParts) {
    this.#parts = parts;
    this.format = parts.format;
    this.totalBytes = parts.totalBytes;
    this.#decoder = parts.decoder;
    this.#chunks = parts.source[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  }

  get columns(): readonly string[] | null {
    return this.#decoder.columns;
  }

  get bytesRead(): number {
    return this.#parts.bytesBefore + this.#parts.file.bytesRead;
  }

  /** Reads until the CSV header is known (or the input ends). */
  async readHeader(): Promise<void> {
    while (this.#decoder.columns === null && !this.#ended) await this.#fill();
  }

  /**
   * Drops the source's first `count` bytes unparsed, except that `header`, while it lacks the
   * columns, is fed the chunks (its items dropped). Returns the last byte dropped, the byte after it
   * (undefined at the end of the input) and how many bytes were dropped.
   */
  async skipPrefix(
    count: number,
    header: CsvDecoder | undefined,
  ): Promise<{ before: number | undefined; at: number | undefined; skipped: number }> {
    const dropped: InputItem[] = [];
    const feedHeader = (chunk: Buffer | undefined): void => {
      if (header === undefined || header.columns !== null) return;
      if (chunk === undefined) header.end(dropped);
      else header.write(chunk, dropped);
      dropped.length = 0;
    };
    let left = count;
    let before: number | undefined;
    let at: number | undefined;
    while (at === undefined) {
      const chunk = await this.#nextChunk();
      feedHeader(chunk);
      if (chunk === undefined) return { before, at, skipped: count - left };
      const cut = Math.min(left, chunk.length);
      if (cut > 0) before = chunk[cut - 1];
      left -= cut;
      if (left === 0 && cut < chunk.length) {
        this.#pending.push(chunk.subarray(cut));
        at = chunk[cut];
      }
    }
    // csv-parse may hold the end of a header that ends just before the start, waiting for more.
    while (header !== undefined && header.columns === null) {
      const chunk = await this.#nextChunk();
      feedHeader(chunk);
      if (chunk === undefined) break;
      this.#pending.push(chunk);
    }
    return { before, at, skipped: count };
  }

  /** Decodes the rest of the input with `decoder`, from byte `offset` of the file on (after {@link skipPrefix}). */
  decodeWith(decoder: Decoder, offset: number): void {
    this.#decoder = decoder;
    this.#fed = offset;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<InputItem, void, undefined> {
    const { signal } = this.#parts;
    try {
      while (!this.#closed && signal?.aborted !== true) {
        if (this.#head < this.#items.length) {
          const item = this.#items[this.#head] as InputItem;
          this.#items[this.#head] = undefined;
          this.#head += 1;
          // A bad quote took in the lines after the record's first: they are read again, as rows
          // (the items after this one, read past them, go).
          if (item.kind === 'error' && item.quoteRanOn === true && this.#rereadAfter(item)) {
            yield { ...item, message: readAlone(item.message) };
          } else {
            yield item;
          }
        } else if (this.#ended) {
          return;
        } else {
          await this.#fill();
        }
      }
    } finally {
      await this.close();
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#items = [];
    this.#head = 0;
    const { file, source } = this.#parts;
    source.destroy();
    file.destroy();
    // Not events.once: it would reject with the stream's error, and a failed read was reported already.
    if (!file.closed) await new Promise<void>((resolve) => file.once('close', () => resolve()));
  }

  /**
   * Decodes the kept bytes after the first line of `bad`, a record whose bad quote ran on, again
   * with a decoder of the records from there (numbered on from `bad`, as a read resumed there
   * would give them), which then reads on. False, and nothing changed, when no line follows.
   * They are fed again in small pieces, so that a file with a bad quote on every line is not
   * decoded again whole after each of them.
   */
  #rereadAfter(bad: Extract<InputItem, { kind: 'error' }>): boolean {
    if (!(this.#decoder instanceof CsvDecoder) || (this.#kept[0]?.offset ?? Infinity) > bad.offset) return false;
    const end = lineEndAfter(this.#kept, bad.offset);
    if (end === undefined || end.next >= this.#fed) return false;
    const { next, breaks } = end;
    this.#decoder = this.#decoder.continueAt({ offset: next, rowNumber: bad.rowNumber + 1, line: bad.line + breaks });
    const again: Buffer[] = [];
    for (const { offset, bytes, endsChunk } of this.#kept) {
      for (let from = Math.max(0, next - offset); from < bytes.length; from += REREAD_PIECE_BYTES) {
        const piece = bytes.subarray(from, from + REREAD_PIECE_BYTES);
        if (from + REREAD_PIECE_BYTES < bytes.length || !endsChunk) this.#midChunk.add(piece);
        again.push(piece);
      }
    }
    this.#pending = [...again, ...this.#pending];
    this.#kept = [];
    this.#keptBytes = 0;
    this.#fed = next;
    this.#ended = false;
    this.#items = [];
    this.#head = 0;
    return true;
  }

  /**
   * Drops the kept chunks that end before the start of the last of `items`, or of the first whose
   * bad quote ran on (its lines are read again from them); none: keeps all.
   */
  #keepFrom(items: readonly InputItem[]): void {
    const from = (items.find((item) => item.kind === 'error' && item.quoteRanOn === true) ?? items.at(-1))?.offset;
    let drop = 0;
    const kept = this.#kept;
    // No record whose lines are read again is longer than maxRecordBytes (a longer one is cut and
    // reported as such): bytes further back are never needed, also while no item comes (a long
    // line being skipped, blank lines).
    while (drop < kept.length - 1 && this.#keptBytes - (kept[drop]?.bytes.length ?? 0) >= this.#parts.keepBytes) {
      this.#keptBytes -= kept[drop]?.bytes.length ?? 0;
      drop += 1;
    }
    if (from !== undefined) {
      while (drop < kept.length && (kept[drop]?.offset ?? 0) + (kept[drop]?.bytes.length ?? 0) <= from) {
        this.#keptBytes -= kept[drop]?.bytes.length ?? 0;
        drop += 1;
      }
    }
    if (drop > 0) kept.splice(0, drop);
  }

  /** Reads the next chunk (or the end) into the item queue. */
  async #fill(): Promise<void> {
    const items: InputItem[] = [];
    const decoder = this.#decoder;
    const chunk = this.#pending.length > 0 ? this.#pending.shift() : await this.#nextChunk();
    if (this.#closed) return;
    if (chunk === undefined) {
      this.#ended = true;
      decoder.end(items);
    } else {
      const endsChunk = !this.#midChunk.has(chunk);
      if (decoder instanceof CsvDecoder && this.#parts.keepBytes > 0) {
        this.#kept.push({ offset: this.#fed, bytes: chunk, endsChunk });
        this.#keptBytes += chunk.length;
      }
      this.#fed += chunk.length;
      decoder.write(chunk, items, endsChunk);
    }
    this.#keepFrom(items);
    this.#items = items;
    this.#head = 0;
  }

  /** The next chunk of the source, or undefined at its end. */
  async #nextChunk(): Promise<Buffer | undefined> {
    let next: IteratorResult<Buffer>;
    try {
      next = await this.#chunks.next();
    } catch (error) {
      throw this.#readError(error);
    }
    return next.done === true ? undefined : next.value;
  }

  #readError(error: unknown): QuoteBatchError {
    const { path, gzip } = this.#parts;
    const reason = error instanceof Error ? error.message : String(error);
    const verb = gzip && !(error instanceof Error && 'syscall' in error) ? 'decompress' : 'read';
    return new QuoteBatchError('E_INPUT', `cannot ${verb} input file ${path}: ${reason} (after ${this.bytesRead} bytes)`, {
      cause: error,
    });
  }
}

/** The message of a record whose bad quote ran on, once the lines after its first are read again. */
function readAlone(message: string): string {
  const alone = 'read as its first line alone, the lines after it as rows';
  return message.includes(RUNS_TO_END) ? message.replace(RUNS_TO_END, alone) : `${message}; ${alone}`;
}

/**
 * The offset just past the first line end (LF, CR LF, a lone CR, or CR CR LF) at or after byte
 * `offset`, in `chunks` (consecutive pieces of the file with their offsets); undefined when none
 * ends there.
 */
function lineEndAfter(chunks: readonly { offset: number; bytes: Buffer }[], offset: number): { next: number; breaks: number } | undefined {
  /** A CR seen (it may go on as CR LF or CR CR LF): where it is, and how many CRs. */
  let crAt = -1;
  let crs = 0;
  for (const { offset: base, bytes } of chunks) {
    for (let i = Math.max(0, offset - base); i < bytes.length; i += 1) {
      const byte = bytes[i];
      if (crAt === -1) {
        if (byte === LF) return { next: base + i + 1, breaks: 1 };
        if (byte === CR) {
          crAt = base + i;
          crs = 1;
        }
      } else if (byte === LF) {
        // CR LF is one line break; CR CR LF two (a lone CR, then CR LF), as the line count has them.
        return { next: crAt + crs + 1, breaks: crs };
      } else if (byte === CR && crs === 1) {
        crs = 2;
      } else {
        return { next: crAt + 1, breaks: 1 };
      }
    }
  }
  return crAt === -1 ? undefined : { next: crAt + 1, breaks: 1 };
}
