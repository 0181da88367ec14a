import { isUtf8 } from 'node:buffer';
import type { Decoder } from './_decoder.js';
import { DEFAULT_MAX_DEPTH, type InputItem, type InputStart } from './types.js';

const LF = 0x0a;
const CR = 0x0d;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/** Options of {@link NdjsonDecoder}. */
export interface NdjsonDecoderOptions {
  maxRecordBytes: number;
  /** Deepest nesting of objects and arrays accepted (default DEFAULT_MAX_DEPTH). */
  maxDepth?: number;
  /** Fed the file from this line on (an item of an earlier read), not from its first byte. */
  start?: InputStart;
}

/**
 * Reads NDJSON / JSON Lines: one JSON object per line (LF or CRLF). Blank lines are skipped and
 * not numbered. A line that is not valid UTF-8, not valid JSON, not an object, nested deeper than
 * `maxDepth` or longer than `maxRecordBytes` is an error item; an over-long line is dropped as soon as it passes the limit
 * and reading resumes after its line break, so it is never held whole.
 */
export class NdjsonDecoder implements Decoder {
  readonly columns = null;
  readonly #max: number;
  readonly #maxDepth: number;
  /** Pieces of the line that started in an earlier chunk. */
  #parts: Buffer[] = [];
  #partsLength = 0;
  /** Physical line number of the line being read, and the offset where it starts. */
  #line = 1;
  #lineStart = 0;
  /** Offset of the next chunk's first byte. */
  #chunkStart = 0;
  #rowNumber = 0;
  #skipping = false;

  constructor(options: NdjsonDecoderOptions) {
    this.#max = options.maxRecordBytes;
    this.#maxDepth = options.maxDepth ?? DEFAULT_MAX_DEPTH;
    const start = options.start;
    if (start !== undefined) {
      this.#line = start.line;
      this.#lineStart = start.offset;
      this.#chunkStart = start.offset;
      this.#rowNumber = start.rowNumber - 1;
    }
  }

  write(chunk: Buffer, out: InputItem[]): void {
    const chunkStart = this.#chunkStart;
    this.#chunkStart += chunk.length;
    let position = 0;
    while (position < chunk.length) {
      const newline = chunk.indexOf(LF, position);
      if (this.#skipping) {
        if (newline === -1) return;
        this.#skipping = false;
        this.#line += 1;
        position = newline + 1;
        this.#lineStart = chunkStart + position;
        continue;
      }
      if (newline === -1) {
        this.#partsLength += chunk.length - position;
        // Only certain once the line is too long without a BOM and a CR that may end it.
        const uncounted = (this.#line === 1 ? 3 : 0) + (chunk[chunk.length - 1] === CR ? 1 : 0);
        if (this.#partsLength - uncounted > this.#max) {
          this.#parts = [];
          this.#partsLength = 0;
          this.#skipping = true;
          this.#pushError(out, this.#line, `record longer than ${this.#max} bytes`);
        } else {
          this.#parts.push(chunk.subarray(position));
        }
        return;
      }
      let line = chunk.subarray(position, newline);
      if (this.#parts.length > 0) {
        this.#parts.push(line);
        line = Buffer.concat(this.#parts, this.#partsLength + line.length);
        this.#parts = [];
        this.#partsLength = 0;
      }
      this.#readLine(line, out);
      this.#line += 1;
      position = newline + 1;
      this.#lineStart = chunkStart + position;
    }
  }

  end(out: InputItem[]): void {
    if (this.#parts.length > 0) {
      const line = Buffer.concat(this.#parts, this.#partsLength);
      this.#parts = [];
      this.#partsLength = 0;
      this.#readLine(line, out);
    }
  }

  #readLine(bytes: Buffer, out: InputItem[]): void {
    let start = 0;
    let end = bytes.length;
    if (this.#line === 1 && end >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) start = 3;
    if (end > start && bytes[end - 1] === CR) end -= 1;
    if (isBlank(bytes, start, end)) return;
    const line = this.#line;
    if (end - start > this.#max) {
      this.#pushError(out, line, `record longer than ${this.#max} bytes`);
      return;
    }
    const slice = bytes.subarray(start, end);
    if (!isUtf8(slice)) {
      this.#pushError(out, line, 'invalid UTF-8');
      return;
    }
    if (nestsDeeperThan(slice, this.#maxDepth)) {
      this.#pushError(out, line, `nested deeper than ${this.#maxDepth} levels`);
      return;
    }
    let value: unknown;
    try {
      value = JSON.parse(slice.toString('utf8'));
    } catch (error) {
      this.#pushError(out, line, `invalid JSON: ${describeJsonError(error)}`);
      return;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      this.#pushError(out, line, `JSON line is not an object (got ${describeJsonType(value)})`);
      return;
    }
    const offset = this.#lineStart;
    out.push({ kind: 'record', rowNumber: ++this.#rowNumber, line, offset, record: value as Record<string, unknown> });
  }

  #pushError(out: InputItem[], line: number, reason: string): void {
    const offset = this.#lineStart;
    out.push({ kind: 'error', rowNumber: ++this.#rowNumber, line, offset, message: `line ${line}: ${reason}` });
  }
}

/** True when JSON text nests objects and arrays deeper than `max` (brackets in strings do not count). */
export function nestsDeeperThan(bytes: Buffer, max: number): boolean {
  // Fast path for the usual record: it cannot nest deeper than it has opening brackets.
  let opens = 0;
  for (let at = bytes.indexOf(OPEN_BRACE); at !== -1 && opens <= max; at = bytes.indexOf(OPEN_BRACE, at + 1)) opens += 1;
  for (let at = bytes.indexOf(OPEN_BRACKET); at !== -1 && opens <= max; at = bytes.indexOf(OPEN_BRACKET, at + 1)) opens += 1;
  if (opens <= max) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i += 1) {
    const byte = bytes[i];
    if (inString) {
      if (byte === BACKSLASH) i += 1;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) {
      inString = true;
    } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      depth += 1;
      if (depth > max) return true;
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
      depth -= 1;
    }
  }
  return false;
}

function isBlank(bytes: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i += 1) {
    const byte = bytes[i];
    if (byte !== 0x20 && byte !== 0x09 && byte !== CR) return false;
  }
  return true;
}

/** JSON.parse's message without the excerpt of the line V8 adds (it would copy lead data into logs). */
function describeJsonError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/, ".*" is not valid JSON$/s, '');
}

function describeJsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}
