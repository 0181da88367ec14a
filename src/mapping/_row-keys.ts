/**
 * The row keys seen so far in a file, for `check` to find repeated keys as the run would (it
 * records a repeat `duplicate` and sends only the first). A Set of the keys themselves would cost
 * about 50 bytes a row; this keeps a 64-bit fingerprint and the first row number of each key in
 * typed arrays: 12 bytes a slot, at most 4 slots for 3 keys, so about 16 MB for a million rows
 * when {@link RowKeySet.reserve} sized the table from the file's size (growing on the way would
 * briefly hold the old table beside the new one). Two different keys share a fingerprint with
 * odds of about n² / 2⁶⁵ (3 in a million for ten million rows).
 */
export class RowKeySet {
  #capacity = 0;
  #lo = new Uint32Array(0);
  #hi = new Uint32Array(0);
  /** First row of the key in the slot; 0: the slot is free (rows count from 1). */
  #row = new Uint32Array(0);
  #size = 0;

  constructor() {
    this.#resize(1024);
  }

  /** Adds `key` first seen in `row` (≥ 1); returns the row that had it first, or 0 when it is new. */
  add(key: string, row: number): number {
    const lo = hash(key, 0x811c9dc5, 0x01000193);
    const hi = hash(key, 0x9747b28c, 0x5bd1e995);
    for (let slot = homeOf(lo, this.#capacity); ; slot = slot + 1 === this.#capacity ? 0 : slot + 1) {
      const first = this.#row[slot] ?? 0;
      if (first === 0) {
        this.#lo[slot] = lo;
        this.#hi[slot] = hi;
        this.#row[slot] = row;
        this.#size += 1;
        if (this.#size > this.#capacity * MAX_LOAD) this.#resize(Math.ceil(this.#capacity * GROWTH));
        return 0;
      }
      if (this.#lo[slot] === lo && this.#hi[slot] === hi) return first;
    }
  }

  /** Sizes the table for about `keys` keys in one step (call it early, with an estimate). */
  reserve(keys: number): void {
    const capacity = Math.ceil(keys / MAX_LOAD);
    if (capacity > this.#capacity) this.#resize(capacity);
  }

  get size(): number {
    return this.#size;
  }

  #resize(capacity: number): void {
    const [lo, hi, row] = [this.#lo, this.#hi, this.#row];
    this.#capacity = capacity;
    this.#lo = new Uint32Array(capacity);
    this.#hi = new Uint32Array(capacity);
    this.#row = new Uint32Array(capacity);
    for (let i = 0; i < row.length; i += 1) {
      const first = row[i] ?? 0;
      if (first === 0) continue;
      const l = lo[i] ?? 0;
      let slot = homeOf(l, capacity);
      while ((this.#row[slot] ?? 0) !== 0) slot = slot + 1 === capacity ? 0 : slot + 1;
      this.#lo[slot] = l;
      this.#hi[slot] = hi[i] ?? 0;
      this.#row[slot] = first;
    }
  }
}

/** Fullest the table gets before it grows (linear probing stays short below it). */
const MAX_LOAD = 0.75;
const GROWTH = 1.5;

/** A slot from a 32-bit hash, for any table size (multiply and shift, not a power-of-two mask). */
function homeOf(hash32: number, capacity: number): number {
  return Math.floor((hash32 / 4294967296) * capacity);
}

/** FNV-1a style over UTF-16 code units (the seed and multiplier make two independent hashes), then a murmur finaliser. */
function hash(text: string, seed: number, multiplier: number): number {
  let h = seed >>> 0;
  for (let i = 0; i < text.length; i += 1) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, multiplier);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
