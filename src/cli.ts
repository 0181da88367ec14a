/**
 * The process edge: argv, help, exit codes, one-line errors. Each command lives in
 * `src/commands/<name>.ts` and declares its own flags; this file binds them to the process.
 */
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { isQuoteBatchError, USAGE_ERROR_CODES } from './errors.js';
import type { Io } from './io.js';
import type { CommandContext } from './commands/context.js';
import { registerCommands } from './commands/index.js';
import { TOOL_VERSION } from './version.js';

export async function main(argv: readonly string[]): Promise<void> {
  const io: Io = {
    out: (text) => void process.stdout.write(text),
    err: (text) => void process.stderr.write(text),
    stderrIsTTY: process.stderr.isTTY === true,
    stdoutIsTTY: process.stdout.isTTY === true,
    stderrTTYStream: process.stderr.isTTY === true ? process.stderr : undefined,
    env: process.env,
    cwd: process.cwd(),
  };
  if (process.env.NODE_TLS_REJECT_UNAUTHORIZED === '0') {
    io.err('error: NODE_TLS_REJECT_UNAUTHORIZED=0 disables TLS verification; quote-batch refuses to run with it.\n');
    io.err('hint: unset NODE_TLS_REJECT_UNAUTHORIZED; the sandbox and loopback base URLs use plain HTTP and need no TLS setting\n');
    process.exitCode = 2;
    return;
  }

  const controller = new AbortController();
  let interrupts = 0;
  const onSignal = (signal: NodeJS.Signals): void => {
    interrupts += 1;
    if (interrupts === 1) {
      io.err(`\n${signal}: finishing requests in flight, then stopping (press Ctrl-C again to exit at once)\n`);
      controller.abort(signal);
    } else {
      io.err(`${signal} again: exiting now; rows in flight will be marked in_doubt on the next run\n`);
      process.exit(3);
    }
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  let exitCode = 0;
  const ctx: CommandContext = {
    io,
    stop: controller.signal,
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
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    .exitOverride();
  registerCommands(program, ctx);

  try {
    await program.parseAsync([...argv]);
  } catch (error) {
    exitCode = exitCodeFor(error, io);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  process.exitCode = exitCode;
}

function exitCodeFor(error: unknown, io: Io): number {
  if (error instanceof CommanderError) {
    // --help and --version exit through here with code 0; commander already printed the message.
    return error.exitCode === 0 ? 0 : 2;
  }
  if (error instanceof InvalidArgumentError) {
    io.err(`error: ${error.message}\n`);
    return 2;
  }
  if (isQuoteBatchError(error)) {
    io.err(`error: ${error.message}\n`);
    if (error.hint !== undefined) io.err(`hint: ${error.hint}\n`);
    return USAGE_ERROR_CODES.has(error.code) ? 2 : 3;
  }
  const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
  io.err(`internal error (this is a bug in quote-batch, please report it):\n${detail}\n`);
  // Nothing guarantees the job finished: 3 tells cron to run again after the fix.
  return 3;
}
