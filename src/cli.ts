/**
 * The process edge: argv, help, exit codes, one-line errors, signals and a closed standard
 * output. Each command lives in `src/commands/<name>.ts` and declares its own flags; this file
 * binds them to the process. With `--json-log` every line this process writes to standard error
 * is one JSON object (pino), the edge's own messages included.
 */
import { once } from 'node:events';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { exitCodeOfError, isQuoteBatchError, QuoteBatchError } from './errors.js';
import type { Io } from './io.js';
import { createLogger, type Logger, type LogFields } from './log.js';
import type { CommandContext } from './commands/context.js';
import { registerCommands } from './commands/index.js';
import { ledgerFault } from './ledger/faults.js';
import { decideSignal, type StopSignal } from './signals.js';
import { TOOL_VERSION } from './version.js';

/**
 * Commands that watch `ctx.stop` and end cleanly on it (a summary, exit 3; the sandbox exits 0).
 * Every other command keeps the signals' default action: it ends at once, even inside a long
 * synchronous loop that would never let a handler run. Its writes are atomic or read-only.
 */
const GRACEFUL_COMMANDS: ReadonlySet<string> = new Set(['run', 'check', 'preview', 'init', 'agents', 'sandbox']);

/**
 * Commands whose exit code tells cron what became of a job. Once such a command has recorded its
 * outcome, a reader that closes standard output (`run … | true`) does not change its exit code;
 * every other command only produces output, and then ends quietly with exit 0.
 */
const OUTCOME_COMMANDS: ReadonlySet<string> = new Set(['run', 'resolve', 'prune']);

/** Exit code of an internal error: nothing guarantees the job finished, so cron should run again after the fix. */
const INTERNAL_ERROR_EXIT = 3;

export async function main(argv: readonly string[]): Promise<void> {
  const jsonLog = wantsJsonLog(argv.slice(2));
  const controller = new AbortController();
  /** What the running command told the edge (see CommandContext); undefined exit code: not set yet. */
  const state: EdgeState = { command: undefined, exitCode: undefined, ledgerPath: undefined, requestsSent: false, finished: false };
  const output = bindOutput(controller, () => {
    if (state.finished) process.exitCode = finalExitCode(state, output);
  });
  const { io } = output;
  const log = createLogger(io, { json: jsonLog });
  const edge = new Edge(io, log, jsonLog);

  process.on('uncaughtException', (error) => {
    process.exit(isOutputClosed(error) ? finalExitCode(state, output) : edge.failure(error, state));
  });
  if (jsonLog) {
    // Node's own warnings would be plain text among the JSON lines.
    process.removeAllListeners('warning');
    process.on('warning', (warning) => log.warn(warning.message, { event: 'node_warning', warning: warning.name }));
  }
  if (process.env.NODE_TLS_REJECT_UNAUTHORIZED === '0') {
    edge.error(
      new QuoteBatchError('E_UNSAFE', 'NODE_TLS_REJECT_UNAUTHORIZED=0 disables TLS verification; quote-batch refuses to run with it.', {
        hint: 'unset NODE_TLS_REJECT_UNAUTHORIZED; the sandbox and loopback base URLs use plain HTTP and need no TLS setting',
      }),
    );
    process.exitCode = 2;
    return;
  }

  let first: { signal: StopSignal; atMs: number } | undefined;
  const onSignal = (signal: StopSignal): void => {
    const atMs = Date.now();
    switch (decideSignal(first, signal, atMs)) {
      case 'stop':
        first = { signal, atMs };
        // A supervisor's SIGTERM has no Ctrl-C to press. A SIGTERM again within 2 s is the same request
        // (see decideSignal): only a later one exits at once.
        edge.notice('warn', `${signal}: finishing the work in hand, then stopping (${signal === 'SIGINT' ? 'press Ctrl-C again' : 'send SIGTERM or SIGINT again, 2 s or more after this one,'} to exit at once)`, { event: 'signal', signal }, '\n');
        controller.abort(signal);
        return;
      case 'repeat':
        edge.notice('info', `${signal} again right away: the same request delivered twice, still stopping`, { event: 'signal', signal, repeat: true });
        return;
      case 'exit':
        edge.notice('error', `${signal} again: exiting now; rows in flight will be marked in_doubt on the next run`, { event: 'signal', signal, exit_code: 3 });
        process.exit(3);
    }
  };

  const ctx: CommandContext = {
    io,
    stop: controller.signal,
    jsonLog,
    createLogger: (options = {}) => createLogger(io, { json: jsonLog, quiet: options.quiet === true }),
    setExitCode: (code) => {
      state.exitCode = code;
    },
    noteLedger: (path) => {
      state.ledgerPath = path;
    },
    noteRequestsSent: () => {
      state.requestsSent = true;
    },
  };

  const program = new Command();
  program
    .name('quote-batch')
    .description('Send a lead export to the partner quote API: mapped, validated, rate-limited, resumable.')
    .version(TOOL_VERSION, '-V, --version')
    // Under --json-log the pointer to --help is the usage error's `hint`, not a line of its own.
    .showHelpAfterError(jsonLog ? false : '(run with --help for usage)')
    .configureOutput({
      writeOut: io.out,
      writeErr: (text) => edge.commanderMessage(text),
      outputError: (text, write) => {
        const masked = maskOptionValues(text);
        if (jsonLog) edge.usageError(masked, usageHint(argv.slice(2), program));
        else write(masked);
      },
    })
    .exitOverride()
    .hook('preAction', (_program, command) => {
      state.command = command.name();
      if (!GRACEFUL_COMMANDS.has(command.name())) return;
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
    });
  registerCommands(program, ctx);

  try {
    await program.parseAsync([...argv]);
  } catch (error) {
    // A closed output after the outcome was recorded keeps the code the command set.
    if (!(isOutputClosed(error) && keepsOwnExitCode(state))) state.exitCode = edge.exitCodeFor(error, state);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  state.finished = true;
  process.exitCode = finalExitCode(state, output);
}

interface EdgeState {
  /** The command being run (commander's name), once known. */
  command: string | undefined;
  /** What the command set, or the edge for the error it ended on. */
  exitCode: number | undefined;
  /** The ledger the command works on, named in a SQLite failure. */
  ledgerPath: string | undefined;
  /** True once requests may have left for the partner: a failure then exits 3, not 2. */
  requestsSent: boolean;
  /** True once `main` has settled the exit code (a later closed-output error settles it again). */
  finished: boolean;
}

function keepsOwnExitCode(state: EdgeState): boolean {
  return state.command !== undefined && OUTCOME_COMMANDS.has(state.command);
}

/**
 * The process's exit code: 3 when standard output failed (not closed: a full disk, an I/O error);
 * when its reader closed it, 0 for a command that only produces output, and for an outcome command
 * the code it set (3 when it never did: its outcome was not recorded); otherwise the command's.
 */
function finalExitCode(state: EdgeState, output: { closed: () => boolean; failed: () => boolean }): number {
  if (output.failed()) return 3;
  if (!output.closed()) return state.exitCode ?? 0;
  return keepsOwnExitCode(state) ? (state.exitCode ?? INTERNAL_ERROR_EXIT) : 0;
}

function isOutputClosed(error: unknown): boolean {
  return isQuoteBatchError(error) && error.code === 'E_OUTPUT_CLOSED';
}

/**
 * An unknown `--option=value` is echoed by commander whole: a guessed `--api-key=…` would put the key
 * on standard error (and, with --json-log, in the log collector). The value is left out.
 */
function maskOptionValues(text: string): string {
  return text.replace(/(--?[A-Za-z][\w-]*)=[^\s'"]*/g, '$1=…');
}

/**
 * Where to read the usage of what was typed: the command's own help when its name came first
 * (commander takes the first word that is not an option as the command; the program has no option
 * that takes a value), else the program's.
 */
function usageHint(args: readonly string[], program: Command): string {
  const word = args.find((arg) => !arg.startsWith('-'));
  const command = program.commands.find((c) => c.name() === word || c.aliases().includes(word ?? ''));
  return `run \`quote-batch ${command === undefined ? '' : `${command.name()} `}--help\` for usage`;
}

/** `--json-log` anywhere before `--`: known before commander parses, so that its errors are JSON too. */
function wantsJsonLog(args: readonly string[]): boolean {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).includes('--json-log');
}

/**
 * The process streams as an {@link Io}. A reader that closes standard output (`… | head`) ends
 * the command quietly: the next write throws `E_OUTPUT_CLOSED` (nothing printed), the stop signal
 * is raised for commands that watch it, and `onClosed` is called (see {@link finalExitCode}).
 */
function bindOutput(controller: AbortController, onClosed: () => void): { io: Io; closed: () => boolean; failed: () => boolean } {
  let stdoutClosed = false;
  let stdoutFailed = false;
  let stderrClosed = false;
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    const closedByReader = error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED';
    if (!stdoutClosed && !closedByReader && !stderrClosed) {
      process.stderr.write(`error: cannot write to standard output: ${error.code ?? error.message}\n`);
    }
    stdoutClosed = true;
    stdoutFailed ||= !closedByReader;
    controller.abort('output closed');
    onClosed();
  });
  process.stderr.on('error', () => {
    stderrClosed = true;
  });
  const closedError = (): QuoteBatchError => new QuoteBatchError('E_OUTPUT_CLOSED', 'standard output was closed by its reader');
  // A write to a closed pipe sets `errored` at once; the 'error' event comes once the command yields.
  const refuseWhenClosed = (): void => {
    if (stdoutClosed || process.stdout.errored !== null) throw closedError();
  };
  const write = (data: string | Uint8Array): void => {
    refuseWhenClosed();
    process.stdout.write(data);
  };
  const drain = async (): Promise<void> => {
    refuseWhenClosed();
    if (!process.stdout.writableNeedDrain) return;
    try {
      // Rejects on the 'error' event (the reader closed the pipe while the command waited).
      await once(process.stdout, 'drain');
    } catch {
      throw closedError();
    }
  };
  const io: Io = {
    out: write,
    outBytes: write,
    drain,
    err: (text) => {
      if (!stderrClosed) process.stderr.write(text);
    },
    stderrIsTTY: process.stderr.isTTY === true,
    stdoutIsTTY: process.stdout.isTTY === true,
    stdoutColumns: process.stdout.isTTY === true ? process.stdout.columns : undefined,
    stderrTTYStream: process.stderr.isTTY === true ? process.stderr : undefined,
    env: process.env,
    cwd: process.cwd(),
  };
  return { io, closed: () => stdoutClosed, failed: () => stdoutFailed };
}

/** How the edge speaks: plain lines (`error: …` / `hint: …`), or JSON lines with `--json-log`. */
class Edge {
  constructor(
    private readonly io: Io,
    private readonly log: Logger,
    private readonly json: boolean,
  ) {}

  /** A line of the edge's own (signals): JSON at `level`, or the plain text. */
  notice(level: 'info' | 'warn' | 'error', message: string, fields: LogFields, plainPrefix = ''): void {
    if (this.json) this.log[level](message, fields);
    else this.io.err(`${plainPrefix}${message}\n`);
  }

  /** A known error: one line naming the thing, and its hint. */
  error(error: QuoteBatchError, exitCode: number = exitCodeOfError(error.code)): void {
    if (this.json) {
      this.log.error(error.message, { event: 'error', code: error.code, hint: error.hint, exit_code: exitCode });
      return;
    }
    this.io.err(`error: ${error.message}\n`);
    if (error.hint !== undefined) this.io.err(`hint: ${error.hint}\n`);
  }

  internalError(error: unknown): void {
    const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
    const message = 'internal error (this is a bug in quote-batch, please report it)';
    if (this.json) this.log.error(message, { event: 'internal_error', exit_code: INTERNAL_ERROR_EXIT, detail });
    else this.io.err(`${message}:\n${detail}\n`);
  }

  /**
   * A usage error found by commander (unknown option, missing argument, bad value), under --json-log:
   * one JSON line with code E_USAGE, the hint and exit code 2. Commander's `error: ` prefix is left
   * out, as in the other error lines.
   */
  usageError(text: string, hint: string): void {
    const message = text.trim().replace(/^error: /, '');
    this.log.error(message, { event: 'usage_error', code: 'E_USAGE', hint, exit_code: exitCodeOfError('E_USAGE') });
  }

  /** What else commander prints on standard error (help asked for in error): each line one JSON line with --json-log. */
  commanderMessage(text: string): void {
    if (!this.json) {
      this.io.err(text);
      return;
    }
    for (const line of text.split('\n')) if (line.trim() !== '') this.log.error(line.trim(), { event: 'usage_error', exit_code: 2 });
  }

  exitCodeFor(error: unknown, state: Pick<EdgeState, 'ledgerPath' | 'requestsSent'>): number {
    if (error instanceof CommanderError) {
      // --help and --version exit through here with code 0; commander already printed the message.
      return error.exitCode === 0 ? 0 : 2;
    }
    if (error instanceof InvalidArgumentError) {
      this.error(new QuoteBatchError('E_USAGE', error.message));
      return 2;
    }
    if (isQuoteBatchError(error) && error.code === 'E_OUTPUT_CLOSED') return exitCodeOfError(error.code);
    return this.failure(error, state);
  }

  /**
   * Reports an error that ends the command and gives its exit code. A SQLite failure of the
   * machine's (ledger busy, read-only, disk full, I/O error) is one line naming the ledger, not a
   * bug. "Nothing was sent" (exit 2) stops being true once requests may have left: then 3.
   */
  failure(error: unknown, state: Pick<EdgeState, 'ledgerPath' | 'requestsSent'>): number {
    const known = isQuoteBatchError(error) ? error : ledgerFault(error, state.ledgerPath);
    if (known === undefined) {
      this.internalError(error);
      return INTERNAL_ERROR_EXIT;
    }
    const code = exitCodeOfError(known.code);
    const exitCode = code === 2 && state.requestsSent ? 3 : code;
    this.error(known, exitCode);
    return exitCode;
  }
}
