const LF = 0x0a;
const CR = 0x0d;

/**
 * Counts the line breaks before positions of a byte stream fed chunk by chunk. A line break is
 * LF, CRLF or a lone CR, so line numbers are what an editor shows whatever the line ends (csv-parse's
 * own counter counts a CRLF inside a quoted field twice). Queries must come in non-decreasing
 * order; breaks already passed are forgotten, so memory stays bounded by the chunks not yet passed.
 */
export class LineBreakIndex {
  /**
   * The line breaks not yet passed, each as `2 × offset + 1` for a lone CR, `2 × offset` for an LF
   * (of CRLF, the LF's): whether a break is a lone CR tells a CR CR LF line end from two lines.
   */
  readonly #offsets: number[] = [];
  #head = 0;
  #dropped: number;
  /** A CR that ended the last chunk: a break unless the next chunk starts with LF. */
  #trailingCr = -1;

  /** `breaksBefore`: line breaks before the first byte fed (a read that starts mid-file). */
  constructor(breaksBefore = 0) {
    this.#dropped = breaksBefore;
  }

  /** Records the line breaks of `chunk`, whose first byte is at absolute offset `start`. */
  add(chunk: Buffer, start: number): void {
    const offsets = this.#offsets;
    if (this.#trailingCr !== -1) {
      if (chunk[0] !== LF) offsets.push(2 * this.#trailingCr + 1);
      this.#trailingCr = -1;
    }
    let lf = chunk.indexOf(LF);
    let cr = chunk.indexOf(CR);
    while (lf !== -1 || cr !== -1) {
      if (cr !== -1 && (lf === -1 || cr < lf)) {
        // A CR followed by LF is counted with the LF.
        if (cr + 1 === chunk.length) this.#trailingCr = start + cr;
        else if (chunk[cr + 1] !== LF) offsets.push(2 * (start + cr) + 1);
        cr = chunk.indexOf(CR, cr + 1);
      } else {
        offsets.push(2 * (start + lf));
        lf = chunk.indexOf(LF, lf + 1);
      }
    }
  }

  /** Ends the stream: a CR that ended it is a line break. */
  finish(): void {
    if (this.#trailingCr !== -1) this.#offsets.push(2 * this.#trailingCr + 1);
    this.#trailingCr = -1;
  }

  /**
   * Offset of line break number `index` (0-based, counted from the start of the stream; of a CRLF,
   * the LF's), or undefined when it is not known: forgotten, or not fed yet.
   */
  offsetOf(index: number): number | undefined {
    const code = index < this.#dropped ? undefined : this.#offsets[index - this.#dropped];
    return code === undefined ? undefined : Math.floor(code / 2);
  }

  /** True when line break number `index` is a lone CR; undefined when it is not known. */
  isLoneCr(index: number): boolean | undefined {
    const code = index < this.#dropped ? undefined : this.#offsets[index - this.#dropped];
    return code === undefined ? undefined : code % 2 === 1;
  }

  /** Number of line breaks at offsets below `position`. */
  countBefore(position: number): number {
    const offsets = this.#offsets;
    let head = this.#head;
    // 2 × offset (+ 1) < 2 × position exactly when offset < position.
    const below = 2 * position;
    while (head < offsets.length && (offsets[head] as number) < below) head += 1;
    if (head > 4096 && head * 2 > offsets.length) {
      offsets.splice(0, head);
      this.#dropped += head;
      head = 0;
    }
    this.#head = head;
    return this.#dropped + head;
  }
}
