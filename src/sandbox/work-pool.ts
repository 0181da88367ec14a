/**
 * The partner's rating engine: at most `limit` requests worked on at once, the rest waiting in a
 * bounded FIFO queue. So, as with a real partner, latency grows with load once the engine is full.
 */

/** How busy the engine is, for `GET /__sandbox/stats`. */
export interface CapacityStats {
  /** Requests being worked on now. */
  busy: number;
  /** Requests waiting for a worker now. */
  queued: number;
  /** The most worked on at once since start or reset (with no `capacity`, the partner's concurrency). */
  peakBusy: number;
  /** The longest the queue was since start or reset. */
  peakQueued: number;
}

export class WorkPool {
  private busy = 0;
  private peakBusy = 0;
  private peakQueued = 0;
  // A FIFO as an array and the index of its head: Array#shift is linear in the queue's length.
  private queue: ((() => void) | undefined)[] = [];
  private head = 0;
  private draining = false;

  /**
   * @param limit workers (Infinity = no limit)
   * @param queueLimit how many may wait
   */
  constructor(private limit: number, private queueLimit: number) {}

  /**
   * Runs `job` now when a worker is free, else queues it. Returns false, without queueing, when
   * the queue is full. Whoever runs the job calls {@link WorkPool.release} once its work is over.
   */
  submit(job: () => void): boolean {
    if (this.busy < this.limit) {
      this.start(job);
      return true;
    }
    if (this.queued() >= this.queueLimit) return false;
    this.queue.push(job);
    if (this.queued() > this.peakQueued) this.peakQueued = this.queued();
    return true;
  }

  /** Frees a worker and hands it to the longest-waiting job. */
  release(): void {
    this.busy -= 1;
    this.drain();
  }

  /** Changes the limits at run time; a raised limit starts waiting jobs at once. */
  resize(limit: number, queueLimit: number): void {
    this.limit = limit;
    this.queueLimit = queueLimit;
    this.drain();
  }

  /** Drops waiting jobs (the sandbox is closing: their connections are being destroyed). */
  clear(): void {
    this.queue = [];
    this.head = 0;
  }

  /** Peaks start over from the present load. */
  resetPeaks(): void {
    this.peakBusy = this.busy;
    this.peakQueued = this.queued();
  }

  stats(): CapacityStats {
    return { busy: this.busy, queued: this.queued(), peakBusy: this.peakBusy, peakQueued: this.peakQueued };
  }

  private queued(): number {
    return this.queue.length - this.head;
  }

  private dequeue(): () => void {
    const job = this.queue[this.head]!;
    this.queue[this.head] = undefined;
    this.head += 1;
    // Drop the consumed front now and then, so the array does not grow for ever.
    if (this.head >= 1024 && this.head * 2 >= this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    return job;
  }

  private start(job: () => void): void {
    this.busy += 1;
    if (this.busy > this.peakBusy) this.peakBusy = this.busy;
    job();
  }

  private drain(): void {
    // A job that finishes at once releases its worker from inside start(): the outer loop goes on
    // instead of recursing once per queued job.
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.busy < this.limit && this.queued() > 0) this.start(this.dequeue());
    } finally {
      this.draining = false;
    }
  }
}
