/**
 * Where a command writes. Only `cli.ts` binds this to the real process streams; commands receive
 * it, so that they stay testable and never touch `process.stdout` themselves.
 */
export interface Io {
  /** Writes to standard output (the command's result). */
  out(text: string): void;
  /**
   * Writes bytes to standard output as they are (`export --format source` copies the input's own
   * bytes, valid UTF-8 or not). Optional for other hosts of the commands: {@link outputBytes}
   * falls back to `out`, decoding as UTF-8.
   */
  outBytes?(bytes: Uint8Array): void;
  /**
   * Resolves once standard output has taken what was written (its buffer below the high-water mark:
   * a reader slower than the command holds it back, so a long export stays within memory); rejects
   * with `E_OUTPUT_CLOSED` once the reader has closed it. Optional: without it, writes are not waited for.
   */
  drain?(): Promise<void>;
  /** Writes to standard error (progress, logs, warnings, errors). */
  err(text: string): void;
  /** True when standard error is a terminal (progress bar instead of progress lines). */
  readonly stderrIsTTY: boolean;
  /** True when standard output is a terminal. */
  readonly stdoutIsTTY: boolean;
  /** The process environment (the API key is read from here, never from a flag). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The real standard error stream when it is a terminal (for the progress bar), else undefined. */
  readonly stderrTTYStream?: NodeJS.WriteStream | undefined;
  /** The working directory relative paths are resolved against. */
  readonly cwd: string;
  /**
   * Width of the terminal standard output is, in columns; undefined when it is not a terminal
   * (`cli.ts`: `process.stdout.isTTY === true ? process.stdout.columns : undefined`).
   */
  readonly stdoutColumns?: number | undefined;
}

/**
 * How wide text for standard output may be: the terminal's width, else `COLUMNS` from the
 * environment (as shells export it), else undefined (the caller's default).
 */
export function outputColumns(io: Io): number | undefined {
  if (io.stdoutColumns !== undefined && io.stdoutColumns > 0) return io.stdoutColumns;
  const columns = Number(io.env.COLUMNS);
  return Number.isInteger(columns) && columns > 0 ? columns : undefined;
}

/**
 * Writes bytes to standard output through `io.outBytes`; an `Io` without it gets them decoded as
 * UTF-8 (a stream decoder, so a character split between two writes stays whole). Each write is
 * waited for ({@link Io.drain}). Call `end()` last.
 */
export function outputBytes(io: Io): { write(bytes: Uint8Array): Promise<void>; end(): void } {
  const { outBytes } = io;
  if (outBytes !== undefined) {
    return {
      write: async (bytes) => {
        outBytes(bytes);
        await io.drain?.();
      },
      end: () => {},
    };
  }
  const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  const text = outputText(io);
  return { write: (bytes) => text(decoder.decode(bytes, { stream: true })), end: () => io.out(decoder.decode()) };
}

/** Writes text to standard output through `io.out`, each write waited for ({@link Io.drain}). */
export function outputText(io: Io): (text: string) => Promise<void> {
  return async (text) => {
    io.out(text);
    await io.drain?.();
  };
}
