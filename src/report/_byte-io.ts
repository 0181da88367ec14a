/**
 * Bytes in and out of a source export (`export-source.ts`): a writer that gathers chunks into
 * writes of about 64 KiB, each waited for, and a cursor that reads an input front to back.
 */
import type { Readable } from 'node:stream';
import { QuoteBatchError } from '../errors.js';

/** Bytes gathered before each `write`: few syscalls, bounded memory. */
export const CHUNK_BYTES = 64 * 1024;
const LF = 0x0a;
const CR = 0x0d;

/** Gathers chunks into writes of about {@link CHUNK_BYTES}; `written` waits for the last one taken. */
export class ChunkedWriter {
  #parts: Buffer[] = [];
  #length = 0;
  #writing: Promise<void>[] = [];

  constructor(private readonly write: (chunk: Buffer) => void | Promise<void>) {}

  async written(): Promise<void> {
    const writing = this.#writing;
    this.#writing = [];
    await Promise.all(writing);
  }

  push(bytes: Buffer): void {
    this.#parts.push(bytes);
    this.#length += bytes.length;
    if (this.#length >= CHUNK_BYTES) this.end();
  }

  end(): void {
    if (this.#length === 0) return;
    const writing = this.write(this.#parts.length === 1 ? (this.#parts[0] as Buffer) : Buffer.concat(this.#parts, this.#length));
    if (writing !== undefined) {
      // Awaited by `written`; a rejection before then (the reader gone) is not an unhandled one.
      writing.catch(() => {});
      this.#writing.push(writing);
    }
    this.#parts = [];
    this.#length = 0;
  }
}

/**
 * Reads a byte stream front to back: skip to a position, read up to another or to a line end.
 * Holds only the chunks not consumed yet: a record's worth (at most `limit` bytes) and a chunk.
 */
export class ByteCursor {
  readonly #source: Readable;
  readonly #chunks: AsyncIterator<Buffer>;
  /** Unconsumed chunks, the first from `#head` on; `#position` is the offset of its first unconsumed byte. */
  #buffer: Buffer[] = [];
  #head = 0;
  #available = 0;
  #position = 0;
  #ended = false;

  constructor(source: Readable) {
    this.#source = source;
    this.#chunks = source[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  }

  close(): void {
    this.#source.destroy();
  }

  /** The next `count` bytes (fewer at the end of the input), not consumed. */
  async peek(count: number): Promise<Buffer> {
    while (this.#available < count && (await this.#fill()));
    return Buffer.concat(this.#buffer).subarray(this.#head, this.#head + Math.min(count, this.#available));
  }

  /** Drops bytes up to `offset`, which may not be behind the position. */
  async seek(offset: number): Promise<void> {
    if (offset < this.#position) throw new QuoteBatchError('E_INPUT', `the ledger's record positions go backwards at byte ${offset}`);
    while (this.#position < offset) {
      if (this.#available === 0 && !(await this.#fill())) {
        throw new QuoteBatchError('E_INPUT', `the input ends before byte ${offset}, where the ledger says a row starts`);
      }
      this.#consume(Math.min(this.#available, offset - this.#position));
    }
  }

  /**
   * The bytes from the position up to `end` (the end of the input when undefined), consumed;
   * null (the bytes skipped all the same) when there are more than `limit`.
   */
  async read(end: number | undefined, limit: number): Promise<Buffer | null> {
    if (end !== undefined && end - this.#position > limit) {
      await this.seek(end);
      return null;
    }
    const want = end === undefined ? Number.POSITIVE_INFINITY : end - this.#position;
    while (this.#available < want && this.#available <= limit && (await this.#fill()));
    if (this.#available > limit && end === undefined) {
      while (this.#available > 0 || (await this.#fill())) this.#consume(this.#available);
      return null;
    }
    return this.#take(Math.min(want, this.#available));
  }

  /** One line without its line end, consumed with it (`crlf` when that was CR LF); null bytes past `limit`. */
  async readLine(limit: number): Promise<{ bytes: Buffer | null; crlf: boolean }> {
    let searched = 0;
    let found = -1;
    while (found < 0) {
      found = this.#indexOf(LF, searched);
      if (found >= 0) break;
      searched = this.#available;
      if (searched > limit) {
        // Too long to hold: skip to the line's end.
        for (;;) {
          const lf = this.#indexOf(LF, 0);
          if (lf >= 0) {
            this.#consume(lf + 1);
            return { bytes: null, crlf: false };
          }
          this.#consume(this.#available);
          if (!(await this.#fill())) return { bytes: null, crlf: false };
        }
      }
      if (!(await this.#fill())) break;
    }
    const bytes = this.#take(found < 0 ? this.#available : found);
    if (found >= 0) this.#consume(1);
    const crlf = bytes[bytes.length - 1] === CR;
    return { bytes: crlf ? bytes.subarray(0, -1) : bytes, crlf };
  }

  /**
   * Looks ahead from the position, without consuming, for the first byte at which `stop` returns
   * the length of a line end; the offset after that line end and its length, or undefined when
   * the input ends first or `limit` bytes hold none. Byte by byte: for short texts (a header).
   */
  async scan(stop: (byte: number, next: number | undefined) => number, limit: number): Promise<{ position: number; eol: number } | undefined> {
    for (let offset = 0; offset <= limit; offset += 1) {
      while (this.#available <= offset + 1 && (await this.#fill()));
      if (offset >= this.#available) return undefined;
      const length = stop(this.#byteAt(offset), offset + 1 < this.#available ? this.#byteAt(offset + 1) : undefined);
      if (length > 0) return { position: this.#position + offset + length, eol: length };
    }
    return undefined;
  }

  #byteAt(offset: number): number {
    let i = offset + this.#head;
    for (const chunk of this.#buffer) {
      if (i < chunk.length) return chunk[i] as number;
      i -= chunk.length;
    }
    throw new RangeError(`offset ${offset} is past the buffer`);
  }

  /** Offset (from the position) of the first `byte` at or after `from`, or -1. */
  #indexOf(byte: number, from: number): number {
    let base = -this.#head;
    for (const chunk of this.#buffer) {
      const start = Math.max(0, from - base);
      if (start < chunk.length) {
        const i = chunk.indexOf(byte, start);
        if (i >= 0) return base + i;
      }
      base += chunk.length;
    }
    return -1;
  }

  /** The next `count` bytes (a view when they lie in one chunk), consumed. */
  #take(count: number): Buffer {
    const first = this.#buffer[0];
    if (first !== undefined && this.#head + count <= first.length) {
      const view = first.subarray(this.#head, this.#head + count);
      this.#consume(count);
      return view;
    }
    const parts: Buffer[] = [];
    let left = count;
    while (left > 0) {
      const chunk = this.#buffer[0] as Buffer;
      const take = Math.min(chunk.length - this.#head, left);
      parts.push(chunk.subarray(this.#head, this.#head + take));
      this.#consume(take);
      left -= take;
    }
    return Buffer.concat(parts, count);
  }

  #consume(count: number): void {
    let left = count;
    this.#position += count;
    this.#available -= count;
    while (left > 0) {
      const first = this.#buffer[0] as Buffer;
      const rest = first.length - this.#head;
      if (left < rest) {
        this.#head += left;
        return;
      }
      left -= rest;
      this.#buffer.shift();
      this.#head = 0;
    }
  }

  async #fill(): Promise<boolean> {
    if (this.#ended) return false;
    const next = await this.#chunks.next();
    if (next.done === true) {
      this.#ended = true;
      return false;
    }
    this.#buffer.push(next.value);
    this.#available += next.value.length;
    return true;
  }
}
