import { InvalidArgumentError, Option, type Command } from 'commander';
import { formatDuration, parseDuration } from '../duration.js';
import type { Io } from '../io.js';
import type { Logger } from '../log.js';
import { loadConfig, resolveLedger } from '../config/index.js';
import { displayTarget } from '../ledger/index.js';

/**
 * What `cli.ts` hands to each command. A command declares its own flags on `program`
 * (see `register*` functions in this folder) and reports its exit code through `setExitCode`:
 * only `cli.ts` touches `process.exitCode`.
 */
export interface CommandContext {
  readonly io: Io;
  /**
   * Aborted on the first Ctrl-C / SIGTERM (for the commands cli.ts lists as graceful; the others
   * end at once), and when the reader closes standard output.
   */
  readonly stop: AbortSignal;
  /** True when the command line has `--json-log`: every line on standard error must be JSON. */
  readonly jsonLog: boolean;
  /**
   * The command's logger on standard error, in the edge's mode: JSON lines (pino) with
   * `--json-log`, plain sentences otherwise (`quiet`: no info lines).
   */
  createLogger(options?: { quiet?: boolean }): Logger;
  /**
   * Records the command's exit code (0 ok, 1 data to fix, 2 usage, 3 not completed, 4 job locked).
   * `run`, `resolve` and `prune` set it as soon as their outcome is recorded, before printing it:
   * a reader that then closes standard output does not change it.
   */
  setExitCode(code: number): void;
  /**
   * Names the ledger the command works on, so that a SQLite failure on it (busy, read-only, disk
   * full, I/O error) is reported in one line naming the file, not as an internal error.
   */
  noteLedger(path: string): void;
  /** Says that requests may have left for the partner: a failure from then on exits 3 (run again), not 2. */
  noteRequestsSent(): void;
}

export type RegisterCommand = (program: Command, ctx: CommandContext) => void;

/** Parses a non-negative integer flag value; throws a usage error naming the flag. */
export function parseCount(flag: string): (value: string) => number {
  return (value: string) => {
    if (!/^\d+$/.test(value.trim())) throw new InvalidArgumentError(`${flag} expects a non-negative integer, got "${value}"`);
    return Number(value);
  };
}

/** Parses a number in [min, max] (an integer when `integer`); throws a usage error naming the flag. */
export function parseNumberIn(flag: string, min: number, max: number, integer = false): (value: string) => number {
  return (value: string) => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || n < min || n > max || (integer && !Number.isInteger(n))) {
      const what = integer ? 'an integer' : 'a number';
      const range = max >= Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`;
      throw new InvalidArgumentError(`${flag} expects ${what} ${range}, got "${value}"`);
    }
    return n;
  };
}

/**
 * A commander parser for a duration flag (see {@link parseDuration}) from `minMs` to `maxMs`;
 * throws a usage error naming the flag.
 */
export function parseDurationFlag(flag: string, minMs: number, maxMs: number): (value: string) => number {
  return (value: string) => {
    const ms = parseDuration(value);
    if (ms === undefined || ms < minMs) {
      throw new InvalidArgumentError(`${flag} expects a duration such as 90s, 15m, 2h or 30d (a bare number is seconds), got "${value}"`);
    }
    if (ms > maxMs) throw new InvalidArgumentError(`${flag} expects a duration of at most ${formatDuration(maxMs)}, got "${value}"`);
    return ms;
  };
}

export { parseDuration } from '../duration.js';

/**
 * `--json-log`, the same on every command a nightly script may run (cron, CI): every line the
 * command writes on standard error is then one JSON object (README, --json-log). The edge reads it from
 * the command line before commander does (`ctx.jsonLog`); declaring it makes it a known option.
 */
export function jsonLogOption(): Option {
  return new Option('--json-log', 'machine-readable JSON log lines on stderr');
}

/**
 * The ledger a command works on (`--ledger`, else the config's, else ./quote-batch.db), named to
 * the edge at once (`noteLedger`), so that a SQLite failure on it is one line naming the file.
 */
export function ledgerPathOf(ctx: CommandContext, flag: string | undefined): string {
  const path = resolveLedger(ctx.io.cwd, flag, ctx.io.env, loadConfig(undefined, ctx.io.cwd).file.defaults ?? {});
  ctx.noteLedger(displayTarget(path));
  return path;
}
