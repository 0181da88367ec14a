/**
 * The row keys seen so far in a file, for `check` to find repeated keys as the run would (it
 * records a repeat `duplicate` and sends only the first). A Set of the keys themselves would cost
 * about 50 bytes a row; this keeps a 64-bit fingerprint and the first row number of each key in
 * typed arrays (12 bytes a slot), so a million-row file costs about 24 MB. Two different keys
 * share a fingerprint with odds of about n² / 2⁶⁵ (3 in a million for ten million rows).
 */
export class RowKeySet {
  #mask = 1023;
  #hi = new Uint32Array(1024);
  #lo = new Uint32Array(1024);
  /** First row of the key in the slot; 0: the slot is free (rows count from 1). */
  #row = new Uint32Array(1024);
  #size = 0;

  /** Adds `key` first seen in `row`; returns the row that had it first, or 0 when it is new. */
  add(key: string, row: number): number {
    const lo = hash(key, 0x811c9dc5, 0x01000193);
    const hi = hash(key, 0x9747b28c, 0x5bd1e995);
    for (let slot = lo & this.#mask; ; slot = (slot + 1) & this.#mask) {
      const first = this.#row[slot] ?? 0;
      if (first === 0) {
        this.#hi[slot] = hi;
        this.#lo[slot] = lo;
        this.#row[slot] = row;
        this.#size += 1;
        if (this.#size * 2 > this.#mask) this.#grow();
        return 0;
      }
      if (this.#lo[slot] === lo && this.#hi[slot] === hi) return first;
    }
  }

  get size(): number {
    return this.#size;
  }

  #grow(): void {
    const [oldHi, oldLo, oldRow] = [this.#hi, this.#lo, this.#row];
    const capacity = (this.#mask + 1) * 2;
    this.#mask = capacity - 1;
    this.#hi = new Uint32Array(capacity);
    this.#lo = new Uint32Array(capacity);
    this.#row = new Uint32Array(capacity);
    for (let i = 0; i < oldRow.length; i += 1) {
      const row = oldRow[i] ?? 0;
      if (row === 0) continue;
      const lo = oldLo[i] ?? 0;
      let slot = lo & this.#mask;
      while ((this.#row[slot] ?? 0) !== 0) slot = (slot + 1) & this.#mask;
      this.#hi[slot] = oldHi[i] ?? 0;
      this.#lo[slot] = lo;
      this.#row[slot] = row;
    }
  }
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
