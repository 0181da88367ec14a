/**
 * The process edge: argv, help, exit codes, one-line errors, signals and a closed standard
 * output. Each command lives in `src/commands/<name>.ts` and declares its own flags; this file
 * binds them to the process. With `--json-log` every line this process writes to standard error
 * is one JSON object (pino), the edge's own messages included.
 */
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { exitCodeOfError, isQuoteBatchError, QuoteBatchError } from './errors.js';
import type { Io } from './io.js';
import { createLogger, type Logger, type LogFields } from './log.js';
import type { CommandContext } from './commands/context.js';
import { registerCommands } from './commands/index.js';
import { decideSignal, type StopSignal } from './signals.js';
import { TOOL_VERSION } from './version.js';

/**
 * Commands that watch `ctx.stop` and end cleanly on it (a summary, exit 3; the sandbox exits 0).
 * Every other command keeps the signals' default action: it ends at once, even inside a long
 * synchronous loop that would never let a handler run. Its writes are atomic or read-only.
 */
const GRACEFUL_COMMANDS: ReadonlySet<string> = new Set(['run', 'check', 'preview', 'init', 'agents', 'sandbox']);

/** Exit code of an internal error: nothing guarantees the job finished, so cron should run again after the fix. */
const INTERNAL_ERROR_EXIT = 3;

export async function main(argv: readonly string[]): Promise<void> {
  const jsonLog = wantsJsonLog(argv.slice(2));
  const controller = new AbortController();
  const output = bindOutput(controller);
  const { io } = output;
  const log = createLogger(io, { json: jsonLog });
  const edge = new Edge(io, log, jsonLog);

  process.on('uncaughtException', (error) => {
    edge.internalError(error);
    process.exit(INTERNAL_ERROR_EXIT);
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
        edge.notice('warn', `${signal}: finishing the work in hand, then stopping (press Ctrl-C again to exit at once)`, { event: 'signal', signal }, '\n');
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

  let exitCode = 0;
  const ctx: CommandContext = {
    io,
    stop: controller.signal,
    jsonLog,
    createLogger: (options = {}) => createLogger(io, { json: jsonLog, quiet: options.quiet === true }),
    setExitCode: (code) => {
      exitCode = code;
    },
  };

  const program = new Command();
  program
    .name('quote-batch')
    .description('Send a lead export to the partner quote API: mapped, validated, rate-limited, resumable.')
    .version(TOOL_VERSION, '-V, --version')
    .showHelpAfterError('(run with --help for usage)')
    .configureOutput({ writeOut: io.out, writeErr: (text) => edge.commanderMessage(text) })
    .exitOverride()
    .hook('preAction', (_program, command) => {
      if (!GRACEFUL_COMMANDS.has(command.name())) return;
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
    });
  registerCommands(program, ctx);

  try {
    await program.parseAsync([...argv]);
  } catch (error) {
    exitCode = edge.exitCodeFor(error);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  process.exitCode = output.closed() ? 0 : exitCode;
}

/** `--json-log` anywhere before `--`: known before commander parses, so that its errors are JSON too. */
function wantsJsonLog(args: readonly string[]): boolean {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).includes('--json-log');
}

/**
 * The process streams as an {@link Io}. A reader that closes standard output (`… | head`) ends
 * the command quietly: the next write throws `E_OUTPUT_CLOSED` (exit 0, nothing printed), the
 * stop signal is raised for commands that watch it, and the exit code becomes 0.
 */
function bindOutput(controller: AbortController): { io: Io; closed: () => boolean } {
  let stdoutClosed = false;
  let stderrClosed = false;
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (!stdoutClosed && error.code !== 'EPIPE' && error.code !== 'ERR_STREAM_DESTROYED' && !stderrClosed) {
      process.stderr.write(`error: cannot write to standard output: ${error.code ?? error.message}\n`);
    }
    stdoutClosed = true;
    controller.abort('output closed');
    process.exitCode = error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED' ? 0 : 3;
  });
  process.stderr.on('error', () => {
    stderrClosed = true;
  });
  const io: Io = {
    out: (text) => {
      if (stdoutClosed) throw new QuoteBatchError('E_OUTPUT_CLOSED', 'standard output was closed by its reader');
      process.stdout.write(text);
    },
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
  return { io, closed: () => stdoutClosed };
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
  error(error: QuoteBatchError): void {
    const exitCode = exitCodeOfError(error.code);
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

  /** What commander prints (usage errors, their help hint): each line one JSON line with --json-log. */
  commanderMessage(text: string): void {
    if (!this.json) {
      this.io.err(text);
      return;
    }
    for (const line of text.split('\n')) if (line.trim() !== '') this.log.error(line.trim(), { event: 'usage_error', exit_code: 2 });
  }

  exitCodeFor(error: unknown): number {
    if (error instanceof CommanderError) {
      // --help and --version exit through here with code 0; commander already printed the message.
      return error.exitCode === 0 ? 0 : 2;
    }
    if (error instanceof InvalidArgumentError) {
      this.error(new QuoteBatchError('E_USAGE', error.message));
      return 2;
    }
    if (isQuoteBatchError(error)) {
      if (error.code !== 'E_OUTPUT_CLOSED') this.error(error);
      return exitCodeOfError(error.code);
    }
    this.internalError(error);
    return INTERNAL_ERROR_EXIT;
  }
}
