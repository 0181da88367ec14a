import { isUtf8 } from 'node:buffer';

/**
 * Finds invalid UTF-8 in a byte stream fed chunk by chunk, as absolute byte offsets, so that a
 * reader can tell which record holds it. Valid chunks (nearly all) cost one native `isUtf8` call;
 * only a chunk that fails it is walked byte by byte.
 */
export class Utf8Scanner {
  /** An incomplete multi-byte sequence at the end of the last chunk, checked with the next one. */
  #carry: Buffer | undefined;
  #carryStart = 0;
  readonly #invalid: number[] = [];
  #head = 0;

  /** Checks `chunk`, whose first byte is at absolute offset `start`. */
  scan(chunk: Buffer, start: number): void {
    let data = chunk;
    let dataStart = start;
    if (this.#carry !== undefined) {
      data = Buffer.concat([this.#carry, chunk]);
      dataStart = this.#carryStart;
      this.#carry = undefined;
    }
    const keep = incompleteTailLength(data);
    const end = data.length - keep;
    if (!isUtf8(data.subarray(0, end))) findInvalid(data, end, dataStart, this.#invalid);
    if (keep > 0) {
      this.#carry = Buffer.from(data.subarray(end));
      this.#carryStart = dataStart + end;
    }
  }

  /** Ends the stream: a sequence still incomplete is invalid. */
  finish(): void {
    if (this.#carry !== undefined) this.#invalid.push(this.#carryStart);
    this.#carry = undefined;
  }

  /** Whether an invalid byte lies in [from, to); forgets every offset before `to`. */
  takeRange(from: number, to: number): boolean {
    const invalid = this.#invalid;
    if (this.#head === invalid.length) return false;
    let found = false;
    let head = this.#head;
    while (head < invalid.length && (invalid[head] as number) < to) {
      if ((invalid[head] as number) >= from) found = true;
      head += 1;
    }
    if (head === invalid.length) {
      invalid.length = 0;
      head = 0;
    }
    this.#head = head;
    return found;
  }
}

/** Length of a multi-byte sequence cut by the end of `data` (0 when the end is not inside one). */
function incompleteTailLength(data: Buffer): number {
  const length = data.length;
  for (let i = length - 1; i >= 0 && i >= length - 3; i -= 1) {
    const byte = data[i] as number;
    if ((byte & 0xc0) === 0x80) continue;
    if (byte < 0xc0) return 0;
    const needed = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : 2;
    return length - i < needed ? length - i : 0;
  }
  return 0;
}

/** Pushes the absolute offset of each invalid sequence in data[0, end) (RFC 3629 rules). */
function findInvalid(data: Buffer, end: number, base: number, out: number[]): void {
  let i = 0;
  while (i < end) {
    const byte = data[i] as number;
    if (byte < 0x80) {
      i += 1;
      continue;
    }
    let needed: number;
    let low = 0x80;
    let high = 0xbf;
    if (byte >= 0xc2 && byte <= 0xdf) needed = 1;
    else if (byte >= 0xe0 && byte <= 0xef) {
      needed = 2;
      if (byte === 0xe0) low = 0xa0;
      else if (byte === 0xed) high = 0x9f; // no UTF-16 surrogates
    } else if (byte >= 0xf0 && byte <= 0xf4) {
      needed = 3;
      if (byte === 0xf0) low = 0x90;
      else if (byte === 0xf4) high = 0x8f; // nothing above U+10FFFF
    } else needed = 0;
    let valid = needed > 0 && i + needed < end;
    for (let k = 1; valid && k <= needed; k += 1) {
      const next = data[i + k] as number;
      valid = k === 1 ? next >= low && next <= high : next >= 0x80 && next <= 0xbf;
    }
    if (valid) i += needed + 1;
    else {
      out.push(base + i);
      i += 1;
    }
  }
}
